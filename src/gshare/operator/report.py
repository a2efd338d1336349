"""Reporting the cluster's GPU inventory to the API, signed with the operator's current token.

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


def next_sequence() -> int:
    """Milliseconds since the epoch: grows across operator restarts, so the API can tell a
    newer report from a replayed or reordered older one."""
    return time.time_ns() // 1_000_000


async def send_inventory(target: ReportTarget, nodes: list[NodeInventory]) -> bool:
    token = target.token_file.read_text().strip()
    url = f"{target.api_url.rstrip('/')}/internal/v1/clusters/{target.cluster_id}/inventory"
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.put(
            url,
            json=inventory_body(nodes, next_sequence()),
            headers={"Authorization": f"Bearer {token}"},
        )
    if response.status_code != 200:
        log.warning("inventory report refused: %s %s", response.status_code, response.text[:200])
        return False
    return True
