"""GPU utilization from HAMi's vGPU monitor and the DCGM exporter, as they print it: each
session's reading, the quirks of each source settled, bad text refused with a reason, and the
reader reporting what it read (or why it could not) to the API."""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gshare.clusters.keystore import FileKeyStore, load_or_create
from gshare.devcluster import free_port
from gshare.operator import utilization
from gshare.operator.metrics import (
    MAX_SAMPLES,
    MAX_TEXT_CHARS,
    MetricsError,
    Sample,
    Source,
    parse_dcgm,
    parse_hami,
    utilization_body,
)
from gshare.operator.report import ReportTarget
from gshare.operator.utilization import (
    GpuSessions,
    UtilizationReader,
    configured,
)
from gshare.sessions.models import InteractiveSession
from gshare.sessions.schemas import UtilizationReport
from tests.builders import Builder
from tests.eventually import eventually
from tests.processes import start_api, stop

NAMESPACE = "gshare-sessions"
CARD_A = "GPU-8f6e2b7a-1c3d-4e5f-a6b7-c8d9e0f1a2b3"
CARD_B = "GPU-0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
CARD_ELSEWHERE = "GPU-ffffffff-1111-4222-8333-444444444444"
FRACTIONAL = "3f1c2a4e-8b5d-4c6e-9f0a-1b2c3d4e5f60"
WHOLE = "5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d"
WHOLE_NO_KERNEL = "7c8d9e0f-1a2b-4c3d-9e4f-5a6b7c8d9e0f"
OVERBUSY = "9e0f1a2b-3c4d-4e5f-a6b7-c8d9e0f1a2b3"
NOT_YET = "b1c2d3e4-f5a6-4b7c-8d9e-0f1a2b3c4d5e"
ON_OTHER_NODE = "c2d3e4f5-a6b7-4c8d-9e0f-1a2b3c4d5e6f"
ON_MIG = "d3e4f5a6-b7c8-4d9e-8f0a-1b2c3d4e5f6a"
GIB = 1024**3
UTIL = "hami_container_device_utilization_ratio"
USED = "hami_vgpu_memory_used_bytes"
LIMIT = "hami_vgpu_memory_limit_bytes"
KERNEL = "hami_container_last_kernel_elapsed_seconds"


def _hami_series(name: str, pod: str, container: str, card: str, value: str, **extra: str) -> str:
    labels = {
        "container": container,
        "device_uuid": card,
        "namespace": extra.pop("namespace", NAMESPACE),
        "pod": pod,
        "vdevice_index": extra.pop("vdevice_index", "0"),
        "zone": "vGPU",
        **extra,
    }
    rendered = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return f"{name}{{{rendered}}} {value}"


def _family(name: str, help_text: str, lines: list[str]) -> str:
    return "\n".join([f"# HELP {name} {help_text}", f"# TYPE {name} gauge", *lines])


def hami_text() -> str:
    """A vGPU monitor's page for one node with cards A and B, as client_golang prints it."""
    s = "session-"
    host = [
        f'hami_host_gpu_utilization_ratio{{device_index="{i}",device_type="NVIDIA-NVIDIA A100-SXM4'
        f'-80GB",device_uuid="{card}",node="gpu-node-1",zone="vGPU"}} {util}'
        for i, (card, util) in enumerate([(CARD_A, 71), (CARD_B, 3)])
    ]
    utilization = [
        _hami_series(UTIL, s + FRACTIONAL, "main", CARD_A, "35"),
        _hami_series(UTIL, s + FRACTIONAL, "side", CARD_A, "60"),
        _hami_series(UTIL, s + WHOLE, "main", CARD_B, "0"),
        _hami_series(UTIL, s + OVERBUSY, "main", CARD_A, "250"),
        _hami_series(UTIL, "jupyter-abc", "main", CARD_A, "90"),
        _hami_series(UTIL, s + NOT_YET, "main", CARD_A, "80", namespace="elsewhere"),
    ]
    used = [
        _hami_series(USED, s + FRACTIONAL, "main", CARD_A, f"{GIB}"),
        _hami_series(USED, s + FRACTIONAL, "side", CARD_A, f"{GIB // 2}"),
        _hami_series(USED, s + WHOLE, "main", CARD_B, f"{2 * GIB}"),
        _hami_series(USED, s + WHOLE_NO_KERNEL, "main", CARD_B, "3.3554432e+08"),
        _hami_series(USED, s + OVERBUSY, "main", CARD_A, "0"),
    ]
    limit = [
        _hami_series(LIMIT, s + FRACTIONAL, "main", CARD_A, f"{10 * GIB}"),
        _hami_series(LIMIT, s + WHOLE, "main", CARD_B, f"{80 * GIB}"),
    ]
    kernel = [
        _hami_series(KERNEL, s + FRACTIONAL, "main", CARD_A, "12"),
        _hami_series(KERNEL, s + FRACTIONAL, "side", CARD_A, "3"),
        _hami_series(KERNEL, s + WHOLE, "main", CARD_B, "42"),
    ]
    return (
        "\n".join(
            [
                _family(
                    "hami_host_gpu_utilization_ratio", "GPU core utilization ratio (0-100)", host
                ),
                _family(UTIL, "Container device SM utilization ratio", utilization),
                _family(KERNEL, "Seconds since last kernel execution in container", kernel),
                _family(LIMIT, "vGPU device memory limit in bytes", limit),
                _family(USED, "vGPU device memory usage in bytes", used),
            ]
        )
        + "\n"
    )


HAMI_CARDS = {
    CARD_A: [FRACTIONAL, OVERBUSY, NOT_YET],
    CARD_B: [WHOLE, WHOLE_NO_KERNEL],
    CARD_ELSEWHERE: [ON_OTHER_NODE],
}


def test_hami_readings_per_session() -> None:
    samples = parse_hami(
        hami_text(), NAMESPACE, cards=HAMI_CARDS, whole_card={WHOLE, WHOLE_NO_KERNEL}
    )
    assert {s.session_id: s for s in samples} == {
        # two containers: the busier one, both memories, the latest kernel
        FRACTIONAL: Sample(FRACTIONAL, 60.0, 1536, 3.0, has_series=True),
        # HAMi reads a whole card's utilization as 0: its last kernel tells instead
        WHOLE: Sample(WHOLE, None, 2048, 42.0, has_series=True),
        WHOLE_NO_KERNEL: Sample(WHOLE_NO_KERNEL, None, 320, None, has_series=False),
        OVERBUSY: Sample(OVERBUSY, 100.0, 0, None, has_series=True),
        # on a card this node shows, but no series yet: it has not touched its GPU
        NOT_YET: Sample(NOT_YET, None, None, None, has_series=False),
    }
    assert [s.session_id for s in samples] == sorted(s.session_id for s in samples)


def test_hami_without_known_cards_reports_only_what_it_sees() -> None:
    samples = parse_hami(hami_text(), NAMESPACE)
    assert {s.session_id for s in samples} == {FRACTIONAL, WHOLE, WHOLE_NO_KERNEL, OVERBUSY}
    whole = next(s for s in samples if s.session_id == WHOLE)
    assert whole.gpu_util_percent == 0.0  # not known to be a whole card: taken as read


def test_hami_sessions_scraped_through_prometheus_keep_their_pod() -> None:
    line = _hami_series(
        UTIL,
        "hami-vgpu-monitor-x7k2p",
        "main",
        CARD_A,
        "44",
        namespace="hami-system",
        exported_namespace=NAMESPACE,
        exported_pod=f"session-{FRACTIONAL}",
    )
    text = _family(UTIL, "util", [line]) + "\n"
    assert parse_hami(text, NAMESPACE) == [Sample(FRACTIONAL, 44.0, None, None)]


def test_hami_values_that_are_no_reading_are_ignored() -> None:
    s = f"session-{FRACTIONAL}"
    lines = [
        _hami_series(UTIL, s, "a", CARD_A, "NaN"),
        _hami_series(UTIL, s, "b", CARD_A, "-5"),
        _hami_series(USED, s, "a", CARD_A, "+Inf"),
        _hami_series(USED, s, "b", CARD_A, "1e308", vdevice_index="0"),
        _hami_series(USED, s, "b", CARD_A, "1.7e308", vdevice_index="1"),
        _hami_series(KERNEL, s, "a", CARD_A, "-1"),
        _hami_series(KERNEL, s, "b", CARD_A, "NaN"),
        _hami_series(KERNEL, s, "c", CARD_A, "1.7e+09"),  # a kernel time HAMi misread
        _hami_series(UTIL, "session-not-a-uuid", "a", CARD_A, "9"),
        _hami_series(
            UTIL,
            f"session-{FRACTIONAL.upper()}",
            "a",
            CARD_A,
            "9",
        ),
    ]
    text = "\n".join(lines) + "\n"
    assert parse_hami(text, NAMESPACE) == [Sample(FRACTIONAL, None, None, 1e9, has_series=True)]


DCGM_COMMON = (
    'pci_bus_id="00000000:07:00.0",device="nvidia{gpu}",modelName="NVIDIA A100-SXM4-80GB",'
    'Hostname="gpu-node-1",DCGM_FI_DRIVER_VERSION="550.54.15"'
)


def _dcgm(name: str, gpu: int, card: str, value: str, pod: str = "", **extra: str) -> str:
    labels = f'gpu="{gpu}",UUID="{card}",' + DCGM_COMMON.format(gpu=gpu)
    for key, label in extra.items():
        labels += f',{key}="{label}"'
    if pod:
        labels += f',container="main",namespace="{NAMESPACE}",pod="{pod}"'
    return f"{name}{{{labels}}} {value}"


def dcgm_text(*, with_pods: bool) -> str:
    """A DCGM exporter's page: card A whole, card B carved into MIG instances."""

    def pod(session_id: str) -> str:
        return f"session-{session_id}" if with_pods else ""

    mig_7 = {"GPU_I_PROFILE": "1g.10gb", "GPU_I_ID": "7"}
    mig_9 = {"GPU_I_PROFILE": "3g.40gb", "GPU_I_ID": "9"}
    return (
        "\n".join(
            [
                _family(
                    "DCGM_FI_DEV_GPU_UTIL",
                    "GPU utilization (in %).",
                    [_dcgm("DCGM_FI_DEV_GPU_UTIL", 0, CARD_A, "87", pod(FRACTIONAL))],
                ),
                _family(
                    "DCGM_FI_DEV_FB_USED",
                    "Framebuffer memory used (in MiB).",
                    [
                        _dcgm("DCGM_FI_DEV_FB_USED", 0, CARD_A, "30512", pod(FRACTIONAL)),
                        _dcgm("DCGM_FI_DEV_FB_USED", 1, CARD_B, "2048", pod(WHOLE), **mig_7),
                        _dcgm("DCGM_FI_DEV_FB_USED", 1, CARD_B, "1024", pod(OVERBUSY), **mig_9),
                    ],
                ),
                _family(
                    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                    "Ratio of time the graphics engine is active.",
                    [
                        _dcgm("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0, CARD_A, "0.8", pod(FRACTIONAL)),
                        _dcgm(
                            "DCGM_FI_PROF_GR_ENGINE_ACTIVE", 1, CARD_B, "0.25", pod(WHOLE), **mig_7
                        ),
                        _dcgm(
                            "DCGM_FI_PROF_GR_ENGINE_ACTIVE", 1, CARD_B, "0", pod(OVERBUSY), **mig_9
                        ),
                    ],
                ),
            ]
        )
        + "\n"
    )


def test_dcgm_with_pod_labels_reads_each_session_and_mig_engine_activity() -> None:
    samples = parse_dcgm(dcgm_text(with_pods=True), NAMESPACE, {})
    assert samples == sorted(
        [
            Sample(FRACTIONAL, 87.0, 30512, None),  # the card's utilization, not engine activity
            Sample(WHOLE, 25.0, 2048, None),  # MIG: no GPU_UTIL, engine activity times 100
            Sample(OVERBUSY, 0.0, 1024, None),
        ],
        key=lambda s: s.session_id,
    )


def test_dcgm_without_pod_labels_maps_cards_to_their_sessions() -> None:
    cards = {CARD_A: [FRACTIONAL, NOT_YET], CARD_B: [WHOLE], CARD_ELSEWHERE: [ON_OTHER_NODE]}
    samples = parse_dcgm(dcgm_text(with_pods=False), NAMESPACE, cards)
    assert {s.session_id: s for s in samples} == {
        FRACTIONAL: Sample(FRACTIONAL, 87.0, 30512, None),
        NOT_YET: Sample(NOT_YET, 87.0, 30512, None),  # a busy card keeps both from idling
        WHOLE: Sample(WHOLE, 25.0, 3072, None),  # the busiest instance, all instances' memory
    }


def test_dcgm_session_found_by_pod_is_not_counted_again_by_card() -> None:
    text = "\n".join(
        [
            _dcgm("DCGM_FI_DEV_GPU_UTIL", 0, CARD_A, "10", f"session-{FRACTIONAL}"),
            _dcgm("DCGM_FI_DEV_GPU_UTIL", 0, CARD_A, "55"),
            _dcgm("DCGM_FI_DEV_GPU_UTIL", 1, CARD_B, "99"),
            _dcgm("DCGM_FI_DEV_GPU_UTIL", 1, CARD_B, "77", "some-other-pod"),
        ]
    )
    samples = parse_dcgm(text + "\n", NAMESPACE, {CARD_A: [FRACTIONAL], CARD_B: [WHOLE]})
    assert samples == sorted(
        [Sample(FRACTIONAL, 10.0, None, None), Sample(WHOLE, 99.0, None, None)],
        key=lambda s: s.session_id,
    )


@pytest.mark.parametrize(
    "text",
    [
        "this is not a metrics page",
        "<html><body>502 Bad Gateway</body></html>",
        'hami_vgpu_memory_used_bytes{pod="session-x" 12\n',
        'hami_vgpu_memory_used_bytes{pod="a",pod="b"} 12\n',
        "\x00\x01\x02",
    ],
)
def test_garbage_is_refused_with_a_reason(text: str) -> None:
    with pytest.raises(MetricsError, match="not Prometheus text"):
        parse_hami(text, NAMESPACE)
    with pytest.raises(MetricsError, match="not Prometheus text"):
        parse_dcgm(text, NAMESPACE, {})


def test_text_of_another_exporter_is_not_taken_for_idle_sessions() -> None:
    other = "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 12.5\n"
    with pytest.raises(MetricsError, match="no HAMi metrics"):
        parse_hami(other, NAMESPACE, cards=HAMI_CARDS)
    with pytest.raises(MetricsError, match="no DCGM metrics"):
        parse_dcgm(hami_text(), NAMESPACE, {})
    with pytest.raises(MetricsError, match="no HAMi metrics"):
        parse_hami("", NAMESPACE)


def test_huge_text_is_refused_before_parsing() -> None:
    huge = "# " + "x" * MAX_TEXT_CHARS + "\n"
    with pytest.raises(MetricsError, match="larger than"):
        parse_hami(huge, NAMESPACE)


def test_samples_are_capped_at_what_the_api_takes() -> None:
    lines = [
        _dcgm(
            "DCGM_FI_DEV_GPU_UTIL", 0, f"GPU-{n}", "5", f"session-00000000-0000-4000-8000-{n:012d}"
        )
        for n in range(MAX_SAMPLES + 10)
    ]
    samples = parse_dcgm("\n".join(lines) + "\n", NAMESPACE, {})
    assert len(samples) == MAX_SAMPLES
    assert samples[-1].session_id == f"00000000-0000-4000-8000-{MAX_SAMPLES - 1:012d}"


_NAMES = [
    UTIL,
    USED,
    KERNEL,
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
]
_series_line = st.builds(
    lambda name, pod, card, instance, value: (
        f'{name}{{namespace="{NAMESPACE}",pod="{pod}",device_uuid="{card}",UUID="{card}"'
        f"{instance}}} {value}"
    ),
    st.sampled_from(_NAMES),
    st.sampled_from(["", "jupyter-abc", *(f"session-{s}" for s in (FRACTIONAL, WHOLE, NOT_YET))]),
    st.sampled_from([CARD_A, CARD_B, ""]),
    st.sampled_from(["", ',GPU_I_ID="3"']),
    st.one_of(
        st.sampled_from(["NaN", "+Inf", "-Inf", "-1", "1e400", "0", "1e30"]),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
    ),
)


@given(st.lists(st.one_of(_series_line, st.text(max_size=40)), max_size=12).map("\n".join))
def test_any_text_gives_samples_or_a_metrics_error(text: str) -> None:
    for parse in (
        lambda: parse_hami(text, NAMESPACE, cards=HAMI_CARDS),
        lambda: parse_dcgm(text, NAMESPACE, HAMI_CARDS),
    ):
        try:
            samples, reason = parse(), None
        except MetricsError as exc:
            samples, reason = [], str(exc)
        assert reason is None or reason
        UtilizationReport.model_validate(
            utilization_body("hami", samples, reason is None, reason or "", 1)
        )
        for s in samples:
            assert s.gpu_util_percent is None or 0 <= s.gpu_util_percent <= 100
            assert s.vram_used_mib is None or s.vram_used_mib >= 0
            assert s.last_kernel_seconds is None or math.isfinite(s.last_kernel_seconds)


def test_the_body_matches_the_contract() -> None:
    samples = [Sample(FRACTIONAL, 12.5, 2048, 30.0), Sample(NOT_YET, None, None, None, False)]
    assert utilization_body("hami", samples, True, "", 7) == {
        "sequence": 7,
        "source": "hami",
        "readable": True,
        "error": "",
        "samples": [
            {
                "session_id": FRACTIONAL,
                "gpu_util_percent": 12.5,
                "vram_used_mib": 2048,
                "last_kernel_seconds": 30.0,
                "has_series": True,
            },
            {
                "session_id": NOT_YET,
                "gpu_util_percent": None,
                "vram_used_mib": None,
                "last_kernel_seconds": None,
                "has_series": False,
            },
        ],
    }
    unreadable = utilization_body("dcgm", [], False, "e" * 5000, 8)
    assert unreadable["readable"] is False
    assert len(unreadable["error"]) == 1000


def test_configuration_from_the_environment() -> None:
    url = "http://hami-monitor.hami-system.svc:9394/metrics"
    assert configured({}) is None
    assert configured({"GSHARE_OPERATOR_METRICS_URL": " "}) is None
    assert configured({"GSHARE_OPERATOR_METRICS_URL": url}) == (url, "hami", 30.0)
    assert configured(
        {
            "GSHARE_OPERATOR_METRICS_URL": url,
            "GSHARE_OPERATOR_METRICS_SOURCE": "DCGM",
            "GSHARE_OPERATOR_METRICS_INTERVAL": "5",
        }
    ) == (url, "dcgm", 5.0)
    bad = [
        ({"GSHARE_OPERATOR_METRICS_URL": "hami-monitor:9394"}, "must be an http"),
        ({"GSHARE_OPERATOR_METRICS_URL": "file:///etc/passwd"}, "must be an http"),
        ({"GSHARE_OPERATOR_METRICS_SOURCE": "nvml"}, "must be one of hami, dcgm"),
        ({"GSHARE_OPERATOR_METRICS_INTERVAL": "4"}, "from 5 to 3600"),
        ({"GSHARE_OPERATOR_METRICS_INTERVAL": "3601"}, "from 5 to 3600"),
        ({"GSHARE_OPERATOR_METRICS_INTERVAL": "soon"}, "from 5 to 3600"),
        ({"GSHARE_OPERATOR_METRICS_INTERVAL": "nan"}, "from 5 to 3600"),
    ]
    for change, message in bad:
        with pytest.raises(ValueError, match=message):
            configured({"GSHARE_OPERATOR_METRICS_URL": url, **change})


def test_gpu_sessions_follow_their_resources() -> None:
    sessions = GpuSessions()
    sessions.follow(FRACTIONAL, {"gpu": {"node": "n", "cardUUID": CARD_A, "coresPercent": 30}})
    sessions.follow(WHOLE, {"gpu": {"node": "n", "cardUUID": CARD_A}})
    sessions.follow(OVERBUSY, {"gpu": {"node": "n", "cardUUID": CARD_B, "migProfile": "1g.10gb"}})
    sessions.follow(NOT_YET, {"cpuMillicores": 500})  # no GPU
    assert sessions.cards() == {CARD_A: [FRACTIONAL, WHOLE], CARD_B: [OVERBUSY]}
    assert sessions.cards(with_mig=False) == {CARD_A: [FRACTIONAL, WHOLE]}
    assert sessions.whole_card() == {WHOLE}

    sessions.follow(WHOLE, {"gpu": {"node": "n", "cardUUID": CARD_B, "coresPercent": 100}})
    sessions.follow(FRACTIONAL, {"desiredState": "Paused", "gpu": {"cardUUID": CARD_A}})
    sessions.follow(OVERBUSY, None)  # deleted
    assert sessions.cards() == {CARD_B: [WHOLE]}
    assert sessions.whole_card() == {WHOLE}


# The reader against local HTTP servers: one plays the metrics source, one the API.


@dataclass
class _Site:
    """A local HTTP server answering every request with `status` and `body`; it records what
    it was sent."""

    status: int = 200
    body: bytes = b""
    content_type: str = "text/plain; version=0.0.4"
    received: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""
    stall: threading.Event | None = None  # when set: send part of the body, then wait for it


@pytest.fixture
def sites() -> Iterator[list[_Site]]:
    """Two local servers: the metrics source and the API."""
    running: list[ThreadingHTTPServer] = []
    made = [_Site(), _Site(body=b'{"applied": true}', content_type="application/json")]
    for site in made:

        class Handler(BaseHTTPRequestHandler):
            served = site

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                payload = self.rfile.read(length) if length else b""
                self.served.received.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "authorization": self.headers.get("Authorization"),
                        "json": json.loads(payload) if payload else None,
                    }
                )
                status, body = self.served.status, self.served.body
                if self.command == "POST" and not self.headers.get("Authorization"):
                    status, body = 401, b'{"detail": "no token"}'
                self.send_response(status)
                self.send_header("Content-Type", self.served.content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.served.stall is not None:
                    self.wfile.write(body[:10])
                    self.wfile.flush()
                    self.served.stall.wait(timeout=30)
                    return
                self.wfile.write(body)

            do_GET = _answer
            do_POST = _answer

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        site.url = f"http://127.0.0.1:{server.server_address[1]}"
        threading.Thread(target=server.serve_forever, daemon=True).start()
        running.append(server)
    yield made
    for site in made:
        if site.stall is not None:
            site.stall.set()
    for server in running:
        server.shutdown()
        server.server_close()


def _reader(
    source_url: str,
    api: _Site,
    tmp_path: Path,
    source: Source = "hami",
    interval_seconds: float = 30.0,
) -> UtilizationReader:
    token_file = tmp_path / "token"
    token_file.write_text("operator-token\n")
    sessions = GpuSessions()
    for card, session_ids in HAMI_CARDS.items():
        for session_id in session_ids:
            cores = None if session_id in (WHOLE, WHOLE_NO_KERNEL) else 30
            sessions.follow(session_id, {"gpu": {"cardUUID": card, "coresPercent": cores}})
    sessions.follow(ON_MIG, {"gpu": {"cardUUID": CARD_A, "migProfile": "1g.10gb"}})
    target = ReportTarget(api.url, "cluster-7", token_file)
    return sessions.reader(
        target, f"{source_url}/metrics", source, interval_seconds, namespace=NAMESPACE
    )


def _reports(api: _Site) -> list[dict[str, Any]]:
    """What the API was sent, each checked against what the API takes."""
    assert all(r["authorization"] == "Bearer operator-token" for r in api.received)
    assert all(r["path"] == "/internal/v1/clusters/cluster-7/utilization" for r in api.received)
    for r in api.received:
        UtilizationReport.model_validate(r["json"])
    return [r["json"] for r in api.received]


async def test_the_reader_reports_what_hami_shows(sites: list[_Site], tmp_path: Path) -> None:
    source, api = sites
    source.body = hami_text().encode()
    reader = _reader(source.url, api, tmp_path)
    assert await reader.report_once() == "delivered"
    [report] = _reports(api)
    assert source.received[0]["path"] == "/metrics"
    assert report["source"] == "hami"
    assert report["readable"] is True
    by_session = {s["session_id"]: s for s in report["samples"]}
    # HAMi may not meter a MIG instance: no series for it is not taken for idle
    assert set(by_session) == {FRACTIONAL, WHOLE, WHOLE_NO_KERNEL, OVERBUSY, NOT_YET}
    assert by_session[FRACTIONAL] == {
        "session_id": FRACTIONAL,
        "gpu_util_percent": 60.0,
        "vram_used_mib": 1536,
        "last_kernel_seconds": 3.0,
        "has_series": True,
    }
    assert by_session[WHOLE]["gpu_util_percent"] is None
    assert by_session[NOT_YET]["has_series"] is False


async def test_the_reader_reports_what_dcgm_shows(sites: list[_Site], tmp_path: Path) -> None:
    source, api = sites
    source.body = dcgm_text(with_pods=False).encode()
    reader = _reader(source.url, api, tmp_path, source="dcgm")
    assert await reader.report_once() == "delivered"
    [report] = _reports(api)
    assert report["source"] == "dcgm"
    assert report["readable"] is True
    by_session = {s["session_id"]: s for s in report["samples"]}
    # card A's sessions share its reading; card B's sessions share its instances'
    assert {s: (v["gpu_util_percent"], v["vram_used_mib"]) for s, v in by_session.items()} == {
        FRACTIONAL: (87.0, 30512),
        OVERBUSY: (87.0, 30512),
        ON_MIG: (87.0, 30512),
        NOT_YET: (87.0, 30512),
        WHOLE: (25.0, 3072),
        WHOLE_NO_KERNEL: (25.0, 3072),
    }


@pytest.mark.parametrize(
    ("status", "body", "reason"),
    [
        (503, b"busy", "answered HTTP 503"),
        (200, b"<html>login</html>", "cannot be used: not Prometheus text"),
        (200, b"# TYPE up gauge\nup 1\n", "no HAMi metrics"),
        (200, b"\xff\xfe\x00", "not UTF-8"),
        (200, b"#" * (MAX_TEXT_CHARS + 10), "larger than"),
    ],
)
async def test_an_unusable_source_is_reported_as_unreadable(
    sites: list[_Site], tmp_path: Path, status: int, body: bytes, reason: str
) -> None:
    source, api = sites
    source.status, source.body = status, body
    assert await _reader(source.url, api, tmp_path).report_once() == "delivered"
    [report] = _reports(api)
    assert report["readable"] is False
    assert report["samples"] == []
    assert reason in report["error"]


async def test_a_source_that_is_down_is_reported_as_unreadable(
    sites: list[_Site], tmp_path: Path
) -> None:
    _, api = sites
    reader = _reader(f"http://127.0.0.1:{free_port()}", api, tmp_path)
    assert await reader.report_once() == "delivered"
    [report] = _reports(api)
    assert report["readable"] is False
    assert "cannot read the source: ConnectError" in report["error"]


async def test_a_source_that_trickles_is_given_up_on(
    sites: list[_Site], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, api = sites
    source.body, source.stall = hami_text().encode(), threading.Event()
    monkeypatch.setattr(utilization, "READ_TIMEOUT_SECONDS", 0.5)
    assert await _reader(source.url, api, tmp_path).report_once() == "delivered"
    [report] = _reports(api)
    assert report["readable"] is False
    assert "did not answer within 0.5 s" in report["error"]


async def test_the_api_refusing_a_report_does_not_stop_the_reader(
    sites: list[_Site], tmp_path: Path
) -> None:
    source, api = sites
    source.body = hami_text().encode()
    api.status, api.body = 409, b'{"detail": "not yet"}'
    reader = _reader(source.url, api, tmp_path, interval_seconds=0.05)
    running = asyncio.create_task(reader.run())
    try:

        async def two_reports() -> bool:
            return len(api.received) >= 2

        await eventually(two_reports, "a second report after a refused one")
    finally:
        running.cancel()
    first, second = _reports(api)[:2]
    assert second["sequence"] > first["sequence"]
    assert first["readable"]
    assert second["readable"]


async def test_the_api_records_what_the_reader_reports(
    build: Builder, database_url: str, tmp_path: Path, sites: list[_Site]
) -> None:
    cluster = await build.cluster()
    owner = await build.user()
    placed = await build.interactive_session(owner, cluster)
    data_dir = tmp_path / "api"
    data_dir.mkdir()
    token_file = tmp_path / "token"
    now = datetime.now(UTC)
    keys = await load_or_create(FileKeyStore(data_dir / "internal-keys.json"), now)
    token_file.write_text(keys.mint(str(cluster.id), now))
    source, _ = sites
    pod = f"session-{placed.id}"
    source.body = (
        _family(UTIL, "util", [_hami_series(UTIL, pod, "main", CARD_A, "35")])
        + "\n"
        + _family(USED, "used", [_hami_series(USED, pod, "main", CARD_A, f"{GIB}")])
        + "\n"
    ).encode()
    api, base = start_api(database_url, data_dir)
    try:
        reader = UtilizationReader(
            ReportTarget(base, str(cluster.id), token_file),
            f"{source.url}/metrics",
            "hami",
            30.0,
            lambda: {CARD_A: [str(placed.id)]},
            namespace=NAMESPACE,
        )
        assert await reader.report_once() == "delivered"
    finally:
        stop(api)
    async with build.sessions() as db:
        row = await db.get(InteractiveSession, placed.id)
        assert row is not None
        assert (row.gpu_util_percent, row.vram_used_mib) == (35.0, 1024)
