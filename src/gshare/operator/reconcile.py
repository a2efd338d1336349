"""Bringing one GShareSession's children to what its spec asks for, and writing its status.

Reconciling is idempotent: running it again, or after a restart in the middle, converges to the
same objects and creates no duplicates, because every child has a fixed name and is written with
server-side apply.

The status has one writer, `refresh_status`, which reads the resource and its pod afresh each
time; calls for one session are serialized, so a slower call can never overwrite a newer view.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Mapping
from typing import Any

from kubernetes_asyncio import client

from gshare.kit import kubeapi
from gshare.operator.manifests import OperatorConfig, children, name_of, owner_reference
from gshare.operator.phase import phase_of, url_of
from gshare.operator.spec import spec_of

FIELD_MANAGER = "gshare-operator"
# What only a running session needs; a paused one keeps its volume claim alone.
RUNNING_ONLY = ("Pod", "Service", "Ingress", "NetworkPolicy")

_status_locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()


async def reconcile(
    api: client.ApiClient,
    *,
    name: str,
    uid: str,
    generation: int,
    spec: Mapping[str, Any],
    config: OperatorConfig,
) -> None:
    """Apply the children the spec wants, remove those it no longer wants, then write the
    status for `generation`."""
    session = spec_of(spec)
    wanted = children(session, config, owner_reference(name, uid))
    for obj in wanted:
        await kubeapi.apply(api, obj, FIELD_MANAGER)
    present = {obj["kind"] for obj in wanted}
    for kind in RUNNING_ONLY:
        if kind not in present:
            await kubeapi.delete(api, kind, name_of(session), config.namespace)
    await refresh_status(api, name, config, generation=generation)


async def refresh_status(
    api: client.ApiClient, name: str, config: OperatorConfig, *, generation: int | None = None
) -> None:
    """Write the resource's status from its spec and its pod as they are now. `generation`, when
    given, is the spec generation just reconciled; otherwise the stored one is kept."""
    lock = _status_locks.get(name)
    if lock is None:
        lock = _status_locks[name] = asyncio.Lock()
    async with lock:
        resource = await kubeapi.get(api, "GShareSession", name, config.namespace)
        if resource is None or resource["metadata"].get("deletionTimestamp"):
            return
        session = spec_of(resource["spec"])
        pod = await kubeapi.get(api, "Pod", name_of(session), config.namespace)
        phase, message = phase_of(session.desired_state, pod)
        status: dict[str, Any] = {
            "phase": phase,
            "message": message,
            "podName": pod["metadata"]["name"] if pod else "",
            "url": url_of(session, config) if phase == "Running" else "",
        }
        if generation is not None:
            status["observedGeneration"] = generation
        if any((resource.get("status") or {}).get(k) != v for k, v in status.items()):
            await kubeapi.patch_status(api, "GShareSession", name, config.namespace, status)
