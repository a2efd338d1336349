"""Isolation levels at the edge of capacity: which nodes are dedicated to whom, the incidents
operators report, and an organization's audit view (the refusal of a level nothing can meet is
the policy's, in service.py).

Placement itself applies the levels (isolation.py, placement.py); this module keeps the facts
it reads and says what happened. Everything here only flushes; the caller commits.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from gshare.capacity import repository
from gshare.capacity.models import IsolationIncident, NodeDedication
from gshare.capacity.service import capacity_changed
from gshare.clusters import service as clusters
from gshare.events.notifications import notify_user
from gshare.identity import service as identity
from gshare.identity.authz import Context, audit, require
from gshare.identity.permissions import Action, Scope
from gshare.kit.errors import Conflict, NotFound, Unprocessable
from gshare.kit.ids import new_id

AUDIT_DAYS = 30
NOTIFY_EVERY = timedelta(hours=1)
MAX_INCIDENTS = 200


# ---- nodes and dedications -----------------------------------------------------------------


@dataclass(frozen=True)
class NodeView:
    """A node with cards: what it reports, whom it is dedicated to, and whether the label and
    taint its pods rely on are in place."""

    cluster_id: uuid.UUID
    node: str
    cards: int
    usable_cards: int
    user_namespaces: bool
    runtime_classes: list[str]
    dedicated_label: str | None
    dedicated_tainted: bool
    reported_at: datetime | None
    dedication: NodeDedication | None


async def nodes(ctx: Context) -> list[NodeView]:
    require(ctx, Action.ISOLATION_MANAGE, target_type="node")
    by_place = {(d.cluster_id, d.node): d for d in await repository.dedications(ctx.db)}
    out = []
    for row in await repository.nodes(ctx.db):
        dedication = by_place.get((row.cluster_id, row.node)) or by_place.get(
            (row.cluster_id, None)
        )
        out.append(
            NodeView(
                row.cluster_id,
                row.node,
                row.cards,
                row.usable,
                bool(row.user_namespaces),
                list(row.runtime_classes or []),
                row.dedicated_label,
                bool(row.dedicated_tainted),
                row.reported_at,
                dedication,
            )
        )
    return out


async def dedications(ctx: Context) -> list[NodeDedication]:
    require(ctx, Action.ISOLATION_MANAGE, target_type="dedication")
    return await repository.dedications(ctx.db)


async def dedicate(
    ctx: Context,
    cluster_id: uuid.UUID,
    node: str | None,
    organization_id: uuid.UUID | None,
    group_id: uuid.UUID | None,
) -> NodeDedication:
    """Dedicate a node (every node of the cluster: None) to one organization or one group.
    Refused while a session holds a card there, or, for the whole cluster, runs there without
    one: its pod was made for a node nobody owned, and would be outside its level once the
    node is labelled and tainted. Drain the node first."""
    require(ctx, Action.ISOLATION_MANAGE, target_type="dedication")
    db = ctx.db
    if (organization_id is None) == (group_id is None):
        raise Unprocessable("Name either an organization or a group.", code="one_tenant")
    if not await clusters.cluster_exists(db, cluster_id):
        raise NotFound("No such cluster.", code="cluster_not_found")
    if node is not None and not await repository.node_known(db, cluster_id, node):
        raise NotFound(
            f"No node named {node!r} reports cards in this cluster.", code="node_not_found"
        )
    org_id = organization_id
    if group_id is not None:
        org_id = await identity.group_org(db, group_id)
        if org_id is None:
            raise NotFound("No such group.", code="group_not_found")
    elif organization_id is not None and not await identity.org_exists(db, organization_id):
        raise NotFound("No such organization.", code="org_not_found")
    tenant = group_id or organization_id
    # One dedication of a cluster at a time, so that a node's and its whole cluster's, made at
    # once, cannot both pass the check below.
    await repository.lock_cluster_dedications(db, cluster_id)
    for other in await repository.dedications_of_cluster(db, cluster_id):
        # A node's dedication inside a whole cluster's (or the other way round) must name the
        # same tenant, or the two would disagree on whose the node is.
        if (node is None or other.node is None) and other.tenant_id != tenant:
            raise Conflict(
                "Another tenant's dedication covers part of this; remove it first.",
                code="already_dedicated",
            )
    await _refuse_in_use(db, cluster_id, node, None, "dedicating it")
    values: dict[str, Any] = {
        "id": new_id(),
        "cluster_id": cluster_id,
        "node": node,
        "organization_id": organization_id,
        "group_id": group_id,
        "created_by": ctx.actor.user_id,
        "created_at": ctx.now,
    }
    if not await repository.add_dedication(db, values):
        where = "This node" if node else "This cluster"
        raise Conflict(
            f"{where} is already dedicated; remove that first.", code="already_dedicated"
        )
    await audit(
        ctx,
        "isolation.dedicate",
        target_type="dedication",
        target_id=values["id"],
        org_id=org_id,
        group_id=group_id,
        detail={"cluster_id": str(cluster_id), "node": node},
    )
    await capacity_changed(db, f"dedication {values['id']}")
    found = await repository.dedication(db, values["id"])
    assert found is not None
    return found


async def _refuse_in_use(
    db: AsyncSession,
    cluster_id: uuid.UUID,
    node: str | None,
    tenant: uuid.UUID | None,
    doing: str,
) -> None:
    """Refuse to change whose a node (every node of the cluster: None) is while sessions run
    there that were placed for what it was: sessions holding its cards, and sessions without a
    card on the cluster (for a whole cluster; or those that require `tenant`'s nodes).

    The cards' rows are locked first, as admission locks the card it commits to: an admission
    in flight onto the node either commits first (and is seen here) or, after this commits,
    reads the change and places for it."""
    await repository.lock_cards_of(db, cluster_id, node)
    holding = len(await repository.held_groups_on(db, cluster_id, node))
    cpu = 0
    if node is None or tenant is not None:
        cpu = await repository.cpu_sessions_on(db, cluster_id, tenant)
    if holding or cpu:
        where = "the node" if node else "the cluster"
        raise Conflict(
            f"Sessions run on {where} as it is now ({holding} group(s) holding cards, {cpu} "
            f"session(s) without a card); drain {where} and let them move before {doing}.",
            code="node_in_use",
        )


async def undedicate(ctx: Context, dedication_id: uuid.UUID) -> None:
    """Return a node to everyone. Refused while the tenant's sessions hold its cards, or run
    without a card on the tenant's nodes of the cluster: their pods require the node's label
    and tolerate its taint, which the administrator removes next. A tenant whose level is
    dedicated and that has no node left has its waiting requests refused."""
    require(ctx, Action.ISOLATION_MANAGE, target_type="dedication", target_id=dedication_id)
    found = await repository.dedication(ctx.db, dedication_id, lock=True)
    if found is None:
        raise NotFound("No such dedication.", code="dedication_not_found")
    await repository.lock_cluster_dedications(ctx.db, found.cluster_id)
    # Sessions without a card that require the tenant's nodes here still have one if another
    # of its dedications on the cluster stays.
    others = [
        d
        for d in await repository.dedications_of_cluster(ctx.db, found.cluster_id)
        if d.id != found.id and d.tenant_id == found.tenant_id
    ]
    tenant = None if others else found.tenant_id
    await _refuse_in_use(ctx.db, found.cluster_id, found.node, tenant, "giving it back")
    await ctx.db.delete(found)
    await audit(
        ctx,
        "isolation.undedicate",
        target_type="dedication",
        target_id=dedication_id,
        org_id=found.organization_id,
        group_id=found.group_id,
        detail={"cluster_id": str(found.cluster_id), "node": found.node},
    )
    await ctx.db.flush()
    await capacity_changed(ctx.db, f"dedication {dedication_id} removed")


# ---- incidents -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Drift:
    """A pod an operator found outside its session's level (and removed)."""

    reason: str
    node: str
    pod: str
    found_at: datetime


async def record_incident(
    db: AsyncSession,
    *,
    session_id: uuid.UUID,
    session_name: str,
    cluster_id: uuid.UUID,
    group_id: uuid.UUID | None,
    level: str,
    drift: Drift,
    now: datetime,
) -> bool:
    """Record what the operator found, once per pod and finding (whatever time each report
    gives), and tell the super admins and
    the organization's admins (at most once an hour per session). False for a finding
    recorded before."""
    org_id = None if group_id is None else await identity.group_org(db, group_id)
    added = await repository.add_incident(
        db,
        {
            "id": new_id(),
            "session_id": session_id,
            "cluster_id": cluster_id,
            "organization_id": org_id,
            "group_id": group_id,
            "level": level,
            "reason": drift.reason[:500],
            "node": drift.node[:253],
            "pod": drift.pod[:64],
            "found_at": drift.found_at,
            "reported_at": now,
        },
    )
    if not added:
        return False
    if await repository.incidents_since(db, session_id, now - NOTIFY_EVERY) > 1:
        return True  # told within the hour: a pod made again and again is one story
    told = set(await identity.super_admin_ids(db))
    if org_id is not None:
        told |= set(await identity.admin_ids(db, org_id=org_id))
    for user_id in sorted(told):
        await notify_user(
            db,
            user_id,
            "isolation.drift",
            title=f"A pod of session {session_name} left its isolation level",
            body=f"On node {drift.node or 'not yet chosen'}: {drift.reason} The operator "
            "removed it; it is made again at its level.",
            now=now,
            data={"session_id": str(session_id), "level": level},
        )
    return True


# ---- an organization's view ----------------------------------------------------------------


@dataclass(frozen=True)
class Placed:
    cluster_id: uuid.UUID
    node: str
    level: str
    runtime_class: str | None
    user_namespaces: bool
    dedicated_to: str | None
    sessions: int
    last_at: datetime


@dataclass(frozen=True)
class OrgIsolation:
    org_id: uuid.UUID
    level: str
    level_set_at: str  # the scope that sets it: global, organization, or default
    group_levels: dict[uuid.UUID, str]  # groups that set their own
    dedications: list[NodeDedication]
    placed: list[Placed]
    incidents: list[IsolationIncident]
    since: datetime


async def org_report(ctx: Context, org_id: uuid.UUID) -> OrgIsolation:
    """The organization's level, where its sessions ran in the last 30 days, and every pod
    found outside its level."""
    db = ctx.db
    # Asked before looking: a stranger learns nothing of which organizations exist.
    require(ctx, Action.ISOLATION_AUDIT, Scope(org_id=org_id), target_type="organization")
    if not await identity.org_exists(db, org_id):
        raise NotFound("No such organization.", code="org_not_found")
    since = ctx.now - timedelta(days=AUDIT_DAYS)
    groups = [g.id for g in await identity.groups_of_org(db, org_id)]
    level, set_at = "shared", "default"
    for kind, scope_id in (("global", None), ("organization", org_id)):
        row = await repository.policy(db, kind, scope_id)
        if row is not None and isinstance(row.values.get("isolation"), str):
            level, set_at = row.values["isolation"], kind
    group_levels: dict[uuid.UUID, str] = {}
    for group_id in groups:
        row = await repository.policy(db, "group", group_id)
        if row is not None and isinstance(row.values.get("isolation"), str):
            group_levels[group_id] = row.values["isolation"]
    tenants = {org_id, *groups}
    mine = [
        d for d in await repository.dedications(db) if (d.organization_id or d.group_id) in tenants
    ]
    placed = [
        Placed(
            r.cluster_id,
            r.node,
            r.level,
            r.runtime_class,
            r.user_namespaces == "true",
            r.dedicated_to,
            r.sessions,
            r.last_at,
        )
        for r in (await repository.placements_of(db, groups, since) if groups else [])
    ]
    incidents = await repository.incidents_of(db, groups, since, MAX_INCIDENTS) if groups else []
    return OrgIsolation(org_id, level, set_at, group_levels, mine, placed, incidents, since)
