"""A session's start-up steps, read from its pod and the pod's Kubernetes events. Pure.

The steps, in the order a start goes through them: `allocated` (the pod made for the spec's
card), `scheduled`, `pulling` and `pulled` (the image; with its size when the kubelet says it),
`started` (the container) and `ready` (the program listens). Each appears at most once, at the
first time it happened. Warnings (`step` "warning") explain why a start is stuck or failed: one
per reason (FailedScheduling, Failed, BackOff, FailedMount, ErrImagePull, CrashLoopBackOff …),
its latest occurrence, with how often it happened.

Invariants: at most MAX_STEPS entries, every message at most MAX_MESSAGE printable characters,
every reason a short CamelCase word; the result depends on its inputs alone, so reading the same
pod and events again gives the same list.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from gshare.kit.datetimes import utc_instant

STEPS = ("allocated", "scheduled", "pulling", "pulled", "started", "ready")
WARNING = "warning"
MAX_STEPS = 20
MAX_MESSAGE = 300
REASON = re.compile(r"[A-Za-z][A-Za-z0-9]{0,63}")
IMAGE_SIZE = re.compile(r"Image size: (\d{1,18}) bytes")
CARD_ANNOTATION = "nvidia.com/use-gpuuuid"

# The kubelet's and the scheduler's event reasons that mark a step.
EVENT_STEPS = {
    "Scheduled": "scheduled",
    "Pulling": "pulling",
    "Pulled": "pulled",
    "Started": "started",
}
# A container waiting for one of these is stuck, not merely on its way.
STUCK_WAITING = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "CrashLoopBackOff",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    }
)

Json = dict[str, Any]


def instant(value: Any) -> datetime | None:
    """A Kubernetes Time or MicroTime as an aware UTC datetime; None when it is not one, or
    lies where UTC cannot reach or the API would refuse it (the status may hold anything)."""
    if not isinstance(value, str) or not 0 < len(value) <= 40:
        return None
    try:
        return utc_instant(datetime.fromisoformat(value))
    except ValueError:
        return None


def clean_text(value: Any) -> str:
    """Printable text of at most MAX_MESSAGE characters: control and formatting characters
    (a terminal escape, a NUL) become spaces, since the text ends up in front of people."""
    if not isinstance(value, str):
        return ""
    cleaned = "".join(
        " " if unicodedata.category(ch) in ("Cc", "Cf", "Cs") else ch
        for ch in value[: MAX_MESSAGE * 2]
    )
    return " ".join(cleaned.split())[:MAX_MESSAGE]


def _reason(value: Any) -> str | None:
    return value if isinstance(value, str) and REASON.fullmatch(value) else None


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _first_time(event: Mapping[str, Any]) -> datetime | None:
    meta = event.get("metadata") or {}
    for value in (
        event.get("eventTime"),
        event.get("firstTimestamp"),
        event.get("lastTimestamp"),
        meta.get("creationTimestamp"),
    ):
        if (found := instant(value)) is not None:
            return found
    return None


def _series(event: Mapping[str, Any]) -> Mapping[str, Any]:
    series = event.get("series")
    return series if isinstance(series, dict) else {}


def _last_time(event: Mapping[str, Any]) -> datetime | None:
    series = _series(event)
    for value in (series.get("lastObservedTime"), event.get("lastTimestamp")):
        if (found := instant(value)) is not None:
            return found
    return _first_time(event)


def _count(event: Mapping[str, Any]) -> int:
    series = _series(event)
    for value in (series.get("count"), event.get("count")):
        if type(value) is int and value >= 1:
            return min(value, 2**31 - 1)
    return 1


class _Steps:
    """Steps gathered from several sources: each step's earliest time, each warning's latest."""

    def __init__(self) -> None:
        self.progress: dict[str, Json] = {}
        self.warnings: dict[str, Json] = {}

    def step(self, name: str, at: datetime | None, message: str = "", **extra: Any) -> None:
        if at is None:
            return
        found = self.progress.setdefault(
            name, {"step": name, "_at": at, "reason": "", "message": ""}
        )
        found["_at"] = min(found["_at"], at)
        if message and not found["message"]:
            found["message"] = message
        for key, value in extra.items():
            found.setdefault(key, value)

    def warning(self, reason: str, at: datetime | None, message: str, count: int = 1) -> None:
        if at is None:
            return
        found = self.warnings.get(reason)
        if found is None or (at, message) > (found["_at"], found["message"]):
            total = max(count, found["count"] if found else 0)
            self.warnings[reason] = {
                "step": WARNING,
                "_at": at,
                "reason": reason,
                "message": message,
                "count": total,
            }
        else:
            found["count"] = max(found["count"], count)

    def listed(self) -> list[Json]:
        progress = sorted(self.progress.values(), key=lambda s: (s["_at"], STEPS.index(s["step"])))
        room = MAX_STEPS - len(progress)
        warnings = sorted(self.warnings.values(), key=lambda w: (w["_at"], w["reason"]))[-room:]
        ordered = sorted(
            progress + warnings,
            key=lambda s: (s["_at"], STEPS.index(s["step"]) if s["step"] in STEPS else len(STEPS)),
        )
        return [
            {**{k: v for k, v in s.items() if k != "_at"}, "at": _stamp(s["_at"])} for s in ordered
        ]


def _involves(event: Mapping[str, Any], pod_uid: str, pod_name: str) -> bool:
    involved = event.get("involvedObject") or event.get("regarding") or {}
    if not isinstance(involved, dict) or involved.get("kind", "Pod") != "Pod":
        return False
    uid = involved.get("uid")
    return uid == pod_uid if uid and pod_uid else involved.get("name") == pod_name


def startup_steps(pod: Mapping[str, Any] | None, events: Iterable[Mapping[str, Any]]) -> list[Json]:
    """The start-up steps of the pod made for the session's current spec (none without one),
    from its status and its core/v1 events (others' events are ignored)."""
    if pod is None:
        return []
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    steps = _Steps()
    card = (meta.get("annotations") or {}).get(CARD_ANNOTATION)
    steps.step("allocated", instant(meta.get("creationTimestamp")), clean_text(card))
    for condition in status.get("conditions") or []:
        if not isinstance(condition, dict):
            continue
        at = instant(condition.get("lastTransitionTime"))
        kind, value = condition.get("type"), condition.get("status")
        if kind == "PodScheduled" and value == "True":
            node = _node(pod)
            steps.step("scheduled", at, f"on {clean_text(node)}" if node else "")
        elif kind == "PodScheduled" and condition.get("reason") == "Unschedulable":
            steps.warning("FailedScheduling", at, clean_text(condition.get("message")))
        elif kind == "Ready" and value == "True":
            steps.step("ready", at)
    warning_times: list[datetime] = []
    for event in events:
        if not isinstance(event, dict) or not _involves(
            event, meta.get("uid", ""), meta.get("name", "")
        ):
            continue
        reason = _reason(event.get("reason"))
        if reason is None:
            continue
        message = clean_text(event.get("message") or event.get("note"))
        if event.get("type") == "Warning":
            at = _last_time(event)
            steps.warning(reason, at, message, _count(event))
            if at is not None:
                warning_times.append(at)
        elif reason in EVENT_STEPS:
            extra: Json = {}
            if reason == "Pulled" and (size := IMAGE_SIZE.search(event.get("message") or "")):
                extra["imageSizeBytes"] = int(size.group(1))
            steps.step(EVENT_STEPS[reason], _first_time(event), message, **extra)
    _containers(steps, status, max(warning_times, default=None))
    return steps.listed()


def _node(pod: Mapping[str, Any]) -> str:
    node = (pod.get("spec") or {}).get("nodeName")
    return node if isinstance(node, str) else ""


def _containers(steps: _Steps, status: Mapping[str, Any], last_warning: datetime | None) -> None:
    """What the container statuses say: when it started, and why it is stuck or ended. A
    waiting state carries no time of its own; it is put at the last warning event's, or left
    out when there is none (the events say it in their words then)."""
    for container in status.get("containerStatuses") or []:
        if not isinstance(container, dict):
            continue
        state = container.get("state") or {}
        running = state.get("running") if isinstance(state.get("running"), dict) else None
        if running is not None:
            steps.step("started", instant(running.get("startedAt")))
        waiting = state.get("waiting") if isinstance(state.get("waiting"), dict) else None
        if waiting is not None and waiting.get("reason") in STUCK_WAITING:
            steps.warning(waiting["reason"], last_warning, clean_text(waiting.get("message")))
        for ended in (
            state.get("terminated"),
            (container.get("lastState") or {}).get("terminated"),
        ):
            if not isinstance(ended, dict) or (reason := _reason(ended.get("reason"))) is None:
                continue
            if reason == "Completed":
                continue
            code = ended.get("exitCode")
            said = f"exit code {code}" if type(code) is int else ""
            detail = clean_text(ended.get("message"))
            message = clean_text(f"{said}: {detail}" if said and detail else said or detail)
            steps.warning(reason, instant(ended.get("finishedAt")), message)
            started = instant(ended.get("startedAt"))
            steps.step("started", started)
