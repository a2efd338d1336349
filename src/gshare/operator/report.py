"""Reporting to the API — the cluster's GPU inventory and each session's status — signed with
the operator's current token.

The token file (a mounted Secret the API keeps fresh) is read for every report, so a new token
is picked up as soon as it lands."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx
import jwt

from gshare.kit import metrics
from gshare.operator import startup
from gshare.operator.inventory import NodeInventory
from gshare.operator.isolation import (
    MAX_LABEL_VALUE,
    MAX_REASON,
    MAX_RUNTIME_CLASS_NAME,
    MAX_RUNTIME_CLASSES,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReportTarget:
    api_url: str
    cluster_id: str  # empty: the cluster the current token speaks for
    token_file: Path

    def cluster_for(self, token: str) -> str | None:
        """This operator's cluster: as configured, or else the subject of its token, so that an
        operator installed beside the control plane needs no id before its cluster is
        registered. Read without verifying: the API verifies the token it is sent."""
        if self.cluster_id:
            return self.cluster_id
        try:
            subject = jwt.decode(token, options={"verify_signature": False}).get("sub")
        except jwt.PyJWTError:
            return None
        if not isinstance(subject, str) or not subject.startswith("cluster:"):
            return None
        cluster = subject.removeprefix("cluster:")
        return cluster if CLUSTER_ID.fullmatch(cluster) else None


# Paths name the cluster with this placeholder, filled in once the token is read.
CLUSTER = "{cluster}"
CLUSTER_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


MAX_NODES = 5000  # what the API takes in one report


def inventory_body(nodes: list[NodeInventory], sequence: int) -> dict[str, Any]:
    """The report of every node's cards. A card announced by two nodes is reported once (the
    API refuses a report that names a card twice, and one bad node must not hide the rest)."""
    seen: set[str] = set()
    reported = []
    for node in sorted(nodes, key=lambda n: n.node)[:MAX_NODES]:
        cards = []
        for c in node.cards:
            if c.uuid in seen:
                log.warning("card %.128s is announced by more than one node", c.uuid)
                continue
            seen.add(c.uuid)
            cards.append(
                {
                    "uuid": c.uuid,
                    "model": c.model,
                    "memory_mib": c.memory_mib,
                    "cores": c.cores,
                    "split_count": c.split_count,
                    "numa": c.numa,
                    "healthy": c.healthy,
                }
            )
        reported.append(
            {
                "name": node.node,
                "cards": cards,
                "user_namespaces": node.user_namespaces,
                "runtime_classes": [
                    r for r in node.runtime_classes if 0 < len(r) <= MAX_RUNTIME_CLASS_NAME
                ][:MAX_RUNTIME_CLASSES],
                "dedicated_label": node.dedicated_label
                if node.dedicated_label and len(node.dedicated_label) <= MAX_LABEL_VALUE
                else None,
                "dedicated_tainted": node.dedicated_tainted,
            }
        )
    return {"sequence": sequence, "nodes": reported}


_last_sequence = 0


def next_sequence() -> int:
    """Milliseconds since the epoch, and above the last one handed out: grows across operator
    restarts and between two reports in the same millisecond, so the API can tell a newer
    report from a replayed or reordered older one."""
    global _last_sequence
    _last_sequence = max(_last_sequence + 1, time.time_ns() // 1_000_000)
    return _last_sequence


PHASES = ("Pending", "Running", "Paused", "Failed")
BIGINT_MAX = 2**63 - 1


def session_id_of(value: Any) -> str | None:
    """A resource's sessionId when it is a UUID (it becomes part of a URL), else None."""
    if not isinstance(value, str) or len(value) > 36:
        return None
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return None


def status_body(status: dict[str, Any]) -> dict[str, Any] | None:
    """A session's status report from its resource's status; None when that status cannot be
    one (anything that may write the resource's status may write nonsense there)."""
    phase, generation = status.get("phase"), status.get("observedGeneration") or 0
    if phase not in PHASES:
        return None
    if type(generation) is not int or not 0 <= generation <= BIGINT_MAX:
        return None
    message = status.get("message")
    body: dict[str, Any] = {
        "generation": generation,
        "sequence": next_sequence(),
        "phase": phase,
        "message": message[:1000] if isinstance(message, str) else "",
    }
    revision = status.get("observedRevision")
    if type(revision) is int and 0 <= revision <= BIGINT_MAX:
        body["revision"] = revision
    steps = status.get("startupSteps")
    if isinstance(steps, list):
        body["steps"] = steps_body(steps)
    drift = drift_body(status.get("isolationDrift"))
    if drift is not None:
        body["drift"] = drift
    return body


def drift_body(drift: Any) -> dict[str, str] | None:
    """The status's `isolationDrift` as the API takes it, or None when it is not well formed."""
    if not isinstance(drift, dict):
        return None
    reason, node, pod = drift.get("reason"), drift.get("node", ""), drift.get("pod", "")
    at = startup.instant(drift.get("at"))
    reason = startup.clean_text(reason)[:MAX_REASON]
    if not reason or at is None or not isinstance(node, str) or not isinstance(pod, str):
        return None
    return {
        "reason": reason,
        "node": startup.clean_text(node)[:253],
        "pod": startup.clean_text(pod)[:64],
        "at": at.isoformat(),
    }


def steps_body(steps: list[Any]) -> list[dict[str, Any]]:
    """The start-up steps as the API takes them; an entry of the wrong shape is left out rather
    than costing the whole report (the status is anybody's with the right to write it)."""
    out = []
    for entry in steps[: startup.MAX_STEPS]:
        if not isinstance(entry, dict):
            continue
        step, at = entry.get("step"), startup.instant(entry.get("at"))
        if step not in (*startup.STEPS, startup.WARNING) or at is None:
            continue
        reason = entry.get("reason")
        item: dict[str, Any] = {
            "step": step,
            "at": at.isoformat(),
            "reason": reason
            if isinstance(reason, str) and startup.REASON.fullmatch(reason)
            else "",
            "message": startup.clean_text(entry.get("message")),
        }
        size, count = entry.get("imageSizeBytes"), entry.get("count")
        if type(size) is int and 0 <= size <= BIGINT_MAX:
            item["image_size_bytes"] = size
        if type(count) is int and 1 <= count < 2**31:
            item["count"] = count
        out.append(item)
    return out


# delivered; dropped: the API cannot take this report, ever; refused: not now (a token not yet
# valid, a session not yet placed here), try this one again later; unavailable: the API cannot
# be reached or is busy, try everything again later.
Outcome = Literal["delivered", "dropped", "refused", "unavailable"]


async def _send(
    target: ReportTarget, report: str, method: str, path: str, body: dict[str, Any]
) -> Outcome:
    """Send one report and say how it went (and count it, by `report`: what it reports)."""
    outcome = await _sent(target, method, path, body)
    metrics.OPERATOR_REPORTS.labels(report, outcome).inc()
    return "unavailable" if outcome == "no_token" else outcome


async def _sent(
    target: ReportTarget, method: str, path: str, body: dict[str, Any]
) -> Outcome | Literal["no_token"]:
    try:
        token = target.token_file.read_text().strip()
    except (OSError, ValueError) as exc:  # not mounted yet, the Secret missing: try later
        log.warning("cannot report to %s: the token file cannot be read: %r", path, exc)
        return "no_token"
    cluster = target.cluster_for(token)
    if cluster is None:
        log.warning("cannot report to %s: the token names no cluster", path)
        return "no_token"
    path = path.replace(CLUSTER, cluster)
    try:
        async with httpx.AsyncClient(timeout=10) as client:
            response = await client.request(
                method,
                f"{target.api_url.rstrip('/')}{path}",
                json=body,
                headers={"Authorization": f"Bearer {token}"},
            )
    except Exception as exc:  # the network: try again later
        log.warning("cannot report to %s: %r", path, exc)
        return "unavailable"
    code = response.status_code
    if code == 200:
        return "delivered"
    log.warning("report to %s refused: %s %s", path, code, response.text[:200])
    if code in (400, 404, 422):
        return "dropped"
    return "unavailable" if code == 429 or code >= 500 else "refused"


class Reporter:
    """Keeps the API up to date with this cluster's inventory and its sessions' statuses.

    Changes only mark what to send; two loops send it, the newest state only, gathering a burst
    of changes into one report and pausing longer after each failure in a row (up to a
    minute). A session whose report is refused waits on its own, without holding up the others.
    Every `resync_seconds` everything is sent again, so the API catches up with whatever it
    missed (it ignores what it already has)."""

    def __init__(
        self,
        target: ReportTarget,
        *,
        gather_seconds: float = 1.0,
        first_pause_seconds: float = 1.0,
        resync_seconds: float = 600.0,
    ) -> None:
        self.target = target
        self.gather_seconds = gather_seconds
        self.first_pause_seconds = first_pause_seconds
        self.resync_seconds = resync_seconds
        self._nodes: list[NodeInventory] = []
        self._inventory_due = asyncio.Event()
        self._pending: dict[str, dict[str, Any]] = {}  # session id -> status to send
        self._delivered: dict[str, dict[str, Any]] = {}  # session id -> status last delivered
        self._refusals: dict[str, tuple[int, float]] = {}  # session id -> (count, not before)
        self._statuses_due = asyncio.Event()

    def inventory_changed(self, nodes: list[NodeInventory]) -> None:
        self._nodes = list(nodes)
        self._inventory_due.set()

    def status_changed(self, session_id: str, status: dict[str, Any]) -> None:
        if session_id not in self._pending and self._delivered.get(session_id) == status:
            return
        self._pending[session_id] = dict(status)
        self._statuses_due.set()

    def session_gone(self, session_id: str) -> None:
        self._pending.pop(session_id, None)
        self._delivered.pop(session_id, None)
        self._refusals.pop(session_id, None)

    def _pause(self, failures: int) -> float:
        return float(min(60.0, self.first_pause_seconds * 2 ** min(failures - 1, 16)))

    async def _inventory_loop(self) -> None:
        failures = 0
        while True:
            await self._inventory_due.wait()
            await asyncio.sleep(self.gather_seconds)
            self._inventory_due.clear()
            if await send_inventory(self.target, self._nodes) in ("refused", "unavailable"):
                failures += 1
                self._inventory_due.set()
                await asyncio.sleep(self._pause(failures))
            else:
                failures = 0

    def _next_refused_in(self, now: float) -> float | None:
        waits = [at - now for sid, (_, at) in self._refusals.items() if sid in self._pending]
        return max(0.0, min(waits)) if waits else None

    async def _status_loop(self) -> None:
        clock = asyncio.get_running_loop().time
        failures = 0
        while True:
            wait = self._next_refused_in(clock())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._statuses_due.wait(), wait)
            self._statuses_due.clear()
            for session_id, status in list(self._pending.items()):
                count, not_before = self._refusals.get(session_id, (0, 0.0))
                if not_before > clock():
                    continue
                outcome = await send_status(self.target, session_id, status)
                if outcome == "unavailable":
                    failures += 1
                    self._statuses_due.set()
                    await asyncio.sleep(self._pause(failures))
                    break
                failures = 0
                if self._pending.get(session_id) is not status:
                    continue  # changed or gone meanwhile: the newer news decides
                if outcome == "refused":
                    self._refusals[session_id] = (count + 1, clock() + self._pause(count + 1))
                    continue
                self._refusals.pop(session_id, None)
                if outcome == "delivered":
                    self._delivered[session_id] = status
                del self._pending[session_id]

    async def _resync_loop(self) -> None:
        while True:
            await asyncio.sleep(self.resync_seconds)
            for session_id, status in self._delivered.items():
                self._pending.setdefault(session_id, status)
            self._statuses_due.set()
            self._inventory_due.set()

    async def run(self) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(self._inventory_loop())
            group.create_task(self._status_loop())
            group.create_task(self._resync_loop())


async def send_inventory(target: ReportTarget, nodes: list[NodeInventory]) -> Outcome:
    path = f"/internal/v1/clusters/{CLUSTER}/inventory"
    return await _send(target, "inventory", "PUT", path, inventory_body(nodes, next_sequence()))


async def send_status(target: ReportTarget, session_id: str, status: dict[str, Any]) -> Outcome:
    body, checked_id = status_body(status), session_id_of(session_id)
    if body is None or checked_id is None:
        log.warning("session %.40r: its status cannot be reported: %.200r", session_id, status)
        metrics.OPERATOR_REPORTS.labels("status", "dropped").inc()
        return "dropped"
    path = f"/internal/v1/sessions/{checked_id}/status"
    return await _send(target, "status", "POST", path, body)
