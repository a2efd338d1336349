"""The metrics endpoint: off unless a port is set, served on its own port, and the worker's
gauges and after-commit counting as a scrape sees them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from gshare.kit import metrics
from gshare.kit.clock import FrozenClock
from gshare.kit.metrics import MetricsServer, serve_metrics
from gshare.kit.settings import Settings
from tests.scrape import metrics_endpoint, scrape, value


@pytest.fixture
def metrics_server() -> Iterator[MetricsServer]:
    with metrics_endpoint() as server:
        yield server


@pytest.fixture
def worker_gauges() -> Iterator[metrics.WorkerGauges]:
    metrics.WORKER_GAUGES.forget()
    yield metrics.WORKER_GAUGES
    metrics.WORKER_GAUGES.forget()


def test_no_endpoint_unless_a_port_is_set(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, data_dir=tmp_path)  # type: ignore[call-arg]
    assert settings.metrics_port == 0
    assert settings.metrics_host == "127.0.0.1"
    assert serve_metrics(settings) is None


def test_a_port_already_taken_stops_the_process_with_one_line(
    metrics_server: MetricsServer, tmp_path: Path
) -> None:
    port = metrics_server.port
    settings = Settings(_env_file=None, data_dir=tmp_path, metrics_port=port)  # type: ignore[call-arg]
    with pytest.raises(SystemExit, match=r"cannot serve metrics on 127\.0\.0\.1:\d+"):
        serve_metrics(settings)


async def test_the_worker_gauges_appear_once_set_and_the_lag_grows_between_ticks(
    metrics_server: MetricsServer, worker_gauges: metrics.WorkerGauges
) -> None:
    gauges = {"gshare_queue_length", "gshare_metering_lag_seconds"}
    assert not gauges & {name for name, _ in await scrape(metrics_server)}

    clock = FrozenClock()
    worker_gauges.queue_walked(3)
    worker_gauges.metered(clock.now() - timedelta(seconds=20), clock)
    seen = await scrape(metrics_server)
    assert value(seen, "gshare_queue_length") == 3
    assert value(seen, "gshare_metering_lag_seconds") == 20

    clock.advance(timedelta(minutes=5))  # metering stopped: the lag keeps growing
    assert value(await scrape(metrics_server), "gshare_metering_lag_seconds") == 320

    worker_gauges.metered(None, clock)  # nothing billed
    assert value(await scrape(metrics_server), "gshare_metering_lag_seconds") == 0


async def test_counted_after_commit_once_and_never_after_a_rollback(
    metrics_server: MetricsServer, sessions
) -> None:
    counter = metrics.ADMISSIONS.labels("request", "placed")
    name, labels = "gshare_admissions_total", {"via": "request", "outcome": "placed"}
    start = value(await scrape(metrics_server), name, **labels)

    async with sessions() as db:
        metrics.count_after_commit(db, counter)
        assert value(await scrape(metrics_server), name, **labels) == start  # not yet
        await db.commit()
    assert value(await scrape(metrics_server), name, **labels) == start + 1

    async with sessions() as db:
        await db.begin()
        metrics.count_after_commit(db, counter)
        await db.rollback()
        await db.commit()  # a later commit of the same session does not count the dropped one
    assert value(await scrape(metrics_server), name, **labels) == start + 1
