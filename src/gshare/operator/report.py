"""Reporting to the API — the cluster's GPU inventory and each session's status — signed with
the operator's current token.

The token file (a mounted Secret the API keeps fresh) is read for every report, so a new token
is picked up as soon as it lands."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from gshare.operator.inventory import NodeInventory

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReportTarget:
    api_url: str
    cluster_id: str
    token_file: Path


def inventory_body(nodes: list[NodeInventory], sequence: int) -> dict[str, Any]:
    return {
        "sequence": sequence,
        "nodes": [
            {
                "name": node.node,
                "cards": [
                    {
                        "uuid": c.uuid,
                        "model": c.model,
                        "memory_mib": c.memory_mib,
                        "cores": c.cores,
                        "split_count": c.split_count,
                        "numa": c.numa,
                        "healthy": c.healthy,
                    }
                    for c in node.cards
                ],
            }
            for node in sorted(nodes, key=lambda n: n.node)
        ],
    }


_last_sequence = 0


def next_sequence() -> int:
    """Milliseconds since the epoch, and above the last one handed out: grows across operator
    restarts and between two reports in the same millisecond, so the API can tell a newer
    report from a replayed or reordered older one."""
    global _last_sequence
    _last_sequence = max(_last_sequence + 1, time.time_ns() // 1_000_000)
    return _last_sequence


def status_body(status: dict[str, Any]) -> dict[str, Any]:
    """A session's status report from its resource's status."""
    return {
        "generation": int(status.get("observedGeneration") or 0),
        "sequence": next_sequence(),
        "phase": status["phase"],
        "message": str(status.get("message") or "")[:1000],
        "url": str(status.get("url") or ""),
    }


async def _send(target: ReportTarget, method: str, path: str, body: dict[str, Any]) -> bool:
    """True when the API took the report; False when it refused it (logged). Network errors
    propagate, so that the caller tries again."""
    token = target.token_file.read_text().strip()
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.request(
            method,
            f"{target.api_url.rstrip('/')}{path}",
            json=body,
            headers={"Authorization": f"Bearer {token}"},
        )
    if response.status_code >= 500:
        response.raise_for_status()  # the API is having trouble: try again later
    if response.status_code != 200:
        log.warning("report to %s refused: %s %s", path, response.status_code, response.text[:200])
        return False
    return True


async def send_inventory(target: ReportTarget, nodes: list[NodeInventory]) -> bool:
    path = f"/internal/v1/clusters/{target.cluster_id}/inventory"
    return await _send(target, "PUT", path, inventory_body(nodes, next_sequence()))


async def send_status(target: ReportTarget, session_id: str, status: dict[str, Any]) -> bool:
    path = f"/internal/v1/sessions/{session_id}/status"
    return await _send(target, "POST", path, status_body(status))
