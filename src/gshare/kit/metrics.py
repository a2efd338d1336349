"""Prometheus metrics: every metric GShare exports, defined once, and the endpoint serving them.

Each process (API, worker, operator, or `gshare up` with both of the first two) serves the
metrics it feeds on its own port, GSHARE_METRICS_PORT, apart from the API's public port. Label
values come from fixed sets in the code (route templates, loop names, error codes), never from
text a caller chose, so the number of series stays bounded. See docs/how-to/monitor.md.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from prometheus_client import (
    REGISTRY,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import event
from sqlalchemy.orm import Session

from gshare.kit.clock import Clock

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from prometheus_client.metrics_core import Metric
    from sqlalchemy.ext.asyncio import AsyncSession

    from gshare.kit.settings import Settings

log = logging.getLogger(__name__)

# No `_created` series beside each counter and histogram: they double the series for nothing
# these metrics are read for.
disable_created_metrics()  # type: ignore[no-untyped-call]

# ---- the API -------------------------------------------------------------------------------

# Up to 10 s: longer answers are in +Inf (the live-update stream is timed to its first byte).
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
REQUEST_SECONDS = Histogram(
    "gshare_http_request_duration_seconds",
    "Time from a request reaching the app until its response's status and headers are sent.",
    ["method", "route", "status"],
    buckets=REQUEST_BUCKETS,
)
# What `route` says of a request no route matched.
UNMATCHED_ROUTE = "unmatched"
# What `method` says of a method outside this set.
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

ADMISSIONS = Counter(
    "gshare_admissions_total",
    "Admission decisions: placed on a card (or CPU), queued, or refused. `via` is `request` "
    "(a session starting or resuming) or `queue` (the worker's walk of the queue).",
    ["via", "outcome"],
)
ADMISSION_REFUSALS = Counter(
    "gshare_admission_refusals_total",
    "Refused admissions by reason: the error code of a refused request, or how the queue "
    "ended a waiting one.",
    ["via", "reason"],
)
CALLBACK_REFUSALS = Counter(
    "gshare_callback_refusals_total",
    "Internal calls (operators, the session access check) refused, by reason and route template.",
    ["reason", "route"],
)

DATABASE_RETRIES = Counter(
    "gshare_database_retries_total",
    "Transactions PostgreSQL ended for a deadlock (40P01) or a serialization failure "
    "(40001), each run again a few times: `where` is `request` (an API call, run again "
    "whole) or `task` (a worker tick). Steady growth means two writers take locks in "
    "different orders.",
    ["where", "sqlstate"],
)

# ---- the worker ----------------------------------------------------------------------------

LOOP_RUNS = Counter("gshare_worker_loop_runs_total", "Ticks of each periodic loop.", ["loop"])
LOOP_FAILURES = Counter(
    "gshare_worker_loop_failures_total", "Ticks of each periodic loop that failed.", ["loop"]
)
LOOP_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
LOOP_SECONDS = Histogram(
    "gshare_worker_loop_duration_seconds",
    "How long each tick of each periodic loop took.",
    ["loop"],
    buckets=LOOP_BUCKETS,
)
LOOP_LAST_SUCCESS = Gauge(
    "gshare_worker_loop_last_success_timestamp_seconds",
    "When each periodic loop last ended a tick without an error (Unix time).",
    ["loop"],
)
TOKEN_REFRESHES = Counter(
    "gshare_worker_token_refreshes_total",
    "Operator tokens checked per cluster: refreshed, still fresh, or failed (unreachable).",
    ["outcome"],
)

# ---- the operator --------------------------------------------------------------------------

OPERATOR_HANDLERS = Counter(
    "gshare_operator_handler_runs_total",
    "Runs of the operator's session handler by outcome: ok, permanent_error (not retried), "
    "temporary_error (retried) or error (unexpected, retried).",
    ["handler", "outcome"],
)
OPERATOR_HANDLER_SECONDS = Histogram(
    "gshare_operator_handler_duration_seconds",
    "How long each run of the operator's session handler took.",
    ["handler"],
    buckets=REQUEST_BUCKETS,
)
OPERATOR_REPORTS = Counter(
    "gshare_operator_reports_total",
    "Reports (callbacks) the operator sent to the API, by report and outcome: delivered, "
    "dropped (the API can never take it), refused (not now, a token it does not accept "
    "among them), unavailable (unreachable or busy), no_token (the token file unreadable).",
    ["report", "outcome"],
)
OPERATOR_STATUS_WRITES = Counter(
    "gshare_operator_status_writes_total",
    "Writes of a GShareSession's status by the operator, by outcome (ok, failed).",
    ["outcome"],
)


# ---- gauges the worker sets after its ticks --------------------------------------------------


class WorkerGauges(Collector):
    """The admission queue's length and the metering lag, as the worker's last ticks saw them.
    Exported only once a tick has set them, so that a process without those loops (an API
    replica) does not report an empty queue or no lag. The lag is worked out at each scrape:
    it keeps growing while metering does not run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queued: int | None = None
        self._metering: tuple[Clock, datetime | None] | None = None

    def queue_walked(self, waiting: int) -> None:
        with self._lock:
            self._queued = waiting

    def metered(self, oldest: datetime | None, clock: Clock) -> None:
        """`oldest`: how far the least recently metered billed session is metered (None:
        no session is billed)."""
        with self._lock:
            self._metering = (clock, oldest)

    def forget(self) -> None:
        with self._lock:
            self._queued, self._metering = None, None

    def describe(self) -> Iterable[Metric]:
        return []  # nothing to check for clashes before the first tick

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            queued, metering = self._queued, self._metering
        if queued is not None:
            yield GaugeMetricFamily(
                "gshare_queue_length",
                "Admission requests waiting in the queue after the worker's last walk of it.",
                value=queued,
            )
        if metering is not None:
            clock, oldest = metering
            lag = 0.0 if oldest is None else max(0.0, (clock.now() - oldest).total_seconds())
            yield GaugeMetricFamily(
                "gshare_metering_lag_seconds",
                "Seconds since the least recently metered billed session was metered up to "
                "(0 when none is billed).",
                value=lag,
            )


WORKER_GAUGES = WorkerGauges()
REGISTRY.register(WORKER_GAUGES)


# ---- counting what a transaction decided, once it commits ----------------------------------

_PENDING = "gshare.metrics.pending"


def count_after_commit(db: AsyncSession, counter: Counter) -> None:
    """Increment `counter` (a labelled child) when `db`'s transaction commits; not at all if it
    rolls back (a retried transaction counts once)."""
    db.info.setdefault(_PENDING, []).append(counter)


@event.listens_for(Session, "after_commit")
def _committed(session: Session) -> None:
    for counter in session.info.pop(_PENDING, []):
        counter.inc()


@event.listens_for(Session, "after_rollback")
def _rolled_back(session: Session) -> None:
    session.info.pop(_PENDING, None)


# ---- the endpoint --------------------------------------------------------------------------


@dataclass
class MetricsServer:
    server: WSGIServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def serve_metrics(settings: Settings) -> MetricsServer | None:
    """Serve /metrics on GSHARE_METRICS_HOST:GSHARE_METRICS_PORT in a background thread, or
    nothing when the port is 0."""
    host, port = settings.metrics_host, settings.metrics_port
    if not port:
        return None
    try:
        server, thread = start_http_server(port, host)
    except OSError as exc:  # the port is taken, the address is not this host's
        raise SystemExit(f"gshare: cannot serve metrics on {host}:{port}: {exc}") from None
    log.info("metrics at http://%s:%d/metrics", host, port)
    return MetricsServer(server, thread)
