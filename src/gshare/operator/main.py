"""`gshare operator`: the kopf operator that reconciles GShareSession resources in one namespace."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import re
import signal
import sys
import time
from collections.abc import Coroutine, Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import kopf
from kubernetes_asyncio import client, config

from gshare.kit import kubeapi, metrics
from gshare.operator.inventory import REGISTER_ANNOTATION, NodeInventory, parse_register
from gshare.operator.isolation import node_traits
from gshare.operator.manifests import (
    API_GROUP,
    API_VERSION,
    PLURAL,
    SESSION_LABEL,
    OperatorConfig,
    resource_name,
)
from gshare.operator.reconcile import StatusRefresher, reconcile
from gshare.operator.report import Reporter, ReportTarget, session_id_of
from gshare.operator.spec import SpecError
from gshare.operator.utilization import GpuSessions, configured

log = logging.getLogger(__name__)
registry = kopf.OperatorRegistry()
SESSION_POD_PREFIX = resource_name("")  # a session's pod is named as its resource


# A Kubernetes object name (DNS-1123 label): what ingress classes, namespaces and storage
# classes are called.
OBJECT_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def _name(variable: str, default: str) -> str:
    value = os.environ.get(variable, "") or default
    if not OBJECT_NAME.fullmatch(value):
        raise ValueError(f"{variable}: {value[:80]!r} is not a Kubernetes object name")
    return value


MAX_NODE_CIDRS = 256


def _node_cidrs(variable: str) -> tuple[str, ...]:
    """Comma-separated CIDRs (or single addresses) that hold the nodes' own addresses."""
    listed = [item.strip() for item in os.environ.get(variable, "").split(",") if item.strip()]
    if len(listed) > MAX_NODE_CIDRS:
        raise ValueError(f"{variable}: at most {MAX_NODE_CIDRS} ranges, got {len(listed)}")
    cidrs = []
    for item in listed:
        try:
            network = ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValueError(f"{variable}: {item[:80]!r} is not an address range") from None
        if network.prefixlen == 0:
            raise ValueError(f"{variable}: {item!r} is every address, not the nodes' range")
        cidrs.append(str(network))
    return tuple(dict.fromkeys(cidrs))


def node_addresses(body: Mapping[str, Any]) -> tuple[str, ...]:
    """A Node's own addresses, each as a one-address CIDR: its InternalIP and ExternalIP, and
    the first address of each of its pod ranges, which bridge-type network plugins give the
    node itself (the pods' gateway). What does not parse is left out."""
    found: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    for entry in (body.get("status") or {}).get("addresses") or []:
        if isinstance(entry, Mapping) and entry.get("type") in ("InternalIP", "ExternalIP"):
            with contextlib.suppress(ValueError):
                found.append(ipaddress.ip_address(str(entry.get("address"))))
    spec = body.get("spec") or {}
    for pod_range in spec.get("podCIDRs") or [spec.get("podCIDR")]:
        with contextlib.suppress(ValueError):
            found.append(ipaddress.ip_network(str(pod_range)).network_address + 1)
    return tuple(dict.fromkeys(str(ipaddress.ip_network(address)) for address in found))


def with_nodes(
    configured: OperatorConfig, learned: Mapping[str, tuple[str, ...]]
) -> OperatorConfig:
    """The configuration with the addresses of the nodes seen so far added to its node CIDRs
    (sorted, so that a session's network policy does not change with the order nodes came)."""
    seen = sorted({cidr for addresses in learned.values() for cidr in addresses})
    return replace(configured, node_cidrs=tuple(dict.fromkeys((*configured.node_cidrs, *seen))))


def operator_config() -> OperatorConfig:
    """The operator's settings from its environment; ValueError names a malformed one."""
    defaults = OperatorConfig()
    storage = os.environ.get("GSHARE_OPERATOR_STORAGE_CLASS", "")
    return OperatorConfig(
        namespace=_name("GSHARE_OPERATOR_NAMESPACE", defaults.namespace),
        scheduler_name=os.environ.get("GSHARE_OPERATOR_SCHEDULER", defaults.scheduler_name),
        sessions_domain=os.environ.get("GSHARE_SESSIONS_DOMAIN", defaults.sessions_domain),
        auth_url=os.environ.get("GSHARE_SESSION_AUTH_URL", defaults.auth_url),
        signin_url=os.environ.get("GSHARE_SESSION_SIGNIN_URL", "") or defaults.signin_url,
        ingress_class=_name("GSHARE_OPERATOR_INGRESS_CLASS", defaults.ingress_class),
        ingress_namespace=_name("GSHARE_OPERATOR_INGRESS_NAMESPACE", defaults.ingress_namespace),
        # Empty: the cluster's default StorageClass.
        storage_class=_name("GSHARE_OPERATOR_STORAGE_CLASS", storage) if storage else None,
        node_cidrs=_node_cidrs("GSHARE_OPERATOR_NODE_CIDRS"),
    )


@kopf.on.login(registry=registry)
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """In a cluster, its service account; elsewhere (tests, demo), KUBECONFIG."""
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


@kopf.on.startup(registry=registry)
async def startup(memo: kopf.Memo, settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.persistence.finalizer = "gshare.io/operator"
    settings.posting.level = logging.WARNING
    configuration = client.Configuration()
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        await config.load_kube_config(client_configuration=configuration)
    try:
        memo.config = operator_config()
    except ValueError as exc:
        raise kopf.PermanentError(str(exc)) from exc
    memo.api = client.ApiClient(configuration)
    memo.refresher = StatusRefresher(memo.api, memo.config)
    memo.nodes = {}
    memo.node_shapes = {}  # node name -> what its traits are computed from
    memo.runtime_classes = {}  # RuntimeClass name -> its object (name and scheduling)
    memo.gpu_sessions = GpuSessions()
    # Every node's own addresses, before any session is reconciled: its egress never reaches
    # them. Kept current by `node_changed`.
    memo.node_addresses = {
        str((node.get("metadata") or {}).get("name")): node_addresses(node)
        for node in await kubeapi.nodes(memo.api)
    }
    try:
        metrics = configured(os.environ)
    except ValueError as exc:
        raise kopf.PermanentError(str(exc)) from exc
    target = report_target()
    memo.reporter = Reporter(target) if target else None
    memo.tasks = [_supervised(memo.refresher.run(), "the status writer")]
    if memo.reporter is not None:
        memo.tasks.append(_supervised(memo.reporter.run(), "reporting to the API"))
    else:
        log.warning(
            "GSHARE_OPERATOR_API_URL or _TOKEN_FILE unset: "
            "the GPU inventory and session statuses are not reported"
        )
    if metrics is not None and target is not None:
        url, source, interval = metrics
        reader = memo.gpu_sessions.reader(
            target, url, source, interval, namespace=memo.config.namespace
        )
        memo.tasks.append(_supervised(reader.run(), "reporting GPU utilization"))
    elif metrics is not None:
        log.warning("GPU utilization is not reported: there is no API to report it to")


def _supervised(work: Coroutine[Any, Any, None], what: str) -> asyncio.Task[None]:
    """A background task whose unexpected end is logged and stops the operator, so that it is
    restarted rather than left running without it."""
    task = asyncio.create_task(work)

    def ended(done: asyncio.Task[None]) -> None:
        if not done.cancelled():
            log.error("%s stopped: %r; the operator exits", what, done.exception())
            os.kill(os.getpid(), signal.SIGTERM)

    task.add_done_callback(ended)
    return task


def report_target() -> ReportTarget | None:
    url = os.environ.get("GSHARE_OPERATOR_API_URL")
    # Without a cluster id, the operator reports as the cluster its token speaks for.
    cluster = os.environ.get("GSHARE_OPERATOR_CLUSTER_ID", "")
    token_file = os.environ.get("GSHARE_OPERATOR_TOKEN_FILE")
    if not (url and token_file):
        return None
    return ReportTarget(url, cluster, Path(token_file))


@kopf.on.event("", "v1", "nodes", registry=registry)
async def node_changed(
    name: str, body: kopf.Body, meta: kopf.Meta, type: str | None, memo: kopf.Memo, **_: Any
) -> None:
    """Keep this cluster's inventory from HAMi's node annotations, with each node's isolation
    traits; report it shortly after a change, once for a burst of changes."""
    if type == "DELETED":
        memo.nodes.pop(name, None)
        memo.node_shapes.pop(name, None)
        memo.node_addresses.pop(name, None)
    else:
        memo.node_addresses[name] = node_addresses(body)
        inventory = parse_register(name, meta.get("annotations", {}).get(REGISTER_ANNOTATION))
        if inventory.problems:
            log.warning("node %s: %s", name, "; ".join(inventory.problems))
        if inventory.cards:
            shape = _node_shape(body)
            memo.node_shapes[name] = shape
            memo.nodes[name] = _with_traits(inventory, shape, memo.runtime_classes)
        else:
            memo.nodes.pop(name, None)
            memo.node_shapes.pop(name, None)
    if memo.reporter is not None:
        memo.reporter.inventory_changed(list(memo.nodes.values()))


def _node_shape(body: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a Node its traits come from (kept for when a RuntimeClass changes)."""
    return {
        "metadata": {"labels": dict((body.get("metadata") or {}).get("labels") or {})},
        "spec": {"taints": list((body.get("spec") or {}).get("taints") or [])},
        "status": {
            "runtimeHandlers": list((body.get("status") or {}).get("runtimeHandlers") or [])
        },
    }


def _with_traits(
    inventory: NodeInventory, shape: Mapping[str, Any], runtime_classes: Mapping[str, Any]
) -> NodeInventory:
    return replace(inventory, **asdict(node_traits(shape, runtime_classes.values())))


@kopf.on.event("node.k8s.io", "v1", "runtimeclasses", registry=registry)
async def runtime_class_changed(
    name: str, body: kopf.Body, type: str | None, memo: kopf.Memo, **_: Any
) -> None:
    """A RuntimeClass came, went or changed which nodes it schedules to: every node's traits
    are computed again and reported."""
    if type == "DELETED":
        memo.runtime_classes.pop(name, None)
    else:
        memo.runtime_classes[name] = {
            "metadata": {"name": name},
            "scheduling": dict(body.get("scheduling") or {}),
        }
    for node, inventory in list(memo.nodes.items()):
        shape = memo.node_shapes.get(node)
        if shape is not None:
            memo.nodes[node] = _with_traits(inventory, shape, memo.runtime_classes)
    if memo.reporter is not None:
        memo.reporter.inventory_changed(list(memo.nodes.values()))


@kopf.on.cleanup(registry=registry)
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    for task in memo.tasks:
        task.cancel()
    await memo.api.close()


def in_session_namespace(namespace: str | None, **_: Any) -> bool:
    # The operator runs cluster-wide (nodes are cluster-scoped) but serves sessions of one
    # namespace only.
    return namespace == operator_config().namespace


@kopf.on.resume(API_GROUP, API_VERSION, PLURAL, registry=registry, when=in_session_namespace)
@kopf.on.create(API_GROUP, API_VERSION, PLURAL, registry=registry, when=in_session_namespace)
@kopf.on.update(
    API_GROUP, API_VERSION, PLURAL, field="spec", registry=registry, when=in_session_namespace
)
async def reconcile_session(
    name: str,
    uid: str,
    meta: kopf.Meta,
    spec: kopf.Spec,
    memo: kopf.Memo,
    **_: Any,
) -> None:
    started, outcome = time.perf_counter(), "error"
    drift = None
    try:
        config = with_nodes(memo.config, memo.node_addresses)
        drift = await reconcile(memo.api, name=name, uid=uid, spec=spec, config=config)
        outcome = "ok"
    except SpecError as exc:
        outcome = "permanent_error"
        memo.refresher.mark(name, int(meta.get("generation", 0)))  # the status says why
        raise kopf.PermanentError(str(exc)) from exc
    except client.exceptions.ApiException as exc:
        if exc.status in (400, 422):
            outcome = "permanent_error"
            raise kopf.PermanentError(f"the cluster refused a child: {exc.reason}") from exc
        outcome = "temporary_error"
        raise kopf.TemporaryError(f"cluster call failed: {exc.reason}", delay=5) from exc
    finally:
        metrics.OPERATOR_HANDLERS.labels("reconcile", outcome).inc()
        metrics.OPERATOR_HANDLER_SECONDS.labels("reconcile").observe(time.perf_counter() - started)
    memo.refresher.mark(name, int(meta.get("generation", 0)), drift)


@kopf.on.event("", "v1", "pods", registry=registry, labels={SESSION_LABEL: kopf.PRESENT})
async def pod_changed(
    namespace: str | None, labels: kopf.Labels, memo: kopf.Memo, **_: Any
) -> None:
    """A session's pod started, became ready, failed or went away: its status follows."""
    if namespace == memo.config.namespace:
        memo.refresher.mark(resource_name(labels[SESSION_LABEL]))


def about_a_session_pod(body: kopf.Body, **_: Any) -> bool:
    involved = body.get("involvedObject") or {}
    return involved.get("kind") == "Pod" and str(involved.get("name", "")).startswith(
        SESSION_POD_PREFIX
    )


@kopf.on.event("", "v1", "events", registry=registry, when=about_a_session_pod)
async def pod_event(namespace: str | None, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """The scheduler or the kubelet said something about a session's pod (pulling its image,
    a failed mount): its start-up steps follow. A pull changes nothing in the pod itself."""
    if namespace == memo.config.namespace:
        memo.refresher.mark(str(body["involvedObject"]["name"]))


@kopf.on.event(API_GROUP, API_VERSION, PLURAL, registry=registry, when=in_session_namespace)
async def session_event(
    type: str | None, spec: kopf.Spec, status: kopf.Status, memo: kopf.Memo, **_: Any
) -> None:
    """Pass the resource's status on for the API (the reporter sends it if it is news), and
    follow which card the session holds."""
    session_id = session_id_of(spec.get("sessionId"))
    if session_id is None:
        return
    memo.gpu_sessions.follow(session_id, None if type == "DELETED" else spec)
    if memo.reporter is None:
        return
    if type == "DELETED":
        memo.reporter.session_gone(session_id)
        return
    current = {
        k: status.get(k)
        for k in (
            "phase",
            "message",
            "observedGeneration",
            "observedRevision",
            "startupSteps",
            "isolationDrift",
        )
    }
    if current["phase"]:
        memo.reporter.status_changed(session_id, current)


def run() -> None:
    try:
        namespace = operator_config().namespace
    except ValueError as exc:
        print(f"gshare operator: invalid configuration: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    kopf.configure(verbose=False)
    # Sessions' resources and pods are watched in their namespace only, so the operator needs
    # no right to read pods elsewhere; nodes, being cluster-scoped, are watched cluster-wide.
    kopf.run(registry=registry, standalone=True, namespaces=[namespace])
