"""Isolation levels: what each asks of a node, which cards a session may take, and what its pod is
told. Pure: no I/O.

A level is `shared`, `user-namespaced`, `sandboxed` or `dedicated`, or dedicated together with
one of the two in between (`dedicated+sandboxed`). Invariants:
- a card on a node dedicated to a tenant (an organization or a group) takes only sessions of that
  tenant, whatever their level; every other session sees no such card;
- a session at a dedicated level takes only cards dedicated to its tenant;
- a user-namespaced session takes only cards on nodes that run pods in user namespaces, a
  sandboxed one only cards on nodes that run the cluster's sandbox runtime class;
- a level no card anywhere can meet is named by `unmet`, so the request is refused with that
  reason rather than queued for ever.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

SHARED = "shared"
USER_NAMESPACED = "user-namespaced"
SANDBOXED = "sandboxed"
DEDICATED = "dedicated"


@dataclass(frozen=True)
class Isolation:
    """What a session's placement must respect: its level's needs and the tenants it belongs
    to (its organization and its group), whose dedicated cards it may use."""

    level: str = SHARED
    tenants: frozenset[uuid.UUID] = frozenset()

    @property
    def parts(self) -> frozenset[str]:
        return frozenset(self.level.split("+"))

    @property
    def dedicated(self) -> bool:
        return DEDICATED in self.parts

    @property
    def user_namespaces(self) -> bool:
        return USER_NAMESPACED in self.parts

    @property
    def sandboxed(self) -> bool:
        return SANDBOXED in self.parts


@dataclass(frozen=True)
class NodeTraits:
    """What a card's node offers: user namespaces, the cluster's sandbox runtime class
    (`sandbox`: its name, when the node runs it), and the tenant it is dedicated to."""

    user_namespaces: bool = False
    sandbox: str | None = None
    dedicated_to: uuid.UUID | None = None


SHARED_ISOLATION = Isolation()
PLAIN_NODE = NodeTraits()


def admits(traits: NodeTraits, isolation: Isolation) -> bool:
    """Whether a card on a node with these traits may take a session of this isolation."""
    if traits.dedicated_to is not None:
        if traits.dedicated_to not in isolation.tenants:
            return False
    elif isolation.dedicated:
        return False
    if isolation.user_namespaces and not traits.user_namespaces:
        return False
    return not (isolation.sandboxed and traits.sandbox is None)


def unmet(traits: Iterable[NodeTraits], isolation: Isolation) -> str | None:
    """Why no node of `traits` (every card of the model the session asks for) can meet the
    level, or None when one can."""
    found = list(traits)
    if any(admits(t, isolation) for t in found):
        return None
    level = isolation.level
    reachable = [t for t in found if t.dedicated_to is None or t.dedicated_to in isolation.tenants]
    if isolation.dedicated and not any(t.dedicated_to is not None for t in reachable):
        return (
            f"Isolation {level}: no node with this model is dedicated to your organization "
            "or group."
        )
    if isolation.user_namespaces and not any(t.user_namespaces for t in reachable):
        return f"Isolation {level}: no node with this model runs pods in user namespaces."
    if isolation.sandboxed and not any(t.sandbox for t in reachable):
        return f"Isolation {level}: no node with this model runs a sandboxed runtime class."
    return f"Isolation {level}: no node with this model meets every part of it."


def pod_isolation(isolation: Isolation, traits: NodeTraits) -> dict[str, Any]:
    """The `isolation` block of a session's resource, for a card on a node with `traits`: the
    pod runs in user namespaces or the sandbox runtime class when its level asks, and on a
    dedicated node it tolerates that node's taint and requires its label, whatever its level."""
    block: dict[str, Any] = {"level": isolation.level, "userNamespaces": isolation.user_namespaces}
    if isolation.sandboxed and traits.sandbox:
        block["runtimeClassName"] = traits.sandbox
    if traits.dedicated_to is not None:
        block["dedicatedTo"] = str(traits.dedicated_to)
    return block


@dataclass(frozen=True)
class ClusterOffer:
    """What a cluster offers a session without a card, whose pod the cluster's scheduler
    places: its sandbox class, whether the admin vouches every node runs user namespaces, the
    tenant the whole cluster is dedicated to, and the tenants some of its nodes are."""

    cluster_id: uuid.UUID
    sandbox: str | None = None
    user_namespaces: bool = False
    dedicated_to: uuid.UUID | None = None
    node_tenants: frozenset[uuid.UUID] = frozenset()
    drained: bool = False


def cpu_placement(
    offers: Sequence[ClusterOffer], isolation: Isolation, group_id: uuid.UUID | None = None
) -> tuple[uuid.UUID, NodeTraits] | None:
    """The cluster a session without a card runs on, and the traits its pod is made for: the
    first (a whole-cluster drain last, then by id) whose offer meets the level. A cluster
    dedicated whole to another tenant is never one; on one dedicated to the session's tenant
    the pod tolerates and requires its nodes; at a dedicated level the pod requires the
    tenant's dedicated nodes (its group's before its organization's)."""
    for offer in sorted(offers, key=lambda o: (o.drained, o.cluster_id)):
        dedicated_to = offer.dedicated_to
        if dedicated_to is None and isolation.dedicated:
            mine = sorted(offer.node_tenants & isolation.tenants, key=lambda t: t != group_id)
            dedicated_to = mine[0] if mine else None
        traits = NodeTraits(offer.user_namespaces, offer.sandbox, dedicated_to)
        if admits(traits, isolation):
            return offer.cluster_id, traits
    return None
