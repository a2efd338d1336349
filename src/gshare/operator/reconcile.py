"""Bringing one GShareSession's children to what its spec asks for. Idempotent: running it
again, or after a restart in the middle, converges to the same objects and creates no
duplicates, because every child has a fixed name and is written with server-side apply."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubernetes_asyncio import client

from gshare.kit import kubeapi
from gshare.operator.manifests import OperatorConfig, children, name_of, owner_reference
from gshare.operator.spec import spec_of

FIELD_MANAGER = "gshare-operator"
# What only a running session needs; a paused one keeps its volume claim alone.
RUNNING_ONLY = ("Pod", "Service", "Ingress", "NetworkPolicy")


async def reconcile(
    api: client.ApiClient,
    *,
    name: str,
    uid: str,
    generation: int,
    spec: Mapping[str, Any],
    config: OperatorConfig,
) -> dict[str, Any]:
    """Apply the children the spec wants, remove those it no longer wants; returns the status."""
    session = spec_of(spec)
    wanted = children(session, config, owner_reference(name, uid))
    for obj in wanted:
        await kubeapi.apply(api, obj, FIELD_MANAGER)
    present = {obj["kind"] for obj in wanted}
    for kind in RUNNING_ONLY:
        if kind not in present:
            await kubeapi.delete(api, kind, name_of(session), config.namespace)
    running = session.desired_state == "Running"
    return {
        "phase": "Running" if running else "Paused",
        "observedGeneration": generation,
        "podName": name_of(session) if running else "",
        "message": "",
    }
