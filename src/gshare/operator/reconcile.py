"""Bringing one GShareSession's children to what its spec asks for, and writing its status.

Reconciling is idempotent: running it again, or after a restart in the middle, converges to the
same objects and creates no duplicates, because every child has a fixed name and is written with
server-side apply.

The status has one writer, the StatusRefresher, which reads the resource and its pod afresh
each time and refreshes one session at a time, so a slower write can never put an older view
over a newer one. It gathers a burst of events about one session (a pod is created, scheduled,
started and becomes ready within a second) into one refresh.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kubernetes_asyncio import client

from gshare.kit import kubeapi, metrics
from gshare.operator.isolation import drift_of, drift_record
from gshare.operator.manifests import (
    OperatorConfig,
    SessionSpec,
    children,
    name_of,
    owner_reference,
    pod_matches,
)
from gshare.operator.manifests import pod as pod_manifest
from gshare.operator.phase import phase_of, url_of
from gshare.operator.spec import SpecError, spec_of
from gshare.operator.startup import startup_steps

FIELD_MANAGER = "gshare-operator"
# What only a running session needs; a paused one keeps its volume claim alone.
RUNNING_ONLY = ("Pod", "Service", "Ingress", "NetworkPolicy")
# How long a node's labels are trusted once read (a pod's node is read to check its level).
NODE_LABELS_SECONDS = 5.0

log = logging.getLogger(__name__)


async def reconcile(
    api: client.ApiClient,
    *,
    name: str,
    uid: str,
    spec: Mapping[str, Any],
    config: OperatorConfig,
) -> dict[str, str] | None:
    """Apply the children the spec wants and remove those it no longer wants. Returns the
    status's `isolationDrift` when a pod outside the spec's isolation level stood in the
    wanted one's place (it was deleted; the status writer records it)."""
    session = spec_of(spec)
    wanted = children(session, config, owner_reference(name, uid))
    drift = None
    for obj in wanted:
        if obj["kind"] == "Pod":
            drift = await _apply_pod(api, obj, session)
        else:
            await kubeapi.apply(api, obj, FIELD_MANAGER)
    present = {obj["kind"] for obj in wanted}
    for kind in RUNNING_ONLY:
        if kind not in present:
            await kubeapi.delete(api, kind, name_of(session), config.namespace)
    return drift


def _going(obj: Mapping[str, Any]) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


async def _apply_pod(
    api: client.ApiClient, wanted: dict[str, Any], session: SessionSpec
) -> dict[str, str] | None:
    """Apply the pod, unless a pod made for another spec, one outside the spec's isolation
    level, or one going away, stands in its place: that one is deleted, and the wanted pod is
    made once it is gone (the status refresher sees it go and reconciles again). Returns the
    drift of a pod deleted for being outside its level."""
    meta = wanted["metadata"]
    found = await kubeapi.get(api, "Pod", meta["name"], meta["namespace"])
    if found is None:
        await kubeapi.apply(api, wanted, FIELD_MANAGER)
        return None
    if _going(found):
        return None
    if not pod_matches(found, wanted):
        await kubeapi.delete(api, "Pod", meta["name"], meta["namespace"])
        return None
    drift = await _drift(api, found, session)
    if drift is not None:
        return drift
    await kubeapi.apply(api, wanted, FIELD_MANAGER)
    return None


async def _drift(
    api: client.ApiClient, pod: Mapping[str, Any], session: SessionSpec
) -> dict[str, str] | None:
    """When the pod (taken for the wanted one: pod_matches holds) is outside the spec's
    isolation level, delete it and return the status's record of why. A pod without the
    operator's stamp (made by hand, or before stamping) is checked all the same."""
    node = (pod.get("spec") or {}).get("nodeName")
    labels = await node_labels(api, node) if isinstance(node, str) and node else None
    reason = drift_of(pod, session, labels)
    if reason is None:
        return None
    meta = pod["metadata"]
    log.warning("pod %s is outside its isolation level: %s; it is remade", meta["name"], reason)
    await kubeapi.delete(api, "Pod", meta["name"], meta["namespace"])
    return drift_record(reason, pod, datetime.now(UTC))


_node_labels: dict[str, tuple[float, dict[str, str] | None]] = {}


async def node_labels(api: client.ApiClient, node: str) -> dict[str, str] | None:
    """The labels of a node (None when it is not there), read at most every few seconds."""
    now = time.monotonic()
    cached = _node_labels.get(node)
    if cached is not None and now - cached[0] < NODE_LABELS_SECONDS:
        return cached[1]
    try:
        found = await client.CoreV1Api(api).read_node(node)
    except client.exceptions.ApiException as exc:
        if exc.status != 404:
            raise
        labels = None
    else:
        labels = dict(found.metadata.labels or {})
    if len(_node_labels) > 10_000:
        _node_labels.clear()
    _node_labels[node] = (now, labels)
    return labels


async def refresh_status(
    api: client.ApiClient,
    name: str,
    config: OperatorConfig,
    *,
    generation: int | None = None,
    drift: dict[str, str] | None = None,
) -> None:
    """Write the resource's status from its spec and its pod as they are now. `generation`, when
        given, is the spec generation just reconciled; otherwise the stored one is kept.

        A resource that wants to run but has no pod (the pod of an earlier spec finished going away,
        or somebody deleted it) is reconciled again first, so its pod is made anew. The status says
        which of the control plane's revisions of the spec it describes, and only the pod made for
        that spec counts: a pod of an earlier one is reported as stopping. Its start-up steps come
    from that pod and its events (startup.py).

    A pod found outside the spec's isolation level is deleted (and so remade at its level);
    `isolationDrift` says why, from then on until another drift replaces it. `drift`, when
    given, is one the reconcile handler found."""
    resource = await kubeapi.get(api, "GShareSession", name, config.namespace)
    if resource is None or _going(resource):
        return
    status: dict[str, Any]
    try:
        session = spec_of(resource.get("spec") or {})
    except SpecError as exc:
        # Nothing can run from it: say so in the status rather than retry forever.
        status = {"phase": "Failed", "message": str(exc), "podName": "", "url": ""}
    else:
        uid = resource["metadata"]["uid"]
        pod = await kubeapi.get(api, "Pod", name_of(session), config.namespace)
        if pod is None and session.desired_state == "Running":
            drift = (
                await reconcile(api, name=name, uid=uid, spec=resource["spec"], config=config)
                or drift
            )
            pod = await kubeapi.get(api, "Pod", name_of(session), config.namespace)
        wanted = pod_manifest(session, config, owner_reference(name, uid))
        current = pod is None or pod_matches(pod, wanted)
        if pod is not None and current and not _going(pod) and session.desired_state == "Running":
            found = await _drift(api, pod, session)
            if found is not None:
                drift = found
                pod = await kubeapi.get(api, "Pod", name_of(session), config.namespace)
        phase, message = phase_of(session.desired_state, pod, current=current)
        steps: list[dict[str, Any]] = []
        if pod is not None and current and not _going(pod) and session.desired_state == "Running":
            events = await kubeapi.events_about(api, config.namespace, pod["metadata"]["uid"])
            steps = startup_steps(pod, events)
        status = {
            "phase": phase,
            "message": message,
            "podName": pod["metadata"]["name"] if pod else "",
            "url": url_of(session, config) if phase == "Running" else "",
            "observedRevision": session.revision,
            "startupSteps": steps,
        }
    if generation is not None:
        status["observedGeneration"] = generation
    if drift is not None:
        status["isolationDrift"] = drift
    if any((resource.get("status") or {}).get(k) != v for k, v in status.items()):
        await kubeapi.patch_status(api, "GShareSession", name, config.namespace, status)


class StatusRefresher:
    """Refreshes the statuses of sessions marked since the last round, one round at a time."""

    def __init__(
        self,
        api: client.ApiClient,
        config: OperatorConfig,
        *,
        delay: float = 0.3,
        parallel: int = 8,
    ) -> None:
        self.api = api
        self.config = config
        self.delay = delay
        self.parallel = parallel
        self._marked: dict[str, int | None] = {}
        self._drifts: dict[str, dict[str, str]] = {}  # name -> drift to record
        self._wake = asyncio.Event()

    def mark(
        self, name: str, generation: int | None = None, drift: dict[str, str] | None = None
    ) -> None:
        """Refresh this session's status soon; `generation` is a spec generation reconciled,
        `drift` a pod found outside its isolation level (and deleted)."""
        previous = self._marked.get(name)
        if generation is None or (previous is not None and previous > generation):
            generation = previous
        self._marked[name] = generation
        if drift is not None:
            self._drifts[name] = drift
        self._wake.set()

    async def run(self) -> None:
        gate = asyncio.Semaphore(self.parallel)

        failed: set[str] = set()
        writes = {o: metrics.OPERATOR_STATUS_WRITES.labels(o) for o in ("ok", "failed")}

        async def one(name: str, generation: int | None) -> None:
            drift = self._drifts.pop(name, None)
            async with gate:
                try:
                    await refresh_status(
                        self.api, name, self.config, generation=generation, drift=drift
                    )
                except client.exceptions.ApiException as exc:
                    log.warning("cannot update the status of %s: %s", name, exc.reason)
                    writes["failed"].inc()
                    if exc.status in (409, 429) or exc.status >= 500:
                        failed.add(name)
                        # A passing trouble: next round (a newer drift wins over this one).
                        self.mark(name, generation, self._drifts.get(name, drift))
                except Exception as exc:  # the connection: next round, so the loop lives on
                    log.warning("cannot update the status of %s: %r", name, exc)
                    writes["failed"].inc()
                    failed.add(name)
                    self.mark(name, generation, self._drifts.get(name, drift))
                else:
                    writes["ok"].inc()

        failing_rounds = 0
        while True:
            await self._wake.wait()
            await asyncio.sleep(self.delay)
            self._wake.clear()
            batch, self._marked = self._marked, {}
            failed.clear()
            # Each session appears once per round and rounds do not overlap.
            await asyncio.gather(*(one(n, g) for n, g in batch.items()))
            # After rounds with failures, wait longer each time, up to half a minute.
            failing_rounds = failing_rounds + 1 if failed else 0
            if failing_rounds:
                await asyncio.sleep(min(30.0, self.delay * 2 ** min(failing_rounds, 10)))
