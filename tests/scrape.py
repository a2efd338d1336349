"""Scraping the real metrics endpoint in tests: served on a free port, read over HTTP and
parsed with prometheus_client's own parser."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx
from prometheus_client.parser import text_string_to_metric_families

from gshare.devcluster import free_port
from gshare.kit.metrics import MetricsServer, serve_metrics
from gshare.kit.settings import Settings

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@contextmanager
def metrics_endpoint() -> Iterator[MetricsServer]:
    """`serve_metrics` as a process would call it, on a port nothing else uses."""
    settings = Settings(_env_file=None, metrics_port=free_port())  # type: ignore[call-arg]
    server = serve_metrics(settings)
    assert server is not None
    try:
        yield server
    finally:
        server.close()


def parse(text: str) -> Samples:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def scrape(server: MetricsServer) -> Samples:
    # What the page says, however long a loaded machine takes to render it (httpx's default
    # of 5 s is a timing check, and late in a full run the process serves many series).
    async with httpx.AsyncClient(timeout=60) as client:
        response = await client.get(f"http://127.0.0.1:{server.port}/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return parse(response.text)


def value(samples: Samples, name: str, **labels: str) -> float:
    """One sample's value; 0 when the series does not exist (yet)."""
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def label_values(samples: Samples, name: str, label: str) -> set[str]:
    return {dict(labels)[label] for sample, labels in samples if sample == name}
