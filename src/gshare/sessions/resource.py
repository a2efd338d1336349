"""The GShareSession resource the API applies for a session: its wanted state in the cluster.
Pure."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gshare.operator.manifests import API_GROUP, API_VERSION, KIND, resource_name


@dataclass(frozen=True)
class Card:
    node: str
    card_uuid: str
    vram_mib: int | None
    cores_percent: int | None
    mig_profile: str | None


@dataclass(frozen=True)
class Mount:
    volume_id: uuid.UUID
    kind: str  # home or shared
    mount_path: str
    access_mode: str
    size_gib: int


def claim_name(volume_id: uuid.UUID) -> str:
    """The claim a volume is in its cluster: named after the volume, so it outlives sessions."""
    return f"vol-{volume_id}"


def resource(
    *,
    session_id: uuid.UUID,
    owner_id: uuid.UUID,
    session_type: str,
    image: str,
    cpu_millicores: int,
    memory_mib: int,
    desired_state: str,
    card: Card | None,
    mounts: Sequence[Mount],
    namespace: str,
    revision: int = 0,
    boundary: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The resource at the session's `revision` (its spec generation), which the operator's
    reports name so that a report about an earlier spec is told from one about this one.
    `boundary` is the isolation and network its allocation was placed at; the defaults
    (shared, open egress) are left out, so the resource says only what differs."""
    spec: dict[str, Any] = {
        "revision": revision,
        "sessionId": str(session_id),
        "ownerId": str(owner_id),
        "sessionType": session_type,
        "image": image,
        "cpuMillicores": cpu_millicores,
        "memoryMiB": memory_mib,
        "desiredState": desired_state,
        "volumes": [
            {
                "name": f"{m.kind}-{i}",
                "kind": m.kind,
                "mountPath": m.mount_path,
                "accessMode": m.access_mode,
                "sizeGiB": m.size_gib,
                "claimName": claim_name(m.volume_id),
                "keep": True,
            }
            for i, m in enumerate(mounts)
        ],
    }
    # A paused session keeps no card: its next card is chosen when it resumes.
    if card is not None and desired_state == "Running":
        gpu: dict[str, Any] = {"node": card.node, "cardUUID": card.card_uuid}
        if card.vram_mib is not None:
            gpu["vramMiB"] = card.vram_mib
        if card.mig_profile is not None:
            gpu["migProfile"] = card.mig_profile
        elif card.cores_percent is not None:
            gpu["coresPercent"] = card.cores_percent
        spec["gpu"] = gpu
    if boundary and desired_state == "Running":
        isolation = boundary.get("isolation") or {}
        if isolation.get("level", "shared") != "shared" or isolation.get("dedicatedTo"):
            spec["isolation"] = dict(isolation)
        network = boundary.get("network") or {}
        if network.get("egress", "open") != "open":
            spec["network"] = dict(network)
    return {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": KIND,
        "metadata": {"name": resource_name(str(session_id)), "namespace": namespace},
        "spec": spec,
    }
