"""Isolation levels on the node side: what a node offers (its traits, reported to the API) and
whether a session's pod is still inside its spec's level (its drift). Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gshare.operator.manifests import DEDICATED_KEY, SessionSpec

MAX_RUNTIME_CLASSES = 32  # what one node entry of the report carries
MAX_RUNTIME_CLASS_NAME = 253
MAX_LABEL_VALUE = 63
MAX_REASON = 500


@dataclass(frozen=True)
class NodeTraits:
    """What a node can do for isolation levels."""

    user_namespaces: bool = False
    runtime_classes: tuple[str, ...] = field(default=())
    dedicated_label: str | None = None  # the value of its gshare.io/dedicated label
    # Whether it is also tainted gshare.io/dedicated=<that value>:NoSchedule.
    dedicated_tainted: bool = False


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def user_namespaces_of(node_status: Mapping[str, Any]) -> bool:
    """Whether the node's default runtime handler (named ""; or, when none is, any handler)
    says it supports user namespaces."""
    handlers = [h for h in _list(node_status.get("runtimeHandlers")) if isinstance(h, Mapping)]
    default = [h for h in handlers if h.get("name", "") == ""]

    def supports(handler: Mapping[str, Any]) -> bool:
        return _mapping(handler.get("features")).get("userNamespaces") is True

    return any(supports(h) for h in (default or handlers))


def runtime_classes_of(
    node_labels: Mapping[str, Any], runtime_classes: Iterable[Mapping[str, Any]]
) -> tuple[str, ...]:
    """The names of the RuntimeClasses whose scheduling.nodeSelector the node's labels match
    (one with none matches every node), sorted, at most MAX_RUNTIME_CLASSES."""
    names: set[str] = set()
    for runtime_class in runtime_classes:
        name = _mapping(runtime_class.get("metadata")).get("name")
        if not isinstance(name, str) or not 0 < len(name) <= MAX_RUNTIME_CLASS_NAME:
            continue
        selector = _mapping(_mapping(runtime_class.get("scheduling")).get("nodeSelector"))
        if all(node_labels.get(k) == v for k, v in selector.items()):
            names.add(name)
    return tuple(sorted(names)[:MAX_RUNTIME_CLASSES])


def dedicated_of(node_labels: Mapping[str, Any], taints: Any) -> tuple[str | None, bool]:
    """(the node's gshare.io/dedicated label, when it is a label value; whether the node is
    also tainted with it, NoSchedule)."""
    label = node_labels.get(DEDICATED_KEY)
    if not isinstance(label, str) or not 0 < len(label) <= MAX_LABEL_VALUE:
        return None, False
    tainted = any(
        isinstance(t, Mapping)
        and t.get("key") == DEDICATED_KEY
        and t.get("value") == label
        and t.get("effect") == "NoSchedule"
        for t in _list(taints)
    )
    return label, tainted


def node_traits(
    node: Mapping[str, Any], runtime_classes: Iterable[Mapping[str, Any]]
) -> NodeTraits:
    """The traits of a Node object, given the cluster's RuntimeClass objects."""
    labels = _mapping(_mapping(node.get("metadata")).get("labels"))
    label, tainted = dedicated_of(labels, _mapping(node.get("spec")).get("taints"))
    return NodeTraits(
        user_namespaces=user_namespaces_of(_mapping(node.get("status"))),
        runtime_classes=runtime_classes_of(labels, runtime_classes),
        dedicated_label=label,
        dedicated_tainted=tainted,
    )


def _asks_for_dedicated(pod_spec: Mapping[str, Any], tenant: str) -> bool:
    """Whether the pod can only be scheduled on nodes labelled as the tenant's: by its
    nodeSelector, or by a required node affinity every term of which asks for them alone."""
    if _mapping(pod_spec.get("nodeSelector")).get(DEDICATED_KEY) == tenant:
        return True
    required = _mapping(
        _mapping(_mapping(pod_spec.get("affinity")).get("nodeAffinity")).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
    )
    terms = _list(required.get("nodeSelectorTerms"))

    def pins(term: Any) -> bool:
        return any(
            isinstance(e, Mapping)
            and e.get("key") == DEDICATED_KEY
            and e.get("operator") == "In"
            and e.get("values") == [tenant]
            for e in _list(_mapping(term).get("matchExpressions"))
        )

    return bool(terms) and all(pins(t) for t in terms)


def drift_of(
    pod: Mapping[str, Any], spec: SessionSpec, node_labels: Mapping[str, Any] | None
) -> str | None:
    """Why a session's pod found in the cluster is outside its spec's isolation level, or None
    when it is inside. `node_labels` are those of the pod's node, None when it has none yet (or
    the node is gone): only what the pod itself says is checked then."""
    wanted = spec.isolation
    pod_spec = _mapping(pod.get("spec"))
    if wanted.user_namespaces and pod_spec.get("hostUsers") is not False:
        return "the pod shares the node's user ids: user namespaces are wanted (hostUsers false)"
    if wanted.runtime_class and pod_spec.get("runtimeClassName") != wanted.runtime_class:
        found = pod_spec.get("runtimeClassName")
        return (
            f"the pod runs under runtime class {str(found)[:80]!r}, "
            f"not {wanted.runtime_class[:80]!r}"
        )
    node_tenant = (node_labels or {}).get(DEDICATED_KEY)
    if wanted.dedicated_to:
        if not _asks_for_dedicated(pod_spec, wanted.dedicated_to):
            return "the pod does not ask for the tenant's dedicated nodes"
        if node_labels is not None and node_tenant != wanted.dedicated_to:
            return "the pod's node is not dedicated to the session's tenant"
    elif node_tenant:
        return "the pod landed on a node dedicated to a tenant, and its level is not dedicated"
    return None


def drift_record(reason: str, pod: Mapping[str, Any], at: datetime) -> dict[str, str]:
    """The resource status's `isolationDrift` for a pod found drifting."""
    node = _mapping(pod.get("spec")).get("nodeName")
    uid = _mapping(pod.get("metadata")).get("uid")
    return {
        "reason": reason[:MAX_REASON],
        "node": node[:253] if isinstance(node, str) else "",
        "pod": uid[:64] if isinstance(uid, str) else "",
        "at": at.isoformat(),
    }
