"""Queries on capacity's tables: cards, models and tiers, policies, requests, allocations and
fair-share usage."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import (
    Row,
    and_,
    any_,
    bindparam,
    delete,
    func,
    literal_column,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, UUID, insert
from sqlalchemy.ext.asyncio import AsyncSession

from gshare.capacity.isolation import ClusterOffer, NodeTraits
from gshare.capacity.models import (
    AdmissionRequest,
    Allocation,
    Booking,
    FairShareUsage,
    GpuCard,
    GpuModel,
    GpuNode,
    GpuTier,
    IsolationIncident,
    NodeDedication,
    ResourcePolicy,
)
from gshare.events import outbox

HELD = ("live", "lost")  # allocations that still hold their slot


def _ids(ids: Sequence[uuid.UUID]) -> Any:
    """Ids as one array parameter: a cluster may report more cards than a statement may have
    parameters."""
    return bindparam(None, list(ids), type_=ARRAY(UUID(as_uuid=True)))


# ---- cards ---------------------------------------------------------------------------------


async def cards_of(db: AsyncSession, cluster_id: uuid.UUID) -> list[GpuCard]:
    return list(
        await db.scalars(
            select(GpuCard)
            .where(GpuCard.cluster_id == cluster_id)
            .order_by(GpuCard.node, GpuCard.uuid)
        )
    )


async def card(db: AsyncSession, card_id: uuid.UUID, *, lock: bool = False) -> GpuCard | None:
    return await db.get(GpuCard, card_id, with_for_update=lock, populate_existing=lock)


async def card_counts(db: AsyncSession, cluster_ids: Sequence[uuid.UUID] | None) -> list[Any]:
    query = select(
        GpuCard.cluster_id,
        func.count(func.distinct(GpuCard.node)).label("nodes"),
        func.count().label("cards"),
        func.count().filter(GpuCard.healthy & ~GpuCard.missing).label("healthy"),
        func.count().filter(GpuCard.missing).label("missing"),
    ).group_by(GpuCard.cluster_id)
    if cluster_ids is not None:
        query = query.where(GpuCard.cluster_id.in_(list(cluster_ids)))
    return list(await db.execute(query))


async def set_card_fields(db: AsyncSession, rows: list[dict[str, Any]]) -> None:
    """Update cards by primary key, many at once (one executemany)."""
    if rows:
        await db.execute(update(GpuCard), rows)


async def add_cards(db: AsyncSession, rows: list[dict[str, Any]]) -> None:
    if rows:
        await db.execute(insert(GpuCard), rows)


async def mark_seen(db: AsyncSession, cluster_id: uuid.UUID, now: datetime) -> None:
    await db.execute(
        update(GpuCard)
        .where(GpuCard.cluster_id == cluster_id, ~GpuCard.missing)
        .values(last_seen_at=now)
        .execution_options(synchronize_session=False)
    )


async def forget_carvings(db: AsyncSession, card_ids: Sequence[uuid.UUID]) -> None:
    """Forget the carving of those of these cards that hold no allocation of it."""
    if card_ids:
        await db.execute(
            text(
                "UPDATE gpu_cards c SET carved_tier_id = NULL, carved_slots = NULL "
                "WHERE c.id = ANY(:ids) AND NOT EXISTS (SELECT 1 FROM gpu_allocations a "
                "WHERE a.live_card_id = c.id AND a.live_tier_id IS NOT NULL)"
            ),
            {"ids": list(card_ids)},
        )


_CLEAR_CARVING = text(
    "WITH cleared AS ("  # noqa: S608 (constants only)
    " UPDATE gpu_cards SET carved_tier_id = NULL, carved_slots = NULL WHERE id = :id "
    " AND NOT EXISTS (SELECT 1 FROM gpu_allocations WHERE live_card_id = :id "
    f"                 AND live_tier_id IS NOT NULL)), {outbox.RECORD_CTE} "
    "SELECT pg_notify(:channel, :payload)"
)


async def clear_carving(
    db: AsyncSession,
    card_id: uuid.UUID,
    channel: str,
    payload: str,
    events: Sequence[outbox.NewEvent] = (),
) -> None:
    """Forget an empty card's carving (it may be carved again; its row must be locked), record
    `events`, and announce on `channel`, once this transaction commits, that capacity was
    freed."""
    await db.execute(
        _CLEAR_CARVING,
        {"id": card_id, "channel": channel, "payload": payload, **outbox.params(events)},
    )
    if events:
        outbox.recorded(db)


# The statements of admission's hot path are written out once, so each call only binds and runs
# them (building and caching a statement per call costs more than running it).
# What a card's node offers and whose it is (isolation.NodeTraits): user namespaces when the
# node reports them or the admin vouches for its cluster; the cluster's sandbox runtime class
# when the node meets its scheduling constraints; the tenant of the node's dedication, else of
# its cluster's.
_TRAITS = (
    "(coalesce(n.user_namespaces, false) OR cl.user_namespaces) AS user_namespaces, "
    "CASE WHEN n.runtime_classes ? cl.sandbox_runtime_class "
    " THEN cl.sandbox_runtime_class END AS sandbox, "
    "coalesce(dn.group_id, dn.organization_id, dc.group_id, dc.organization_id) "
    " AS dedicated_to "
)
_TRAITS_JOIN = (
    "JOIN clusters cl ON cl.id = c.cluster_id "
    "LEFT JOIN gpu_nodes n ON n.cluster_id = c.cluster_id AND n.name = c.node "
    "LEFT JOIN node_dedications dn ON dn.cluster_id = c.cluster_id AND dn.node = c.node "
    "LEFT JOIN node_dedications dc ON dc.cluster_id = c.cluster_id AND dc.node IS NULL "
)
_SNAPSHOT = text(
    "SELECT c.id, c.cluster_id, c.node, c.model, c.memory_mib, c.split_count, c.pool, "  # noqa: S608
    "c.healthy, c.missing, c.carved_tier_id, c.carved_slots, c.mig_layout, "
    "(SELECT array_agg(a.slot) FROM gpu_allocations a "
    " WHERE a.live_card_id = c.id AND a.status IN ('live', 'lost')) AS taken, "
    + _TRAITS
    + "FROM gpu_cards c "
    + _TRAITS_JOIN
    + "WHERE c.cluster_id = ANY(:clusters) AND c.model = ANY(:models) "
    "AND c.healthy AND NOT c.missing AND NOT "
    # An active drain covers the card: its cluster, its node, or the card itself.
    "EXISTS (SELECT 1 FROM capacity_drains d WHERE d.status = 'active' "
    " AND d.cluster_id = c.cluster_id AND (d.scope = 'cluster' "
    " OR (d.scope = 'node' AND d.node = c.node) OR d.card_id = c.id)) "
    "ORDER BY c.id"
).columns(mig_layout=JSONB)
_CARD = text(
    "SELECT c.id, c.cluster_id, c.node, c.model, c.memory_mib, c.split_count, c.pool, "  # noqa: S608
    "c.healthy, c.missing, c.carved_tier_id, c.carved_slots, c.mig_layout, "
    "(SELECT array_agg(a.slot) FROM gpu_allocations a "
    " WHERE a.live_card_id = c.id AND a.status IN ('live', 'lost')) AS taken, "
    "EXISTS (SELECT 1 FROM capacity_drains d WHERE d.status = 'active' "
    " AND d.cluster_id = c.cluster_id AND (d.scope = 'cluster' "
    " OR (d.scope = 'node' AND d.node = c.node) OR d.card_id = c.id)) AS draining, "
    + _TRAITS
    + "FROM gpu_cards c "
    + _TRAITS_JOIN
    + "WHERE c.id = :id"
).columns(mig_layout=JSONB)
_LOCK_CARD = text("SELECT id FROM gpu_cards WHERE id = :id FOR UPDATE")


async def snapshot_rows(
    db: AsyncSession, cluster_ids: Sequence[uuid.UUID], models: Iterable[str]
) -> list[Row[Any]]:
    """Each usable card of these clusters and models with the slots its held allocations take
    (`taken`, a list or None), in one query."""
    found = await db.execute(_SNAPSHOT, {"clusters": list(cluster_ids), "models": list(models)})
    return list(found)


async def lock_card(db: AsyncSession, card_id: uuid.UUID) -> bool:
    return (await db.execute(_LOCK_CARD, {"id": card_id})).first() is not None


async def locked_card_row(db: AsyncSession, card_id: uuid.UUID) -> Row[Any] | None:
    """One card, its row locked, with the slots its held allocations take now.

    Two statements on purpose: a sub-select in the locking statement would read the slots as
    they were before the lock was granted, missing an allocation the lock's last holder wrote."""
    if not await lock_card(db, card_id):
        return None
    return (await db.execute(_CARD, {"id": card_id})).first()


# An admission's writes, in one statement: the card's carving (when `carve`), the request
# (when `new_request`), the allocation and the fair-share entry penalty (when `penalty` > 0).
# The allocation's foreign keys are checked at the end of the statement, after the carving.
_ADMITTED = text(
    "WITH carved AS ("  # noqa: S608 (constants only)
    " UPDATE gpu_cards SET carved_tier_id = :tier_id, carved_slots = :live_slots "
    " WHERE id = :card_id AND :carve RETURNING id), "
    "request AS ("
    " INSERT INTO admission_requests (id, user_id, group_id, tier_id, model, tier_name, "
    " cpu_millicores, memory_mib, cluster_id, session_id, status, reason, enqueued_at, "
    " decided_at) "
    " SELECT :request_id, :user_id, :group_id, :tier_id, :model, :tier_name, :cpu_millicores, "
    " :memory_mib, :pinned_cluster_id, :session_id, 'admitted', '', :admitted_at, :admitted_at "
    " WHERE :new_request RETURNING id), "
    "allocation AS ("
    " INSERT INTO gpu_allocations (id, request_id, user_id, group_id, cluster_id, card_id, "
    " tier_id, model, tier_name, slot, mig_profile, vram_mib, compute_percent, cpu_millicores, "
    " memory_mib, price_per_hour, hold_id, status, live_card_id, live_tier_id, live_slots, "
    " admitted_at, boundary) VALUES "
    " (:id, :request_id, :user_id, :group_id, :cluster_id, :card_id, :tier_id, :model, "
    " :tier_name, :slot, :mig_profile, :vram_mib, :compute_percent, :cpu_millicores, "
    " :memory_mib, :price_per_hour, :hold_id, :status, :live_card_id, :live_tier_id, "
    " :live_slots, :admitted_at, CAST(:boundary AS jsonb)) RETURNING id), "
    f"{outbox.RECORD_CTE} "
    "INSERT INTO fair_share_usage (subject_kind, subject_id, usage, sampled_at) "
    "SELECT kind, subject, CAST(:penalty AS double precision), :never "
    "FROM (VALUES ('user', CAST(:user_id AS uuid)), ('group', CAST(:group_id AS uuid)), "
    "  ('org', (SELECT org_id FROM groups WHERE id = CAST(:group_id AS uuid)))) "
    "AS s(kind, subject) WHERE CAST(:penalty AS double precision) > 0 AND subject IS NOT NULL "
    "ON CONFLICT (subject_kind, subject_id) "
    "DO UPDATE SET usage = fair_share_usage.usage + excluded.usage"
)


async def write_admission(
    db: AsyncSession,
    allocation: dict[str, Any],
    *,
    carve: bool,
    new_request: dict[str, Any] | None,
    penalty: float,
    never: datetime,
    events: Sequence[outbox.NewEvent] = (),
) -> None:
    """Write one admission (see `_ADMITTED`) and record `events`; `new_request` holds the
    request's model, tier name, CPU and memory when the request is new."""
    params = dict(allocation)
    params |= {
        "boundary": json.dumps(allocation.get("boundary")),
        "carve": carve,
        "new_request": new_request is not None,
        "pinned_cluster_id": (new_request or {}).get("cluster_id"),
        "session_id": (new_request or {}).get("session_id"),
        "penalty": penalty,
        "never": never,
        **outbox.params(events),
    }
    await db.execute(_ADMITTED, params)
    if events:
        outbox.recorded(db)


_INSERT_REQUEST = text(
    "INSERT INTO admission_requests (id, user_id, group_id, tier_id, model, tier_name, "
    "cpu_millicores, memory_mib, cluster_id, session_id, status, reason, enqueued_at, "
    "decided_at) VALUES "
    "(:id, :user_id, :group_id, :tier_id, :model, :tier_name, :cpu_millicores, :memory_mib, "
    ":cluster_id, :session_id, :status, :reason, :enqueued_at, :decided_at)"
)


async def insert_request(db: AsyncSession, values: dict[str, Any]) -> None:
    await db.execute(_INSERT_REQUEST, values)


_RELEASE = text(
    "WITH released AS ("
    " UPDATE gpu_allocations a SET status = 'released', released_at = :now, "
    " release_reason = :reason, live_card_id = NULL, live_tier_id = NULL, live_slots = NULL "
    " FROM (SELECT id, live_card_id FROM gpu_allocations WHERE request_id = :request_id "
    "       AND status IN ('live', 'lost') FOR UPDATE) held "
    " WHERE a.id = held.id RETURNING a.*, held.live_card_id AS held_card_id), "
    "locked AS (SELECT c.id FROM gpu_cards c JOIN released r ON c.id = r.held_card_id "
    "           FOR UPDATE OF c) "
    "SELECT released.* FROM released LEFT JOIN locked ON locked.id = released.held_card_id"
)


async def release_allocation(
    db: AsyncSession, request_id: uuid.UUID, now: datetime, reason: str
) -> tuple[Allocation, uuid.UUID | None] | None:
    """Release the request's held allocation and lock the card it held: the allocation,
    released, and that card's id (None for a CPU session); None when it held nothing."""
    row = (
        await db.execute(_RELEASE, {"request_id": request_id, "now": now, "reason": reason})
    ).first()
    if row is None:
        return None
    fields = dict(row._mapping)
    card_id = fields.pop("held_card_id")
    return Allocation(**fields), card_id


# ---- allocations ---------------------------------------------------------------------------


async def held_for_sessions(db: AsyncSession) -> dict[uuid.UUID, uuid.UUID]:
    """Each held allocation's request, with the session that asked for it (where one did)."""
    rows = await db.execute(
        select(Allocation.request_id, AdmissionRequest.session_id)
        .join(AdmissionRequest, AdmissionRequest.id == Allocation.request_id)
        .where(Allocation.status.in_(HELD), AdmissionRequest.session_id.is_not(None))
    )
    return {r.request_id: r.session_id for r in rows}


async def held_on_cards(db: AsyncSession, card_ids: Sequence[uuid.UUID]) -> list[Allocation]:
    if not card_ids:
        return []
    return list(
        await db.scalars(
            select(Allocation).where(
                Allocation.live_card_id == any_(_ids(card_ids)), Allocation.status.in_(HELD)
            )
        )
    )


async def reserved_cards(db: AsyncSession, card_ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
    """Which of these cards a queued request holds while they drain."""
    if not card_ids:
        return set()
    found = await db.scalars(
        select(AdmissionRequest.reserved_card_id).where(
            AdmissionRequest.status == "queued",
            AdmissionRequest.reserved_card_id == any_(_ids(card_ids)),
        )
    )
    return {card_id for card_id in found if card_id is not None}


async def held_count(db: AsyncSession, card_id: uuid.UUID) -> int:
    return int(
        await db.scalar(
            select(func.count()).where(
                Allocation.live_card_id == card_id, Allocation.status.in_(HELD)
            )
        )
        or 0
    )


async def held_on_cluster(db: AsyncSession, cluster_id: uuid.UUID) -> int:
    return int(
        await db.scalar(
            select(func.count())
            .select_from(Allocation)
            .join(GpuCard, GpuCard.id == Allocation.live_card_id)
            .where(GpuCard.cluster_id == cluster_id, Allocation.status.in_(HELD))
        )
        or 0
    )


_HELD_TOTALS_SQL = (
    "SELECT count(*) FILTER (WHERE card_id IS NOT NULL) AS held_sessions, "
    "coalesce(sum(vram_mib) FILTER (WHERE card_id IS NOT NULL), 0) AS held_vram, "
    "coalesce(sum(cpu_millicores), 0) AS held_millicores, "
    "coalesce(sum(memory_mib), 0) AS held_memory "
    "FROM gpu_allocations WHERE user_id = :user_id AND status IN ('live', 'lost')"
)


async def held_allocations(db: AsyncSession) -> list[Allocation]:
    return list(await db.scalars(select(Allocation).where(Allocation.status.in_(HELD))))


async def allocation_of(
    db: AsyncSession, request_id: uuid.UUID, *, lock: bool = False
) -> Allocation | None:
    query = select(Allocation).where(
        Allocation.request_id == request_id, Allocation.status.in_(HELD)
    )
    if lock:
        query = query.with_for_update()
    return (await db.scalars(query)).first()


async def lost_requests(db: AsyncSession, request_ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
    if not request_ids:
        return set()
    query = select(Allocation.request_id).where(
        Allocation.request_id.in_(list(request_ids)), Allocation.status == "lost"
    )
    return set(await db.scalars(query))


async def mark_lost(db: AsyncSession, card_ids: Sequence[uuid.UUID]) -> list[uuid.UUID]:
    """Live allocations on these cards become lost (their slots stay taken); their request ids."""
    if not card_ids:
        return []
    rows = await db.execute(
        update(Allocation)
        .where(Allocation.live_card_id == any_(_ids(card_ids)), Allocation.status == "live")
        .values(status="lost")
        .returning(Allocation.request_id)
    )
    return [r[0] for r in rows]


async def typical_seconds(
    db: AsyncSession, tier_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, float]:
    """The median length of each tier's last 50 finished allocations."""
    if not tier_ids:
        return {}
    rows = await db.execute(
        text(
            "SELECT tier_id, percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) FROM ("
            "  SELECT tier_id, extract(epoch FROM released_at - admitted_at) AS seconds,"
            "    row_number() OVER (PARTITION BY tier_id ORDER BY released_at DESC) AS n"
            "  FROM gpu_allocations WHERE status = 'released' AND tier_id = ANY(:ids)"
            ") recent WHERE n <= 50 GROUP BY tier_id"
        ),
        {"ids": list(tier_ids)},
    )
    return {r[0]: float(r[1]) for r in rows}


# ---- models and tiers ----------------------------------------------------------------------


async def all_models(db: AsyncSession) -> list[GpuModel]:
    return list(await db.scalars(select(GpuModel).order_by(GpuModel.name)))


async def model(db: AsyncSession, model_id: uuid.UUID, *, lock: bool = False) -> GpuModel | None:
    return await db.get(GpuModel, model_id, with_for_update=lock)


async def model_named(db: AsyncSession, name: str) -> GpuModel | None:
    return await db.scalar(select(GpuModel).where(GpuModel.name == name))


async def tiers(
    db: AsyncSession, model_ids: Sequence[uuid.UUID] | None = None, *, active_only: bool = True
) -> list[GpuTier]:
    query = select(GpuTier)
    if model_ids is not None:
        query = query.where(GpuTier.model_id.in_(list(model_ids)))
    if active_only:
        query = query.where(GpuTier.retired_at.is_(None))
    return list(await db.scalars(query.order_by(GpuTier.model_id, GpuTier.compute_percent)))


_TIER_COLUMNS = (
    "t.id, t.model_id, t.name, t.kind, t.denominator, t.mig_profile, t.vram_mib, "
    "t.compute_percent, t.price, t.price_is_default, t.created_at, t.retired_at, "
    "m.name AS model_name, m.memory_mib AS model_memory_mib, "
    "m.split_count AS model_split_count, m.exclusive_price AS model_exclusive_price, "
    "m.created_at AS model_created_at"
)
_TIER_WITH_MODEL = text(
    f"SELECT {_TIER_COLUMNS} "  # noqa: S608 (constants only)
    "FROM gpu_tiers t JOIN gpu_models m ON m.id = t.model_id WHERE t.id = :id"
)


async def tier_with_model(db: AsyncSession, tier_id: uuid.UUID) -> tuple[GpuTier, GpuModel] | None:
    """A tier and its model, read in one query (as detached rows: for reading only)."""
    found = (await db.execute(_TIER_WITH_MODEL, {"id": tier_id})).first()
    return None if found is None else _tier_and_model(dict(found._mapping))


def _tier_and_model(f: dict[str, Any]) -> tuple[GpuTier, GpuModel]:
    """A tier and its model from a row of `_TIER_COLUMNS`."""
    model = GpuModel(
        id=f["model_id"],
        name=f.pop("model_name"),
        memory_mib=f.pop("model_memory_mib"),
        split_count=f.pop("model_split_count"),
        exclusive_price=f.pop("model_exclusive_price"),
        created_at=f.pop("model_created_at"),
    )
    return GpuTier(**f), model


async def tier(db: AsyncSession, tier_id: uuid.UUID) -> GpuTier | None:
    return await db.get(GpuTier, tier_id)


async def tiers_by_id(db: AsyncSession, ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, GpuTier]:
    wanted = list(set(ids))
    if not wanted:
        return {}
    return {t.id: t for t in await db.scalars(select(GpuTier).where(GpuTier.id.in_(wanted)))}


async def model_has_cards(db: AsyncSession, name: str) -> bool:
    """Whether any card of the model is known, usable now or not."""
    found = await db.scalar(select(GpuCard.id).where(GpuCard.model == name).limit(1))
    return found is not None


_MODEL_TRAITS = text(
    "SELECT DISTINCT " + _TRAITS + "FROM gpu_cards c " + _TRAITS_JOIN + "WHERE c.model = :model "
    "AND (CAST(:cluster AS uuid) IS NULL OR c.cluster_id = CAST(:cluster AS uuid))"
)


async def put_nodes(
    db: AsyncSession, cluster_id: uuid.UUID, nodes: list[dict[str, Any]], now: datetime
) -> bool:
    """Keep the cluster's nodes as reported, forgetting nodes no longer reported; True when a
    node's traits changed (what sessions may run where changed with them)."""
    old = {
        n.name: n
        for n in (await db.scalars(select(GpuNode).where(GpuNode.cluster_id == cluster_id)))
    }
    fields = ("user_namespaces", "runtime_classes", "dedicated_label", "dedicated_tainted")
    changed = {n["name"] for n in nodes} != set(old) or any(
        any(getattr(old[n["name"]], f) != n[f] for f in fields) for n in nodes
    )
    if not changed:
        return False
    await db.execute(delete(GpuNode).where(GpuNode.cluster_id == cluster_id))
    if nodes:
        await db.execute(
            insert(GpuNode), [n | {"cluster_id": cluster_id, "reported_at": now} for n in nodes]
        )
    return True


def traits_of(row: Any) -> NodeTraits:
    """A node's traits from a row carrying `_TRAITS`."""
    return NodeTraits(row.user_namespaces, row.sandbox, row.dedicated_to)


async def model_traits(
    db: AsyncSession, name: str, cluster_id: uuid.UUID | None = None
) -> list[NodeTraits]:
    """The distinct traits of the nodes of every known card of the model (on that cluster, when
    one is named), usable now or not."""
    params = {"model": name, "cluster": str(cluster_id) if cluster_id else None}
    return [traits_of(r) for r in await db.execute(_MODEL_TRAITS, params)]


async def model_cards(db: AsyncSession, name: str) -> tuple[int | None, int | None]:
    """The smallest memory and split count among the present cards of a model."""
    row = (
        await db.execute(
            select(func.min(GpuCard.memory_mib), func.min(GpuCard.split_count)).where(
                GpuCard.model == name, ~GpuCard.missing
            )
        )
    ).one()
    return row[0], row[1]


# ---- policies ------------------------------------------------------------------------------


async def policy(db: AsyncSession, kind: str, scope_id: uuid.UUID | None) -> ResourcePolicy | None:
    query = select(ResourcePolicy).where(ResourcePolicy.scope_kind == kind)
    query = query.where(
        ResourcePolicy.scope_id.is_(None)
        if scope_id is None
        else ResourcePolicy.scope_id == scope_id
    )
    return await db.scalar(query)


async def put_policy(
    db: AsyncSession,
    kind: str,
    scope_id: uuid.UUID | None,
    values: dict[str, Any],
    now: datetime,
    by: uuid.UUID | None,
    new_id: uuid.UUID,
) -> None:
    """Insert or replace one scope's policy, race-free."""
    where = text("scope_id IS NULL") if scope_id is None else text("scope_id IS NOT NULL")
    elements = ["scope_kind"] if scope_id is None else ["scope_kind", "scope_id"]
    await db.execute(
        insert(ResourcePolicy)
        .values(
            id=new_id,
            scope_kind=kind,
            scope_id=scope_id,
            values=values,
            updated_at=now,
            updated_by=by,
        )
        .on_conflict_do_update(
            index_elements=elements,
            index_where=where,
            set_={"values": values, "updated_at": now, "updated_by": by},
        )
    )


async def delete_policy(db: AsyncSession, kind: str, scope_id: uuid.UUID | None) -> bool:
    """Delete a scope's policy; False when there was none (a concurrent delete got it)."""
    query = delete(ResourcePolicy).where(ResourcePolicy.scope_kind == kind)
    query = query.where(
        ResourcePolicy.scope_id.is_(None)
        if scope_id is None
        else ResourcePolicy.scope_id == scope_id
    )
    deleted = await db.execute(
        query.returning(ResourcePolicy.id).execution_options(synchronize_session=False)
    )
    return deleted.first() is not None


# A user's own policy applies in an organization only where whoever set it may set it: a super
# admin's everywhere, an organization admin's in the organizations they administer, so that a
# user who joins another organization does not carry one organization's terms into it.
_SET_EVERYWHERE = (
    "(updated_by IS NULL OR EXISTS (SELECT 1 FROM users s "
    "WHERE s.id = updated_by AND s.is_super_admin))"
)
_SETTER_ORGS = (
    "ARRAY(SELECT a.org_id FROM admin_grants a "
    "WHERE a.user_id = updated_by AND a.role = 'org_admin')"
)
_POLICIES_OF = (
    "(scope_kind = 'global' AND scope_id IS NULL) "
    "OR (scope_kind = 'organization' AND scope_id = :org_id) "
    "OR (scope_kind = 'group' AND scope_id = :group_id) "
    f"OR (scope_kind = 'user' AND scope_id = :user_id AND ({_SET_EVERYWHERE} "
    f"OR :org_id = ANY({_SETTER_ORGS})))"
)
_POLICIES = text(
    f"SELECT scope_kind, scope_id, values FROM resource_policies WHERE {_POLICIES_OF}"  # noqa: S608
).columns(values=JSONB)


# A notice `n` given ahead of booking `b`'s window is for one of its windows' starts as the
# booking stands now: moved or cancelled, the booking no longer counts on it.
AT_A_WINDOW_START = (
    "(n.deadline = b.starts_at OR (b.weekly_until IS NOT NULL AND n.deadline > b.starts_at "
    "AND n.deadline < b.weekly_until "
    "AND mod(CAST(extract(epoch FROM n.deadline - b.starts_at) AS numeric), 604800) = 0))"
)
# Cards being freed or freed for a booking ahead of its window (its notices pending, paused
# or freed), held for its members until its notice has passed again after the start, for at
# most HOLD_AFTER_START_MINUTES: a long notice must not leave the cards idle for hours.
HOLD_AFTER_START_MINUTES = 15
_BOOKED_HOLDS_SQL = (
    "SELECT DISTINCT n.card_id, n.booking_id FROM capacity_notices n "  # noqa: S608
    "JOIN capacity_bookings b ON b.id = n.booking_id AND b.status = 'active' "
    f"AND {AT_A_WINDOW_START} "
    "WHERE n.booking_id IS NOT NULL AND n.card_id IS NOT NULL "
    "AND n.status IN ('pending', 'paused', 'freed') "
    f"AND n.deadline > CAST(:now AS timestamptz) - interval '{HOLD_AFTER_START_MINUTES} min' "
    "AND CAST(:now AS timestamptz) < n.deadline "
    f"+ make_interval(mins => least(b.notice_minutes, {HOLD_AFTER_START_MINUTES}))"
)
_QUEUE_FACTS_SQL = (
    "SELECT coalesce(bool_or(tier_id = :tier_id), false) AS tier_waiting, "  # noqa: S608
    "array_agg(reserved_card_id) FILTER (WHERE reserved_card_id IS NOT NULL) AS reserved_cards, "
    "array_agg(id) FILTER (WHERE reserved_card_id IS NOT NULL) AS reserved_for, "
    f"(SELECT array_agg(h.card_id ORDER BY h.card_id) FROM ({_BOOKED_HOLDS_SQL}) h) "
    "AS booked_cards, "
    f"(SELECT array_agg(h.booking_id ORDER BY h.card_id) FROM ({_BOOKED_HOLDS_SQL}) h) "
    "AS booked_for "
    "FROM admission_requests WHERE status = 'queued'"
)
_QUEUE_FACTS = text(_QUEUE_FACTS_SQL)


@dataclass(frozen=True)
class Holds:
    """Cards no request may take but the one they are held for: for a starving or promised
    queued request (card id -> request id), and for a booking's members (card id -> booking
    id, see `_BOOKED_HOLDS_SQL`)."""

    reserved: dict[uuid.UUID, uuid.UUID] = field(default_factory=dict)
    booked: dict[uuid.UUID, uuid.UUID] = field(default_factory=dict)


def _queue_facts(tier_id: uuid.UUID | None, row: dict[str, Any]) -> tuple[bool, Holds]:
    reserved = zip(row.pop("reserved_cards") or [], row.pop("reserved_for") or [], strict=True)
    booked = zip(row.pop("booked_cards") or [], row.pop("booked_for") or [], strict=True)
    waiting = bool(row.pop("tier_waiting")) and tier_id is not None
    return waiting, Holds(dict(reserved), dict(booked))


class PolicyRow(NamedTuple):
    scope_kind: str
    scope_id: uuid.UUID | None
    values: dict[str, Any]


@dataclass(frozen=True)
class AdmissionFacts:
    """What admitting a request of a user in a group reads before placing it."""

    tier: tuple[GpuTier, GpuModel] | None  # the asked tier and its model; None when not found
    policies: list[PolicyRow]  # the global policy and those of the organization, group, user
    # what the user's held allocations add up to: GPU sessions, their VRAM, CPU millicores and
    # memory
    held: tuple[int, int, int, int]
    queue: tuple[bool, Holds] | None  # `queue_facts`, when asked for


def _admission_facts(queue: bool) -> Any:
    """What the user holds, `policies_for`, `tier_with_model` and, with `queue`, `queue_facts`,
    in one round trip: the hot path."""
    return text(
        f"WITH held AS ({_HELD_TOTALS_SQL}), "  # noqa: S608 (constants only)
        "layers AS (SELECT coalesce(jsonb_agg(jsonb_build_array(scope_kind, scope_id, values)), "
        f"'[]'::jsonb) AS layers FROM resource_policies WHERE {_POLICIES_OF}) "
        + (f", queue AS ({_QUEUE_FACTS_SQL}) " if queue else "")
        + f"SELECT held.*, layers.layers, {_TIER_COLUMNS}"
        + (", queue.* FROM held, queue, layers " if queue else " FROM held, layers ")
        + "LEFT JOIN (gpu_tiers t JOIN gpu_models m ON m.id = t.model_id) ON t.id = :tier_id"
    ).columns(layers=JSONB)


_ADMISSION_FACTS = {queue: _admission_facts(queue) for queue in (False, True)}


async def admission_facts(
    db: AsyncSession,
    tier_id: uuid.UUID | None,
    org_id: uuid.UUID,
    group_id: uuid.UUID,
    user_id: uuid.UUID,
    *,
    queue: datetime | None = None,
) -> AdmissionFacts:
    """With `queue` (now), the queue's facts too (`queue_facts`)."""
    params: dict[str, Any] = {
        "tier_id": tier_id,
        "org_id": org_id,
        "group_id": group_id,
        "user_id": user_id,
    }
    if queue is not None:
        params["now"] = queue
    found = (await db.execute(_ADMISSION_FACTS[queue is not None], params)).one()
    f = dict(found._mapping)
    queued = None if queue is None else _queue_facts(tier_id, f)
    held = (
        int(f.pop("held_sessions")),
        int(f.pop("held_vram")),
        int(f.pop("held_millicores")),
        int(f.pop("held_memory")),
    )
    policies = [
        PolicyRow(kind, None if scope is None else uuid.UUID(scope), values)
        for kind, scope, values in f.pop("layers")
    ]
    return AdmissionFacts(None if f["id"] is None else _tier_and_model(f), policies, held, queued)


async def policies_for(
    db: AsyncSession, org_id: uuid.UUID, group_id: uuid.UUID, user_id: uuid.UUID
) -> list[Row[Any]]:
    """The global policy and those of this organization, group and user: rows of
    (scope_kind, scope_id, values)."""
    found = await db.execute(
        _POLICIES, {"org_id": org_id, "group_id": group_id, "user_id": user_id}
    )
    return list(found)


async def policies_of_scopes(
    db: AsyncSession,
    org_ids: Sequence[uuid.UUID],
    group_ids: Sequence[uuid.UUID],
    user_ids: Sequence[uuid.UUID],
) -> list[Row[Any]]:
    """The global policy and those of any of these organizations, groups and users, in one
    query: rows of (scope_kind, scope_id, values, everywhere, in_orgs): a user's policy applies
    everywhere, or only in the organizations `in_orgs` names (see `_POLICIES_OF`)."""
    found = await db.execute(
        select(
            ResourcePolicy.scope_kind,
            ResourcePolicy.scope_id,
            ResourcePolicy.values,
            literal_column(_SET_EVERYWHERE).label("everywhere"),
            literal_column(_SETTER_ORGS).label("in_orgs"),
        ).where(
            or_(
                ResourcePolicy.scope_kind == "global",
                and_(
                    ResourcePolicy.scope_kind == "organization",
                    ResourcePolicy.scope_id.in_(list(set(org_ids))),
                ),
                and_(
                    ResourcePolicy.scope_kind == "group",
                    ResourcePolicy.scope_id.in_(list(set(group_ids))),
                ),
                and_(
                    ResourcePolicy.scope_kind == "user",
                    ResourcePolicy.scope_id.in_(list(set(user_ids))),
                ),
            )
        )
    )
    return list(found)


# ---- requests ------------------------------------------------------------------------------


_REQUEST_EXISTS = text("SELECT 1 FROM admission_requests WHERE id = :id")


async def request_exists(db: AsyncSession, request_id: uuid.UUID) -> bool:
    return (await db.execute(_REQUEST_EXISTS, {"id": request_id})).first() is not None


async def request(
    db: AsyncSession, request_id: uuid.UUID, *, lock: bool = False
) -> AdmissionRequest | None:
    return await db.get(AdmissionRequest, request_id, with_for_update=lock, populate_existing=lock)


async def queued(db: AsyncSession) -> list[AdmissionRequest]:
    return list(
        await db.scalars(
            select(AdmissionRequest)
            .where(AdmissionRequest.status == "queued")
            .order_by(AdmissionRequest.enqueued_at, AdmissionRequest.id)
        )
    )


async def lock_queued(db: AsyncSession, ids: Sequence[uuid.UUID]) -> list[AdmissionRequest]:
    """These requests, those still queued, locked in id order for the caller's walk, less any
    another transaction holds now; in queue order."""
    if not ids:
        return []
    query = (
        select(AdmissionRequest)
        .where(AdmissionRequest.id == any_(_ids(ids)), AdmissionRequest.status == "queued")
        .order_by(AdmissionRequest.id)
        .with_for_update(skip_locked=True)
        .execution_options(populate_existing=True)
    )
    rows = list(await db.scalars(query))
    return sorted(rows, key=lambda r: (r.enqueued_at, r.id))


async def requests_of(
    db: AsyncSession,
    *,
    user_id: uuid.UUID | None = None,
    group_ids: Sequence[uuid.UUID] | None = None,
    statuses: Sequence[str] | None = None,
    limit: int = 200,
) -> list[AdmissionRequest]:
    query = select(AdmissionRequest)
    if user_id is not None:
        query = query.where(AdmissionRequest.user_id == user_id)
    if group_ids is not None:
        query = query.where(AdmissionRequest.group_id.in_(list(group_ids)))
    if statuses is not None:
        query = query.where(AdmissionRequest.status.in_(list(statuses)))
    query = query.order_by(AdmissionRequest.enqueued_at.desc(), AdmissionRequest.id).limit(limit)
    return list(await db.scalars(query))


async def queue_facts(
    db: AsyncSession, tier_id: uuid.UUID | None, now: datetime
) -> tuple[bool, Holds]:
    """Whether a request of the tier is queued, and the cards held (`Holds`), in one query."""
    row = (await db.execute(_QUEUE_FACTS, {"tier_id": tier_id, "now": now})).one()
    return _queue_facts(tier_id, dict(row._mapping))


async def promised_requests(db: AsyncSession, request_ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
    """Those of these requests a card is being freed for (a pending preemption notice)."""
    if not request_ids:
        return set()
    found = await db.execute(
        text(
            "SELECT DISTINCT request_id FROM capacity_notices "
            "WHERE status = 'pending' AND request_id = ANY(:ids)"
        ),
        {"ids": list(request_ids)},
    )
    return {row[0] for row in found}


async def ended_requests(db: AsyncSession, ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
    """Which of these requests were decided and hold nothing now (released, or never placed)."""
    if not ids:
        return set()
    held = (
        select(Allocation.id)
        .where(Allocation.request_id == AdmissionRequest.id, Allocation.status.in_(HELD))
        .exists()
    )
    found = await db.scalars(
        select(AdmissionRequest.id).where(
            AdmissionRequest.id.in_(list(ids)), AdmissionRequest.status != "queued", ~held
        )
    )
    return set(found)


async def lock_queue(db: AsyncSession) -> None:
    """One dequeue at a time, whatever the number of API and worker processes."""
    await db.execute(text("SELECT pg_advisory_xact_lock(hashtext('gshare.capacity.dequeue'))"))


async def try_lock_forecasts(db: AsyncSession) -> bool:
    """One forecast refresh at a time: False when another process is refreshing now."""
    return bool(
        await db.scalar(
            text("SELECT pg_try_advisory_xact_lock(hashtext('gshare.capacity.forecast'))")
        )
    )


async def lock_user(db: AsyncSession, user_id: uuid.UUID) -> None:
    """Admissions of one user are taken one at a time, so quotas cannot be raced past."""
    await db.execute(
        text("SELECT pg_advisory_xact_lock(hashtext('gshare.capacity.user'), hashtext(:u))"),
        {"u": str(user_id)},
    )


# ---- fair share ----------------------------------------------------------------------------


async def lock_usage_shared(db: AsyncSession) -> None:
    """Taken by an admission before it adds its entry penalty to the usage rows, so that it
    waits for a sampling in progress (which holds this lock alone, `lock_sampling`) instead of
    locking the same rows in another order."""
    await db.execute(text("SELECT pg_advisory_xact_lock_shared(hashtext('gshare.capacity.usage'))"))


async def lock_sampling(db: AsyncSession) -> None:
    await db.execute(text("SELECT pg_advisory_xact_lock(hashtext('gshare.capacity.usage'))"))


async def usage(db: AsyncSession) -> list[FairShareUsage]:
    return list(await db.scalars(select(FairShareUsage)))


async def last_sampled(db: AsyncSession) -> datetime | None:
    return await db.scalar(select(func.max(FairShareUsage.sampled_at)))


async def store_usage(db: AsyncSession, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    stmt = insert(FairShareUsage).values(rows)
    await db.execute(
        stmt.on_conflict_do_update(
            index_elements=["subject_kind", "subject_id"],
            set_={"usage": stmt.excluded.usage, "sampled_at": stmt.excluded.sampled_at},
        )
    )


# ---- bookings ------------------------------------------------------------------------------


async def lock_bookings(db: AsyncSession, org_id: uuid.UUID, model: str) -> None:
    """Bookings are decided one at a time per organization (its weekly quota), then per model
    (its capacity): the organization's lock first, always."""
    await db.execute(
        text(
            "SELECT pg_advisory_xact_lock(hashtext('gshare.capacity.booking.org'), "
            "hashtext(:org)), pg_advisory_xact_lock(hashtext('gshare.capacity.booking.model'), "
            "hashtext(:model))"
        ),
        {"org": str(org_id), "model": model},
    )


def _ending_after(moment: datetime) -> Any:
    """Bookings whose last window may end after `moment` (a weekly one's last start is before
    its `weekly_until`)."""
    last_end = func.coalesce(
        Booking.weekly_until + (Booking.ends_at - Booking.starts_at), Booking.ends_at
    )
    return last_end > moment


async def active_bookings(
    db: AsyncSession,
    *,
    model: str | None = None,
    org_id: uuid.UUID | None = None,
    ending_after: datetime,
) -> list[Booking]:
    """Active bookings of a model or an organization that may still hold capacity after
    `ending_after`."""
    query = select(Booking).where(Booking.status == "active", _ending_after(ending_after))
    if model is not None:
        query = query.where(Booking.model == model)
    if org_id is not None:
        query = query.where(Booking.org_id == org_id)
    return list(await db.scalars(query))


async def bookings(
    db: AsyncSession,
    *,
    group_ids: Sequence[uuid.UUID] | None,
    org_ids: Sequence[uuid.UUID] | None,
    model: str | None,
    group_id: uuid.UUID | None,
    ending_after: datetime | None,
    limit: int = 500,
) -> list[Booking]:
    """Bookings of these groups or of any group of these organizations (all when both are
    None), soonest first; with `ending_after`, active ones that may still run after it."""
    query = select(Booking)
    if group_ids is not None or org_ids is not None:
        query = query.where(
            or_(
                Booking.group_id == any_(_ids(list(group_ids or []))),
                Booking.org_id == any_(_ids(list(org_ids or []))),
            )
        )
    if model is not None:
        query = query.where(Booking.model == model)
    if group_id is not None:
        query = query.where(Booking.group_id == group_id)
    if ending_after is not None:
        query = query.where(Booking.status == "active", _ending_after(ending_after))
    query = query.order_by(Booking.starts_at, Booking.id).limit(limit)
    return list(await db.scalars(query))


async def booking(db: AsyncSession, booking_id: uuid.UUID, *, lock: bool = False) -> Booking | None:
    return await db.get(Booking, booking_id, with_for_update=lock, populate_existing=lock)


async def add_booking(db: AsyncSession, row: Booking) -> None:
    db.add(row)
    await db.flush()


async def tiers_with_models(
    db: AsyncSession, ids: Iterable[uuid.UUID]
) -> dict[uuid.UUID, tuple[GpuTier, GpuModel]]:
    """Tiers (retired ones too) with their models, by tier id, in one query."""
    wanted = list(set(ids))
    if not wanted:
        return {}
    found = await db.execute(
        select(GpuTier, GpuModel)
        .join(GpuModel, GpuModel.id == GpuTier.model_id)
        .where(GpuTier.id == any_(_ids(wanted)))
    )
    return {tier.id: (tier, model) for tier, model in found}


async def held_by_group_and_tier(
    db: AsyncSession, pairs: Iterable[tuple[uuid.UUID, uuid.UUID]]
) -> dict[tuple[uuid.UUID, uuid.UUID], int]:
    """How many allocations each (group, tier) holds now, in one query."""
    wanted = list(set(pairs))
    if not wanted:
        return {}
    found = await db.execute(
        text(
            "SELECT a.group_id, a.tier_id, count(*) FROM gpu_allocations a "
            "JOIN unnest(CAST(:groups AS uuid[]), CAST(:tiers AS uuid[])) AS p(g, t) "
            "ON a.group_id = p.g AND a.tier_id = p.t "
            "WHERE a.status IN ('live', 'lost') GROUP BY a.group_id, a.tier_id"
        ),
        {"groups": [g for g, _ in wanted], "tiers": [t for _, t in wanted]},
    )
    return {(g, t): int(n) for g, t, n in found}


# ---- start forecasts -----------------------------------------------------------------------

_FORECAST_STATE = text(
    "SELECT md5(concat_ws('|', "
    " (SELECT string_agg(concat(id, tier_id, cluster_id), ',' ORDER BY id) "
    "  FROM admission_requests WHERE status = 'queued'), "
    " (SELECT string_agg(concat(id, card_id), ',' ORDER BY id) FROM gpu_allocations "
    "  WHERE status = 'live' AND card_id IS NOT NULL), "
    " (SELECT string_agg(concat(id, deadline), ',' ORDER BY id) FROM capacity_notices "
    "  WHERE status = 'pending'))), "
    "(SELECT count(*) FROM admission_requests WHERE status = 'queued' AND tier_id IS NOT NULL)"
)


async def forecast_state(db: AsyncSession) -> tuple[str, int]:
    """A digest of what a start forecast depends on that changes between queue turns (who
    waits, what runs where, the pending notices' deadlines), computed in the database, and how
    many GPU requests wait."""
    digest, waiting = (await db.execute(_FORECAST_STATE)).one()
    return str(digest), int(waiting)


_FORECAST_RUNNING = text(
    "SELECT a.card_id, a.tier_id, a.user_id, a.admitted_at, a.mig_profile, "
    "  (SELECT min(n.deadline) FROM capacity_notices n "
    "   WHERE n.allocation_id = a.id AND n.status = 'pending') AS ends_by "
    "FROM gpu_allocations a WHERE a.status = 'live' AND a.card_id IS NOT NULL"
)


async def forecast_running(db: AsyncSession) -> list[Any]:
    """Every live session on a card: its card, tier, owner, start, MIG profile and the
    deadline of a pending notice on it (None: none)."""
    return list(await db.execute(_FORECAST_RUNNING))


async def recent_lengths(
    db: AsyncSession, tier_ids: Sequence[uuid.UUID], per_tier: int
) -> list[tuple[uuid.UUID, uuid.UUID, float]]:
    """(tier, owner, seconds) of each tier's last `per_tier` finished sessions."""
    if not tier_ids:
        return []
    rows = await db.execute(
        text(
            "SELECT tier_id, user_id, seconds FROM ("
            "  SELECT tier_id, user_id, extract(epoch FROM released_at - admitted_at) AS seconds,"
            "    row_number() OVER (PARTITION BY tier_id ORDER BY released_at DESC) AS n"
            "  FROM gpu_allocations WHERE status = 'released' AND tier_id = ANY(:ids)"
            ") recent WHERE n <= :per_tier"
        ),
        {"ids": list(tier_ids), "per_tier": per_tier},
    )
    return [(r[0], r[1], float(r[2])) for r in rows]


async def recent_outcomes(db: AsyncSession, limit: int) -> list[tuple[float, float, float]]:
    """(first raw p50 wait, first raw p90 wait, waited), in seconds, of the last `limit`
    requests that started after a forecast, oldest first."""
    rows = await db.execute(
        text(
            "SELECT first_likely_seconds, first_surely_seconds, "
            "  extract(epoch FROM decided_at - enqueued_at) FROM admission_requests "
            "WHERE status = 'admitted' AND first_likely_seconds IS NOT NULL "
            "  AND first_surely_seconds IS NOT NULL "
            "ORDER BY decided_at DESC LIMIT :limit"
        ),
        {"limit": limit},
    )
    return [(float(r[0]), float(r[1]), float(r[2])) for r in rows][::-1]


_STORE_FORECAST = text(
    "UPDATE admission_requests SET likely_start_at = :likely, surely_start_by = :surely, "
    "  forecast_at = :now, told_likely_start_at = :told, "
    "  first_likely_start_at = coalesce(first_likely_start_at, :likely), "
    "  first_likely_seconds = coalesce(first_likely_seconds, :raw_likely), "
    "  first_surely_seconds = coalesce(first_surely_seconds, :raw_surely) "
    "WHERE id = :id AND status = 'queued'"
)


async def store_forecasts(db: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    """Each queued request's forecast (id, likely, surely, told, raw_likely, raw_surely, now);
    the first ones are kept once set."""
    if rows:
        await db.execute(_STORE_FORECAST, list(rows))


# ---- groups' shares ------------------------------------------------------------------------


class UseInterval(NamedTuple):
    group_id: uuid.UUID
    user_id: uuid.UUID
    admitted_at: datetime
    released_at: datetime | None
    kind: str
    denominator: int | None
    compute_percent: int


async def use_intervals(
    db: AsyncSession, group_ids: Sequence[uuid.UUID], since: datetime
) -> list[UseInterval]:
    """Every GPU allocation of these groups that held a card at some time since `since`, with
    its tier's size."""
    if not group_ids:
        return []
    rows = await db.execute(
        text(
            "SELECT a.group_id, a.user_id, a.admitted_at, a.released_at, t.kind, t.denominator, "
            "  t.compute_percent FROM gpu_allocations a JOIN gpu_tiers t ON t.id = a.tier_id "
            "WHERE a.group_id = ANY(:groups) AND a.card_id IS NOT NULL "
            "  AND (a.released_at IS NULL OR a.released_at > :since)"
        ),
        {"groups": list(group_ids), "since": since},
    )
    return [UseInterval(*r) for r in rows]


async def usage_of(
    db: AsyncSession, kind: str, subject_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, float]:
    """The decayed usage the queue weighs, of these users or groups (none: 0)."""
    if not subject_ids:
        return {}
    rows = await db.execute(
        select(FairShareUsage.subject_id, FairShareUsage.usage).where(
            FairShareUsage.subject_kind == kind,
            FairShareUsage.subject_id.in_(list(subject_ids)),
        )
    )
    return {r[0]: float(r[1]) for r in rows}


async def active_groups(db: AsyncSession) -> set[uuid.UUID]:
    """The groups running a GPU session or waiting for one: those the cards are shared among."""
    rows = await db.execute(
        text(
            "SELECT group_id FROM gpu_allocations WHERE status = 'live' AND card_id IS NOT NULL "
            "UNION SELECT group_id FROM admission_requests "
            "WHERE status = 'queued' AND tier_id IS NOT NULL"
        )
    )
    return {r[0] for r in rows}


# The cards preemption splits among the groups (`_SNAPSHOT`'s, of every model): present,
# healthy, on a connected cluster, and covered by no active drain.
_USABLE_CARD_COUNT = text(
    "SELECT count(*) FROM gpu_cards c JOIN clusters cl ON cl.id = c.cluster_id "
    "WHERE cl.status = 'connected' AND c.healthy AND NOT c.missing AND NOT "
    "EXISTS (SELECT 1 FROM capacity_drains d WHERE d.status = 'active' "
    " AND d.cluster_id = c.cluster_id AND (d.scope = 'cluster' "
    " OR (d.scope = 'node' AND d.node = c.node) OR d.card_id = c.id))"
)


async def usable_card_count(db: AsyncSession) -> int:
    """GPU cards a session may be placed on now, in every connected cluster."""
    return int(await db.scalar(_USABLE_CARD_COUNT) or 0)


_BOOKED_HOLDS_UNTIL = text(
    "SELECT n.card_id, n.booking_id, b.group_id, c.model, max(n.deadline "  # noqa: S608
    f"  + make_interval(mins => least(b.notice_minutes, {HOLD_AFTER_START_MINUTES}))) AS until "
    "FROM capacity_notices n "
    "JOIN capacity_bookings b ON b.id = n.booking_id AND b.status = 'active' "
    f"AND {AT_A_WINDOW_START} "
    "JOIN gpu_cards c ON c.id = n.card_id "
    "WHERE n.booking_id IS NOT NULL AND n.card_id IS NOT NULL "
    "AND n.status IN ('pending', 'paused', 'freed') "
    f"AND n.deadline > CAST(:now AS timestamptz) - interval '{HOLD_AFTER_START_MINUTES} min' "
    "AND CAST(:now AS timestamptz) < n.deadline "
    f"+ make_interval(mins => least(b.notice_minutes, {HOLD_AFTER_START_MINUTES})) "
    "GROUP BY n.card_id, n.booking_id, b.group_id, c.model"
)


class BookedHold(NamedTuple):
    card_id: uuid.UUID
    booking_id: uuid.UUID
    group_id: uuid.UUID
    model: str
    until: datetime


async def booked_holds(db: AsyncSession, now: datetime) -> list[BookedHold]:
    """The cards held for a booking's members now (as `_BOOKED_HOLDS_SQL` finds them), with
    the booking's group, the card's model, and when the hold ends."""
    return [BookedHold(*r) for r in await db.execute(_BOOKED_HOLDS_UNTIL, {"now": now})]


# ---- isolation: nodes, dedications, incidents ----------------------------------------------


_ALL_TRAITS = text(
    "SELECT DISTINCT " + _TRAITS + "FROM gpu_cards c " + _TRAITS_JOIN + "WHERE NOT c.missing "
    "AND cl.status = 'connected'"
)


async def connected_traits(db: AsyncSession) -> list[NodeTraits]:
    """The distinct traits of the nodes of every present card on connected clusters."""
    return [traits_of(r) for r in await db.execute(_ALL_TRAITS)]


_CPU_OFFERS = text(
    "SELECT cl.id, cl.sandbox_runtime_class, cl.user_namespaces, "
    "(SELECT coalesce(d.group_id, d.organization_id) FROM node_dedications d "
    " WHERE d.cluster_id = cl.id AND d.node IS NULL) AS dedicated_to, "
    "(SELECT array_agg(coalesce(d.group_id, d.organization_id)) FROM node_dedications d "
    " WHERE d.cluster_id = cl.id AND d.node IS NOT NULL) AS node_tenants, "
    "EXISTS (SELECT 1 FROM capacity_drains r WHERE r.cluster_id = cl.id "
    " AND r.status = 'active' AND r.scope = 'cluster') AS drained "
    "FROM clusters cl WHERE cl.id = ANY(:ids)"
)


async def cpu_offers(db: AsyncSession, cluster_ids: Sequence[uuid.UUID]) -> list[ClusterOffer]:
    """What each of these clusters offers a session without a card (isolation.ClusterOffer)."""
    return [
        ClusterOffer(
            r.id,
            r.sandbox_runtime_class,
            r.user_namespaces,
            r.dedicated_to,
            frozenset(r.node_tenants or ()),
            r.drained,
        )
        for r in await db.execute(_CPU_OFFERS, {"ids": list(cluster_ids)})
    ]


async def nodes(db: AsyncSession) -> list[Row[Any]]:
    """Every node with cards: its cluster, reported traits and card counts."""
    cards = (
        select(
            GpuCard.cluster_id,
            GpuCard.node,
            func.count().label("cards"),
            func.count().filter(GpuCard.healthy & ~GpuCard.missing).label("usable"),
        )
        .group_by(GpuCard.cluster_id, GpuCard.node)
        .subquery()
    )
    query = (
        select(
            cards.c.cluster_id,
            cards.c.node,
            cards.c.cards,
            cards.c.usable,
            GpuNode.user_namespaces,
            GpuNode.runtime_classes,
            GpuNode.dedicated_label,
            GpuNode.dedicated_tainted,
            GpuNode.reported_at,
        )
        .select_from(cards)
        .outerjoin(
            GpuNode, (GpuNode.cluster_id == cards.c.cluster_id) & (GpuNode.name == cards.c.node)
        )
        .order_by(cards.c.cluster_id, cards.c.node)
    )
    return list(await db.execute(query))


async def lock_cluster_dedications(db: AsyncSession, cluster_id: uuid.UUID) -> None:
    """Dedications of one cluster are decided one at a time (until the transaction ends), and
    not while a session without a card is placed there (`share_cluster_dedications`)."""
    await db.execute(
        text("SELECT pg_advisory_xact_lock(hashtext('gshare.capacity.dedication'), hashtext(:c))"),
        {"c": str(cluster_id)},
    )


async def share_cluster_dedications(db: AsyncSession, cluster_ids: Sequence[uuid.UUID]) -> None:
    """Keep the dedications of these clusters as they are until the transaction ends: a
    session without a card is placed by what they are now (many such sessions at once)."""
    for cluster_id in sorted(set(cluster_ids)):
        await db.execute(
            text(
                "SELECT pg_advisory_xact_lock_shared(hashtext('gshare.capacity.dedication'), "
                "hashtext(:c))"
            ),
            {"c": str(cluster_id)},
        )


_LOCK_HELD_ON_CLUSTER = text(
    "SELECT a.id FROM gpu_allocations a JOIN gpu_cards c ON c.id = a.live_card_id "
    "WHERE c.cluster_id = :cluster AND a.status IN ('live', 'lost') ORDER BY a.id FOR UPDATE OF a"
)


_LOCK_HELD_BY_HOLDS = text(
    "SELECT id FROM gpu_allocations WHERE hold_id = ANY(:holds) AND status IN ('live', 'lost') "
    "ORDER BY id FOR UPDATE"
)
_LOCK_CARDS_OF_HOLDS = text(
    "SELECT c.id FROM gpu_cards c WHERE c.id IN (SELECT live_card_id FROM gpu_allocations "
    "WHERE hold_id = ANY(:holds) AND status IN ('live', 'lost')) ORDER BY c.id FOR UPDATE"
)


async def lock_held_by_holds(db: AsyncSession, hold_ids: Sequence[uuid.UUID]) -> None:
    """Lock the allocations these holds pay for, then their cards, each in id order: what a
    release of any of them locks, taken before the holds' wallets are."""
    if hold_ids:
        await db.execute(_LOCK_HELD_BY_HOLDS, {"holds": list(hold_ids)})
        await db.execute(_LOCK_CARDS_OF_HOLDS, {"holds": list(hold_ids)})


async def lock_cluster_cards(db: AsyncSession, cluster_id: uuid.UUID) -> None:
    """Lock the allocations held on a cluster's cards, then the cards, each in id order: the
    order a release takes them in (its allocation, then its card), so that an inventory report
    marking cards seen, changed or lost never deadlocks with a release or an admission."""
    await db.execute(_LOCK_HELD_ON_CLUSTER, {"cluster": cluster_id})
    await lock_cards_of(db, cluster_id, None)


async def lock_cards_of(db: AsyncSession, cluster_id: uuid.UUID, node: str | None) -> None:
    """Lock the rows of a node's cards (every node of the cluster: None), in id order."""
    query = select(GpuCard.id).where(GpuCard.cluster_id == cluster_id).order_by(GpuCard.id)
    if node is not None:
        query = query.where(GpuCard.node == node)
    await db.execute(query.with_for_update())


async def node_known(db: AsyncSession, cluster_id: uuid.UUID, node: str) -> bool:
    found = await db.scalar(
        select(GpuCard.id).where(GpuCard.cluster_id == cluster_id, GpuCard.node == node).limit(1)
    )
    return found is not None


async def dedications(db: AsyncSession) -> list[NodeDedication]:
    query = select(NodeDedication).order_by(
        NodeDedication.cluster_id, NodeDedication.node.nulls_first(), NodeDedication.id
    )
    return list(await db.scalars(query))


async def dedication(
    db: AsyncSession, dedication_id: uuid.UUID, *, lock: bool = False
) -> NodeDedication | None:
    query = select(NodeDedication).where(NodeDedication.id == dedication_id)
    return await db.scalar(query.with_for_update() if lock else query)


async def dedications_of_cluster(db: AsyncSession, cluster_id: uuid.UUID) -> list[NodeDedication]:
    query = select(NodeDedication).where(NodeDedication.cluster_id == cluster_id)
    return list(await db.scalars(query))


async def add_dedication(db: AsyncSession, values: dict[str, Any]) -> bool:
    """False when the node (or the cluster) already has a dedication."""
    found = await db.execute(
        insert(NodeDedication)
        .values(**values)
        .on_conflict_do_nothing()
        .returning(NodeDedication.id)
    )
    return found.first() is not None


async def held_groups_on(
    db: AsyncSession, cluster_id: uuid.UUID, node: str | None
) -> list[uuid.UUID]:
    """The groups whose allocations hold cards of the node (every node: None) now."""
    query = (
        select(Allocation.group_id)
        .join(GpuCard, GpuCard.id == Allocation.live_card_id)
        .where(GpuCard.cluster_id == cluster_id, Allocation.status != "released")
        .distinct()
    )
    if node is not None:
        query = query.where(GpuCard.node == node)
    return list(await db.scalars(query))


async def cpu_sessions_on(
    db: AsyncSession, cluster_id: uuid.UUID, dedicated_to: uuid.UUID | None = None
) -> int:
    """How many sessions without a card run on the cluster now (those whose pods require the
    nodes dedicated to `dedicated_to`, when given)."""
    # A session without a card names its cluster in its boundary (admission chose it there).
    query = select(func.count(Allocation.id)).where(
        Allocation.boundary["cluster"].astext == str(cluster_id),
        Allocation.card_id.is_(None),
        Allocation.status != "released",
    )
    if dedicated_to is not None:
        query = query.where(
            Allocation.boundary["isolation"]["dedicatedTo"].astext == str(dedicated_to)
        )
    return int(await db.scalar(query) or 0)


async def add_incident(db: AsyncSession, values: dict[str, Any]) -> bool:
    """False when the same finding was recorded before (a repeated report)."""
    found = await db.execute(
        insert(IsolationIncident)
        .values(**values)
        .on_conflict_do_nothing()
        .returning(IsolationIncident.id)
    )
    return found.first() is not None


async def incidents_since(db: AsyncSession, session_id: uuid.UUID, since: datetime) -> int:
    """How many incidents of the session were reported since `since`."""
    query = select(func.count()).where(
        IsolationIncident.session_id == session_id, IsolationIncident.reported_at >= since
    )
    return int(await db.scalar(query) or 0)


async def incidents_of(
    db: AsyncSession, group_ids: Sequence[uuid.UUID], since: datetime, limit: int
) -> list[IsolationIncident]:
    query = (
        select(IsolationIncident)
        .where(IsolationIncident.group_id.in_(group_ids), IsolationIncident.found_at >= since)
        .order_by(IsolationIncident.found_at.desc(), IsolationIncident.id)
        .limit(limit)
    )
    return list(await db.scalars(query))


async def placements_of(
    db: AsyncSession, group_ids: Sequence[uuid.UUID], since: datetime
) -> list[Row[Any]]:
    """Where the groups' sessions ran since `since` (or run now): per cluster, node and the
    boundary they were placed at, how many allocations and when the last began."""
    isolation = Allocation.boundary["isolation"]
    level = func.coalesce(isolation["level"].astext, "shared")
    runtime = isolation["runtimeClassName"].astext
    userns = func.coalesce(isolation["userNamespaces"].astext, "false")
    dedicated = isolation["dedicatedTo"].astext
    query = (
        select(
            Allocation.cluster_id,
            GpuCard.node,
            level.label("level"),
            runtime.label("runtime_class"),
            userns.label("user_namespaces"),
            dedicated.label("dedicated_to"),
            func.count().label("sessions"),
            func.max(Allocation.admitted_at).label("last_at"),
        )
        .join(GpuCard, GpuCard.id == Allocation.card_id)
        .where(
            Allocation.group_id.in_(group_ids),
            or_(Allocation.released_at.is_(None), Allocation.released_at >= since),
        )
        .group_by(Allocation.cluster_id, GpuCard.node, level, runtime, userns, dedicated)
        .order_by(func.max(Allocation.admitted_at).desc())
        .limit(500)
    )
    return list(await db.execute(query))
