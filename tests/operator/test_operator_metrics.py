"""The operator's metrics as a scrape of the real endpoint sees them: each report to the API by
outcome (an unreadable token file among them) and the session handler's outcomes."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import kopf
import pytest
from kubernetes_asyncio import client

from gshare.devcluster import free_port
from gshare.operator import main
from gshare.operator.manifests import OperatorConfig
from gshare.operator.report import ReportTarget, send_inventory, send_status
from gshare.operator.spec import SpecError
from tests.scrape import metrics_endpoint, scrape, value

REPORTS = "gshare_operator_reports_total"
HANDLERS = "gshare_operator_handler_runs_total"
CLUSTER = "5f3a8c1e-0000-4000-8000-000000000001"
SESSION = "5f3a8c1e-0000-4000-8000-000000000002"


class _Api(BaseHTTPRequestHandler):
    """Takes inventory reports; refuses every status report's token."""

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200 if self.path.endswith("/inventory") else 401)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    do_PUT = do_POST = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def api_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


async def test_reports_are_counted_by_outcome(api_url: str, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    status = {"phase": "Running", "message": "", "observedGeneration": 1}
    with metrics_endpoint() as server:
        before = await scrape(server)
        missing = ReportTarget(api_url, CLUSTER, tmp_path / "not-mounted")
        assert await send_inventory(missing, []) == "unavailable"
        token_file.write_text("a token\n")
        target = ReportTarget(api_url, CLUSTER, token_file)
        assert await send_inventory(target, []) == "delivered"
        assert await send_status(target, SESSION, status) == "refused"
        assert await send_status(target, SESSION, {**status, "phase": "Exploded"}) == "dropped"
        away = ReportTarget(f"http://127.0.0.1:{free_port()}", CLUSTER, token_file)
        assert await send_inventory(away, []) == "unavailable"
        after = await scrape(server)

    def more(report: str, outcome: str) -> float:
        counted = {"report": report, "outcome": outcome}
        return value(after, REPORTS, **counted) - value(before, REPORTS, **counted)

    assert more("inventory", "no_token") == 1
    assert more("inventory", "delivered") == 1
    assert more("inventory", "unavailable") == 1
    assert more("status", "refused") == 1
    assert more("status", "dropped") == 1


class _Refresher:
    def mark(self, name: str, generation: int | None = None) -> None:
        pass


async def _reconcile_failing_with(exc: Exception, monkeypatch: pytest.MonkeyPatch) -> None:
    async def failing(*args: Any, **kwargs: Any) -> None:
        raise exc

    monkeypatch.setattr(main, "reconcile", failing)
    memo = kopf.Memo(api=None, config=OperatorConfig(), refresher=_Refresher(), node_addresses={})
    with pytest.raises((kopf.PermanentError, kopf.TemporaryError)):
        await main.reconcile_session(name="session-x", uid="u", meta={}, spec={}, memo=memo)


async def test_the_session_handler_counts_its_outcomes(monkeypatch: pytest.MonkeyPatch) -> None:
    outcomes = ("permanent_error", "temporary_error")
    with metrics_endpoint() as server:
        before = await scrape(server)
        await _reconcile_failing_with(SpecError("spec.image is missing"), monkeypatch)
        await _reconcile_failing_with(client.exceptions.ApiException(status=503), monkeypatch)
        await _reconcile_failing_with(client.exceptions.ApiException(status=422), monkeypatch)
        after = await scrape(server)
    counted = {
        o: value(after, HANDLERS, handler="reconcile", outcome=o)
        - value(before, HANDLERS, handler="reconcile", outcome=o)
        for o in outcomes
    }
    assert counted == {"permanent_error": 2, "temporary_error": 1}
    runs = "gshare_operator_handler_duration_seconds_count"
    assert value(after, runs, handler="reconcile") - value(before, runs, handler="reconcile") == 3
