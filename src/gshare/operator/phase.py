"""A session's phase, from what it asks for and what its pod is doing. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gshare.operator.manifests import OperatorConfig, SessionSpec, host_of


def phase_of(
    desired_state: str, pod: Mapping[str, Any] | None, *, current: bool = True
) -> tuple[str, str]:
    """(phase, message): Pending, Running, Paused or Failed. `current` says whether the pod is
    the one the spec asks for; one made for an earlier spec says nothing about this one."""
    if pod is None:
        if desired_state == "Paused":
            return "Paused", ""
        return "Pending", "waiting for the pod"
    if pod.get("metadata", {}).get("deletionTimestamp") or not current:
        return "Pending", "the pod is stopping"
    status = pod.get("status") or {}
    phase = status.get("phase", "Pending")
    if phase in ("Failed", "Succeeded"):
        reason = status.get("reason") or status.get("message") or "the pod exited"
        return "Failed", str(reason)[:1000]
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    if phase == "Running" and ready:
        return "Running", ""
    waiting = [
        s["state"]["waiting"].get("reason", "")
        for s in status.get("containerStatuses") or []
        if (s.get("state") or {}).get("waiting")
    ]
    return "Pending", ", ".join(w for w in waiting if w) or "starting"


def url_of(spec: SessionSpec, config: OperatorConfig) -> str:
    """Where the session's page is served (through the ingress, for its owner only)."""
    return f"https://{host_of(spec, config)}/"
