"""Cards that report hardware trouble, as the DCGM exporter prints it: each card's error fields
read, a fatal XID, new double-bit ECC errors or a failed row remap reported once per event,
and the report sent to the API (again, when the API did not get it)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gshare.capacity.schemas import CardErrorReport
from gshare.operator.card_errors import CardErrorWatch
from gshare.operator.metrics import (
    FATAL_XIDS,
    MAX_CARD_ERRORS,
    CardErrors,
    CardSeen,
    card_errors_body,
    new_card_trouble,
    parse_card_errors,
    trouble_reason,
)
from gshare.operator.report import ReportTarget
from gshare.operator.utilization import GpuSessions

CARD_A = "GPU-8f6e2b7a-1c3d-4e5f-a6b7-c8d9e0f1a2b3"
CARD_B = "GPU-0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
NAMESPACE = "gshare-sessions"


def _series(name: str, card: str, value: str, **labels: str) -> str:
    shown = {"gpu": "0", "UUID": card, "device": "nvidia0", "Hostname": "gpu-node-1", **labels}
    text = ",".join(f'{k}="{v}"' for k, v in shown.items())
    return f"{name}{{{text}}} {value}"


def exporter_text(*series: str) -> str:
    """A DCGM exporter's page: card A busy, and the error series given."""
    return (
        "\n".join(
            [
                "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).",
                "# TYPE DCGM_FI_DEV_GPU_UTIL gauge",
                _series("DCGM_FI_DEV_GPU_UTIL", CARD_A, "40"),
                "# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.",
                "# TYPE DCGM_FI_DEV_XID_ERRORS gauge",
                *[s for s in series if s.startswith("DCGM_FI_DEV_XID_ERRORS")],
                "# HELP DCGM_FI_DEV_ECC_DBE_VOL_TOTAL Total double-bit volatile ECC errors.",
                "# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter",
                *[s for s in series if s.startswith("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")],
                "# HELP DCGM_FI_DEV_ROW_REMAP_FAILURE Whether remapping of rows has failed.",
                "# TYPE DCGM_FI_DEV_ROW_REMAP_FAILURE gauge",
                *[s for s in series if s.startswith("DCGM_FI_DEV_ROW_REMAP_FAILURE")],
            ]
        )
        + "\n"
    )


def xid(card: str, value: str, **labels: str) -> str:
    return _series("DCGM_FI_DEV_XID_ERRORS", card, value, **labels)


def dbe(card: str, value: str) -> str:
    return _series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", card, value)


def remap(card: str, value: str) -> str:
    return _series("DCGM_FI_DEV_ROW_REMAP_FAILURE", card, value)


# ---- reading the exporter's text -----------------------------------------------------------


def test_each_cards_error_fields_are_read_once_at_their_highest() -> None:
    text = exporter_text(
        # with the Kubernetes mapping, one series per pod (and per MIG instance) of a card
        xid(CARD_A, "0", pod="session-a", namespace=NAMESPACE),
        xid(CARD_A, "79", pod="session-b", namespace=NAMESPACE),
        xid(CARD_B, "13", GPU_I_ID="7", GPU_I_PROFILE="1g.10gb"),
        dbe(CARD_A, "2"),
        remap(CARD_B, "1"),
    )
    assert parse_card_errors(text) == {
        CARD_A: CardErrors(CARD_A, "gpu-node-1", xid=79, dbe_total=2.0, row_remap_failed=None),
        CARD_B: CardErrors(CARD_B, "gpu-node-1", xid=13, dbe_total=None, row_remap_failed=True),
    }


def test_text_without_error_fields_shows_no_card() -> None:
    assert parse_card_errors(exporter_text()) == {}


@pytest.mark.parametrize("value", ["NaN", "-1", "79.5", "+Inf", "4294967296"])
def test_an_xid_that_is_no_code_is_not_read(value: str) -> None:
    assert parse_card_errors(exporter_text(xid(CARD_A, value), dbe(CARD_A, "0"))) == {
        CARD_A: CardErrors(CARD_A, "gpu-node-1", xid=None, dbe_total=0.0)
    }


def test_a_series_naming_no_card_the_api_could_know_is_left_out() -> None:
    text = exporter_text(xid("", "79"), xid("GPU-" + "a" * 200, "79"), xid("GPU-\x07bell", "79"))
    assert parse_card_errors(text) == {}


# ---- deciding what is new trouble ----------------------------------------------------------


def _cards(**fields: Any) -> dict[str, CardErrors]:
    return {CARD_A: CardErrors(CARD_A, "gpu-node-1", **fields)}


def test_a_fatal_xid_is_reported_once_however_long_the_gauge_holds_it() -> None:
    trouble, seen = new_card_trouble(_cards(xid=79), {})
    assert [(t.card_uuid, t.kind, t.xid) for t in trouble] == [(CARD_A, "xid", 79)]
    assert trouble[0].detail == "DCGM_FI_DEV_XID_ERRORS is 79 (was 0) on node gpu-node-1"
    again, seen = new_card_trouble(_cards(xid=79), seen)
    assert again == []
    # a reset clears the gauge; the same XID afterwards is a new event
    cleared, seen = new_card_trouble(_cards(xid=0), seen)
    assert cleared == []
    anew, _ = new_card_trouble(_cards(xid=79), seen)
    assert [t.xid for t in anew] == [79]


def test_an_xid_that_is_not_fatal_is_not_reported() -> None:
    trouble, seen = new_card_trouble(_cards(xid=13), {})  # an application's own fault
    assert trouble == []
    assert seen[CARD_A].xid == 13
    after, _ = new_card_trouble(_cards(xid=48), seen)
    assert [t.xid for t in after] == [48]


def test_new_double_bit_ecc_errors_are_reported_and_a_reset_counter_is_the_new_baseline() -> None:
    trouble, seen = new_card_trouble(_cards(dbe_total=0.0), {})
    assert trouble == []
    trouble, seen = new_card_trouble(_cards(dbe_total=2.0), seen)
    assert [(t.kind, t.xid, t.detail) for t in trouble] == [
        ("ecc_dbe", None, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL rose from 0 to 2 on node gpu-node-1")
    ]
    assert new_card_trouble(_cards(dbe_total=2.0), seen)[0] == []
    trouble, seen = new_card_trouble(_cards(dbe_total=0.0), seen)  # the driver reloaded
    assert trouble == []
    assert [t.kind for t in new_card_trouble(_cards(dbe_total=1.0), seen)[0]] == ["ecc_dbe"]


def test_a_card_first_seen_with_errors_is_reported() -> None:
    trouble, _ = new_card_trouble(_cards(xid=95, dbe_total=3.0, row_remap_failed=True), {})
    assert [t.kind for t in trouble] == ["xid", "ecc_dbe", "row_remap"]


def test_a_failed_row_remap_is_reported_once() -> None:
    trouble, seen = new_card_trouble(_cards(row_remap_failed=True), {})
    assert [t.kind for t in trouble] == ["row_remap"]
    assert new_card_trouble(_cards(row_remap_failed=True), seen)[0] == []


def test_a_card_the_text_no_longer_shows_is_remembered() -> None:
    _, seen = new_card_trouble(_cards(xid=79), {})
    _, seen = new_card_trouble({}, seen)  # fallen off the bus, out of the exporter's sight
    assert new_card_trouble(_cards(xid=79), seen)[0] == []


def test_cards_past_what_one_report_takes_are_reported_next_time() -> None:
    many = {f"GPU-{i:05d}": CardErrors(f"GPU-{i:05d}", xid=79) for i in range(MAX_CARD_ERRORS + 5)}
    first, seen = new_card_trouble(many, {})
    assert len(first) == MAX_CARD_ERRORS
    second, seen = new_card_trouble(many, seen)
    assert len(second) == 5
    assert {t.card_uuid for t in first} | {t.card_uuid for t in second} == set(many)
    assert new_card_trouble(many, seen)[0] == []


_fields = st.builds(
    CardErrors,
    card_uuid=st.just(CARD_A),
    node=st.text(max_size=300),
    xid=st.none() | st.sampled_from([0, 13, 31, *FATAL_XIDS]),
    dbe_total=st.none() | st.floats(min_value=0, max_value=1e6),
    row_remap_failed=st.none() | st.booleans(),
)


@given(st.lists(_fields, min_size=1, max_size=6))
def test_what_was_reported_is_never_reported_again_and_the_api_takes_every_report(
    readings: list[CardErrors],
) -> None:
    seen: dict[str, CardSeen] = {}
    for reading in readings:
        trouble, seen = new_card_trouble({CARD_A: reading}, seen)
        CardErrorReport.model_validate(card_errors_body(trouble))
        assert new_card_trouble({CARD_A: reading}, seen)[0] == []


def test_the_reason_says_what_the_trouble_means() -> None:
    assert trouble_reason("xid", 79) == "XID 79: the GPU has fallen off the bus"
    assert trouble_reason("xid", 140).startswith("XID 140: ")
    assert "double-bit ECC" in trouble_reason("ecc_dbe", None)
    assert "row remap" in trouble_reason("row_remap", None)


# ---- reporting to the API ------------------------------------------------------------------


@dataclass
class _Api:
    url: str = ""
    status: int = 200
    text: str = field(default_factory=exporter_text)  # what the exporter on the same server says
    received: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
def api() -> Iterator[_Api]:
    site = _Api()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            payload = json.loads(self.rfile.read(length)) if length else None
            site.received.append({"method": self.command, "path": self.path, "json": payload})
            status = site.status if self.path.endswith("/card-errors") else 200
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b"{}")

        do_POST = do_PUT = _answer

        def do_GET(self) -> None:  # the exporter, on the same server
            body = site.text.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    site.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield site
    server.shutdown()
    server.server_close()


def _target(api: _Api, tmp_path: Path) -> ReportTarget:
    token_file = tmp_path / "token"
    token_file.write_text("operator-token\n")
    return ReportTarget(api.url, "cluster-7", token_file)


def _card_error_reports(api: _Api) -> list[dict[str, Any]]:
    sent = [r for r in api.received if r["path"].endswith("/card-errors")]
    assert all(r["method"] == "PUT" for r in sent)
    assert all(r["path"] == "/internal/v1/clusters/cluster-7/card-errors" for r in sent)
    return [CardErrorReport.model_validate(r["json"]).model_dump() for r in sent]


async def test_new_trouble_is_reported_once(api: _Api, tmp_path: Path) -> None:
    watch = CardErrorWatch(_target(api, tmp_path))
    text = exporter_text(xid(CARD_A, "79"), xid(CARD_B, "0"))
    assert await watch.check(text) == "delivered"
    assert await watch.check(text) is None
    [report] = _card_error_reports(api)
    assert report["items"] == [
        {
            "card_uuid": CARD_A,
            "xid": 79,
            "kind": "xid",
            "detail": "DCGM_FI_DEV_XID_ERRORS is 79 (was 0) on node gpu-node-1",
            # The card showed it at the operator's first look.
            "standing": True,
        }
    ]
    # Trouble that comes while the operator watches is not standing.
    assert await watch.check(exporter_text(xid(CARD_A, "79"), xid(CARD_B, "48"))) == "delivered"
    assert _card_error_reports(api)[-1]["items"][0]["standing"] is False


async def test_trouble_the_api_did_not_get_is_reported_again(api: _Api, tmp_path: Path) -> None:
    watch = CardErrorWatch(_target(api, tmp_path))
    text = exporter_text(remap(CARD_B, "1"))
    api.status = 503
    assert await watch.check(text) == "unavailable"
    api.status = 200
    assert await watch.check(text) == "delivered"
    assert await watch.check(text) is None
    first, second = _card_error_reports(api)
    assert first == second


async def test_the_dcgm_reader_reports_card_trouble_after_utilization(
    api: _Api, tmp_path: Path
) -> None:
    api.text = exporter_text(xid(CARD_A, "48"))
    sessions = GpuSessions()
    reader = sessions.reader(
        _target(api, tmp_path), f"{api.url}/metrics", "dcgm", 30.0, namespace=NAMESPACE
    )
    assert await reader.report_once() == "delivered"
    assert await reader.report_once() == "delivered"
    paths = [r["path"].rsplit("/", 1)[-1] for r in api.received if r["method"] != "GET"]
    assert paths == ["utilization", "card-errors", "utilization"]
    [report] = _card_error_reports(api)
    assert [(i["card_uuid"], i["xid"]) for i in report["items"]] == [(CARD_A, 48)]


async def test_the_hami_reader_reports_no_card_trouble(api: _Api, tmp_path: Path) -> None:
    sessions = GpuSessions()
    reader = sessions.reader(
        _target(api, tmp_path), f"{api.url}/metrics", "hami", 30.0, namespace=NAMESPACE
    )
    assert reader.card_errors is None


def test_double_bit_ecc_errors_are_read_however_the_exporter_types_them() -> None:
    for kind in ("counter", "gauge", "untyped"):
        text = exporter_text(dbe(CARD_A, "3")).replace(
            "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter", f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL {kind}"
        )
        assert parse_card_errors(text)[CARD_A].dbe_total == 3.0, kind
