"""Capacity's administration: the GPU inventory operators report, pools and MIG layouts, GPU
models with their tiers and prices, and resource policies with their effective values.

Admission itself (admit, release, the queue) is in `admission.py`."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from gshare.capacity import mig, repository, tiers
from gshare.capacity.isolation import Isolation, unmet
from gshare.capacity.models import Allocation, GpuCard, GpuModel, GpuTier, ResourcePolicy
from gshare.capacity.policy import (
    ORG_KEYS,
    RESERVED_KEYS,
    EffectivePolicy,
    PolicyAccepted,
    ScopedPolicy,
    ScopeKind,
    allows_tier,
    boundary_of,
    effective_policy,
    read_policy,
    share_weight,
)
from gshare.capacity.policy import (
    Scope as PolicyScope,
)
from gshare.capacity.queue import Tenants
from gshare.capacity.schemas import InventoryReport
from gshare.clusters import service as clusters
from gshare.events import outbox
from gshare.events.notify import notify
from gshare.identity import service as identity
from gshare.identity.authz import Context, audit, require
from gshare.identity.permissions import GLOBAL, Action, Scope
from gshare.kit.errors import Conflict, Forbidden, NotFound, Unprocessable
from gshare.kit.ids import new_id

CAPACITY_CHANNEL = "gshare_capacity"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


CARDS_CHANGED = "cards.changed"


class InvalidMigLayout(Unprocessable):
    """A MIG layout the card cannot hold: an unknown profile, too many instances of one, more
    compute or memory slices than the card has, or a start the profile does not allow; the
    message names the first problem."""

    code = "invalid_mig_layout"


class InvalidTier(Unprocessable):
    """A GPU model's tiers cannot be built: a negative price, a fraction outside 1/2 to the
    model's split count, a MIG profile the model lacks, or a tier named twice; the message
    lists every problem."""

    code = "invalid_tier"


class InvalidPolicy(Unprocessable):
    """A resource policy document has an unknown key or a value of the wrong kind or out of
    range; the message lists every problem."""

    code = "invalid_policy"


async def cards_changed(db: AsyncSession) -> None:
    """Refresh the consoles that show cards: the super admins' (an event with no audience)."""
    await outbox.record(db, CARDS_CHANGED, outbox.Audience())


async def capacity_changed(db: AsyncSession, why: str) -> None:
    """Wake every dequeue loop once this transaction commits."""
    await notify(db, CAPACITY_CHANNEL, why)
    await cards_changed(db)


# ---- the inventory -------------------------------------------------------------------------


def _identity_changed(card: GpuCard, model: str, memory_mib: int) -> bool:
    return card.model != model or card.memory_mib != memory_mib


async def apply_inventory(
    db: AsyncSession, cluster_id: uuid.UUID, report: InventoryReport, now: datetime
) -> bool:
    """Store a cluster's reported inventory. A report older than the last one applied changes
    nothing (replays and reordering are harmless). Cards no longer reported become missing;
    a card that goes missing, or comes back as another model or size, with sessions on it marks
    their allocations lost: their slots stay taken until the sessions domain settles them.

    The work per card is constant: one read of the cluster's cards, then changed cards written
    in batches, so a large cluster's report costs per card what a small one's does."""
    cluster = await clusters.connected_cluster(db, cluster_id, now)
    clusters.refuse_future_sequence(report.sequence, now)
    if report.sequence <= cluster.inventory_sequence:
        await db.flush()
        return False
    cluster.inventory_sequence = report.sequence
    await repository.lock_cluster_cards(db, cluster_id)
    known = {card.uuid: card for card in await repository.cards_of(db, cluster_id)}
    seen: set[str] = set()
    added: list[dict[str, Any]] = []
    changed: list[dict[str, Any]] = []
    lost: list[uuid.UUID] = []
    more_capacity = False
    for node in report.nodes:
        for reported in node.cards:
            seen.add(reported.uuid)
            fields = {
                "node": node.name,
                "model": reported.model,
                "memory_mib": reported.memory_mib,
                "cores": reported.cores,
                "split_count": reported.split_count,
                "numa": reported.numa,
                "healthy": reported.healthy,
                "missing": False,
            }
            card = known.get(reported.uuid)
            if card is None:
                added.append(
                    {"id": new_id(), "cluster_id": cluster_id, "uuid": reported.uuid}
                    | fields
                    | {"last_seen_at": now}
                )
                more_capacity = more_capacity or reported.healthy
                continue
            if any(getattr(card, k) != v for k, v in fields.items()):
                if _identity_changed(card, reported.model, reported.memory_mib):
                    # Another GPU now: what was set up for the old one no longer applies.
                    lost.append(card.id)
                    fields["mig_layout"] = []
                    if card.pool == "mig" and mig.geometry_for(reported.model) is None:
                        fields["pool"] = "hami-core"
                if reported.healthy and (card.missing or not card.healthy):
                    more_capacity = True
                changed.append({"id": card.id} | fields)
    gone = [c.id for u, c in known.items() if u not in seen and not c.missing]
    lost += gone
    changed += [{"id": card_id, "missing": True} for card_id in gone]
    await db.flush()
    await repository.mark_seen(db, cluster_id, now)
    await repository.add_cards(db, added)
    await repository.set_card_fields(db, changed)
    await repository.mark_lost(db, lost)
    await repository.forget_carvings(db, lost)
    nodes_changed = await repository.put_nodes(
        db,
        cluster_id,
        # One row per node name: a report naming a node twice keeps the last.
        list(
            {
                node.name: {
                    "name": node.name,
                    "user_namespaces": node.user_namespaces,
                    "runtime_classes": sorted(set(node.runtime_classes)),
                    "dedicated_label": node.dedicated_label,
                    "dedicated_tainted": node.dedicated_tainted,
                }
                for node in report.nodes
            }.values()
        ),
        now,
    )
    if added or more_capacity or nodes_changed:
        await capacity_changed(db, f"inventory {cluster_id}")
    elif changed or lost:
        await cards_changed(db)
    db.expire_all()
    return True


async def card_counts(
    db: AsyncSession, cluster_ids: list[uuid.UUID] | None
) -> dict[uuid.UUID, clusters.CardCounts]:
    """Answers the clusters domain's `card_counts` hook."""
    return {
        row.cluster_id: clusters.CardCounts(row.nodes, row.cards, row.healthy, row.missing)
        for row in await repository.card_counts(db, cluster_ids)
    }


async def refuse_while_cards_held(db: AsyncSession, cluster_id: uuid.UUID) -> Conflict | None:
    """A cluster whose cards still hold allocations cannot be removed (asked with its row
    locked)."""
    held = await repository.held_on_cluster(db, cluster_id)
    if not held:
        return None
    return Conflict(
        f"{held} allocation(s) still hold cards of this cluster; stop their sessions first.",
        code="cluster_has_live_sessions",
    )


# ---- cards, pools and MIG layouts ----------------------------------------------------------


@dataclass(frozen=True)
class CardView:
    card: GpuCard
    held: list[Allocation]
    carved_tier: GpuTier | None
    free_slots: int | None  # hami-core: free slots of its carving; None while uncarved
    free_instances: list[dict[str, Any]]  # mig: instances no allocation holds


def _card_view(card: GpuCard, held: list[Allocation], carved: GpuTier | None) -> CardView:
    taken = {a.slot for a in held}
    if card.pool == "mig":
        free = [i for i in card.mig_layout if i["start"] not in taken]
        return CardView(card, held, None, None, free)
    free_slots = None if card.carved_slots is None else max(0, card.carved_slots - len(held))
    return CardView(card, held, carved, free_slots, [])


async def cluster_cards(ctx: Context, cluster_id: uuid.UUID) -> list[CardView]:
    require(ctx, Action.CAPACITY_READ, target_type="cluster", target_id=cluster_id)
    if not await clusters.cluster_exists(ctx.db, cluster_id):
        raise NotFound("No such cluster.", code="cluster_not_found")
    cards = await repository.cards_of(ctx.db, cluster_id)
    held = await repository.held_on_cards(ctx.db, [c.id for c in cards])
    by_card: dict[uuid.UUID, list[Allocation]] = {}
    for allocation in held:
        if allocation.live_card_id is not None:
            by_card.setdefault(allocation.live_card_id, []).append(allocation)
    carved = await repository.tiers_by_id(
        ctx.db, [c.carved_tier_id for c in cards if c.carved_tier_id]
    )
    return [
        _card_view(
            c,
            sorted(by_card.get(c.id, []), key=lambda a: a.slot or 0),
            carved.get(c.carved_tier_id) if c.carved_tier_id else None,
        )
        for c in cards
    ]


async def _busy_card(ctx: Context, card_id: uuid.UUID) -> GpuCard:
    """The card, locked, refused when anything is allocated on it."""
    card = await repository.card(ctx.db, card_id, lock=True)
    if card is None:
        raise NotFound("No such card.", code="card_not_found")
    held = await repository.held_count(ctx.db, card_id)
    if held:
        raise Conflict(
            f"{held} allocation(s) are on this card; it changes only while empty.",
            code="card_busy",
        )
    return card


async def set_pool(ctx: Context, card_id: uuid.UUID, pool: str) -> CardView:
    require(ctx, Action.CAPACITY_MANAGE, target_type="card", target_id=card_id)
    card = await _busy_card(ctx, card_id)
    if pool == "mig" and mig.geometry_for(card.model) is None:
        raise Unprocessable(
            f"{card.model} has no MIG geometry GShare knows; it stays in hami-core.",
            code="mig_unsupported",
        )
    before = card.pool
    if before != pool:
        card.pool = pool
        card.carved_tier_id = card.carved_slots = None
        card.mig_layout = []
        await audit(
            ctx,
            "card.pool",
            target_type="card",
            target_id=card_id,
            detail={"from": before, "to": pool, "uuid": card.uuid},
        )
        await capacity_changed(ctx.db, f"pool {card_id}")
    await ctx.db.flush()
    return _card_view(card, [], None)


async def set_mig_layout(
    ctx: Context, card_id: uuid.UUID, items: list[tuple[str, int | None]]
) -> CardView:
    """Replace a mig-pool card's instances with a layout its GPU accepts."""
    require(ctx, Action.CAPACITY_MANAGE, target_type="card", target_id=card_id)
    card = await _busy_card(ctx, card_id)
    if card.pool != "mig":
        raise Conflict("Move the card to the mig pool first.", code="not_mig_pool")
    geometry = mig.geometry_for(card.model)
    if geometry is None:
        raise Unprocessable(f"{card.model} has no MIG geometry.", code="mig_unsupported")
    wanted: list[mig.LayoutItem] = [
        name if start is None else (name, start) for name, start in items
    ]
    decision = mig.check_layout(geometry.model, wanted)
    if isinstance(decision, mig.LayoutRefused):
        raise InvalidMigLayout(decision.reason)
    card.mig_layout = [{"profile": p.profile, "start": p.start} for p in decision.placements]
    await audit(
        ctx,
        "card.mig_layout",
        target_type="card",
        target_id=card_id,
        detail={"layout": [f"{p.profile}@{p.start}" for p in decision.placements]},
    )
    await capacity_changed(ctx.db, f"layout {card_id}")
    await ctx.db.flush()
    return _card_view(card, [], None)


async def mig_choices(ctx: Context, card_id: uuid.UUID) -> tuple[str, list[tuple[str, ...]]]:
    """The card's MIG geometry and every layout it accepts that no instance could be added to."""
    require(ctx, Action.CAPACITY_READ, target_type="card", target_id=card_id)
    card = await repository.card(ctx.db, card_id)
    if card is None:
        raise NotFound("No such card.", code="card_not_found")
    geometry = mig.geometry_for(card.model)
    if geometry is None:
        return card.model, []
    return geometry.model, list(mig.valid_layouts(geometry.model, maximal_only=True))


# ---- models and tiers ----------------------------------------------------------------------


def card_model(model: GpuModel) -> tiers.CardModel:
    return tiers.CardModel(model.name, model.memory_mib, model.split_count, model.exclusive_price)


def _spec(tier: GpuTier) -> tiers.TierSpec:
    kept = None if tier.price_is_default else tier.price
    return tiers.TierSpec(tiers.TierKind(tier.kind), tier.denominator, tier.mig_profile, kept)


async def list_models(ctx: Context) -> list[tuple[GpuModel, list[GpuTier]]]:
    require(ctx, Action.CAPACITY_READ, target_type="gpu_model")
    models = await repository.all_models(ctx.db)
    all_tiers = await repository.tiers(ctx.db, [m.id for m in models], active_only=False)
    return [(m, [t for t in all_tiers if t.model_id == m.id]) for m in models]


async def create_model(
    ctx: Context,
    *,
    name: str,
    exclusive_price: int,
    memory_mib: int | None,
    split_count: int | None,
) -> GpuModel:
    """Price a GPU model; its memory and split count default to its smallest reported card."""
    require(ctx, Action.CAPACITY_MANAGE, target_type="gpu_model", target_id=name)
    if await repository.model_named(ctx.db, name) is not None:
        raise Conflict(f"{name} is priced already.", code="already_exists")
    seen_memory, seen_split = await repository.model_cards(ctx.db, name)
    memory = memory_mib or seen_memory
    split = split_count or seen_split
    if memory is None or split is None:
        raise Unprocessable(
            f"No card of {name} is reported; give its memory_mib and split_count.",
            code="model_unknown",
        )
    model = GpuModel(
        id=new_id(),
        name=name,
        memory_mib=memory,
        split_count=split,
        exclusive_price=exclusive_price,
        created_at=ctx.now,
    )
    ctx.db.add(model)
    try:
        await ctx.db.flush()
    except Exception as exc:
        raise Conflict(f"{name} is priced already.", code="already_exists") from exc
    await audit(
        ctx,
        "gpu_model.create",
        target_type="gpu_model",
        target_id=model.id,
        detail={"name": name, "exclusive_price": exclusive_price},
    )
    return model


async def _model(ctx: Context, model_id: uuid.UUID) -> GpuModel:
    model = await repository.model(ctx.db, model_id, lock=True)
    if model is None:
        raise NotFound("No such GPU model.", code="gpu_model_not_found")
    return model


def _built(model: GpuModel, specs: list[tiers.TierSpec]) -> tuple[tiers.Tier, ...]:
    decision = tiers.tier_set(card_model(model), specs)
    if isinstance(decision, tiers.TierSetRefused):
        raise InvalidTier(" ".join(decision.reasons))
    return decision.tiers


async def update_model(ctx: Context, model_id: uuid.UUID, exclusive_price: int) -> GpuModel:
    """A new exclusive price; tiers at their default price follow it, from now on."""
    require(ctx, Action.CAPACITY_MANAGE, target_type="gpu_model", target_id=model_id)
    model = await _model(ctx, model_id)
    before = model.exclusive_price
    model.exclusive_price = exclusive_price
    active = await repository.tiers(ctx.db, [model.id])
    for tier, built in zip(active, _built(model, [_spec(t) for t in active]), strict=True):
        tier.price = built.price
    await audit(
        ctx,
        "gpu_model.price",
        target_type="gpu_model",
        target_id=model_id,
        detail={"from": before, "to": exclusive_price},
    )
    await ctx.db.flush()
    return model


def tier_row(model_id: uuid.UUID, built: tiers.Tier, now: datetime) -> GpuTier:
    """The table row of a tier the pure core built."""
    return GpuTier(
        id=new_id(),
        model_id=model_id,
        name=built.name,
        kind=built.kind.value,
        denominator=built.denominator,
        mig_profile=built.mig_profile,
        vram_mib=built.vram_mib,
        compute_percent=built.compute_percent,
        price=built.price,
        price_is_default=built.price_is_default,
        created_at=now,
    )


async def add_tier(ctx: Context, model_id: uuid.UUID, spec: tiers.TierSpec) -> GpuTier:
    require(ctx, Action.CAPACITY_MANAGE, target_type="gpu_model", target_id=model_id)
    model = await _model(ctx, model_id)
    active = await repository.tiers(ctx.db, [model.id])
    built = _built(model, [*(_spec(t) for t in active), spec])[-1]
    tier = tier_row(model.id, built, ctx.now)
    ctx.db.add(tier)
    await ctx.db.flush()
    await audit(
        ctx,
        "tier.create",
        target_type="tier",
        target_id=tier.id,
        detail={"model": model.name, "name": tier.name, "price": tier.price},
    )
    return tier


async def _active_tier(ctx: Context, tier_id: uuid.UUID) -> tuple[GpuTier, GpuModel]:
    tier = await repository.tier(ctx.db, tier_id)
    if tier is None or tier.retired_at is not None:
        raise NotFound("No such tier.", code="tier_not_found")
    return tier, await _model(ctx, tier.model_id)


async def set_tier_price(ctx: Context, tier_id: uuid.UUID, price: int | None) -> GpuTier:
    """Set a tier's price, or (None) return it to the default; running sessions keep theirs."""
    require(ctx, Action.CAPACITY_MANAGE, target_type="tier", target_id=tier_id)
    tier, model = await _active_tier(ctx, tier_id)
    before = tier.price
    spec = tiers.TierSpec(tiers.TierKind(tier.kind), tier.denominator, tier.mig_profile, price)
    built = _built(model, [spec])[0]
    tier.price, tier.price_is_default = built.price, built.price_is_default
    await audit(
        ctx,
        "tier.price",
        target_type="tier",
        target_id=tier_id,
        detail={"from": before, "to": tier.price, "default": tier.price_is_default},
    )
    await ctx.db.flush()
    return tier


async def retire_tier(ctx: Context, tier_id: uuid.UUID) -> None:
    """No new admissions of the tier; sessions running on it keep running."""
    require(ctx, Action.CAPACITY_MANAGE, target_type="tier", target_id=tier_id)
    tier, model = await _active_tier(ctx, tier_id)
    tier.retired_at = ctx.now
    await audit(
        ctx,
        "tier.retire",
        target_type="tier",
        target_id=tier_id,
        detail={"model": model.name, "name": tier.name},
    )
    await ctx.db.flush()


async def tiers_of(ctx: Context, model_id: uuid.UUID) -> list[GpuTier]:
    return await repository.tiers(ctx.db, [model_id], active_only=False)


async def model_of(ctx: Context, tier: GpuTier) -> GpuModel:
    model = await repository.model(ctx.db, tier.model_id)
    assert model is not None
    return model


async def usable_tiers(ctx: Context, group_id: uuid.UUID | None) -> list[tuple[GpuTier, GpuModel]]:
    """Active tiers the caller's policy allows in `group_id`, or in any group they are in."""
    require(ctx, Action.TIERS_READ, target_type="tier")
    db = ctx.db
    models = {m.id: m for m in await repository.all_models(db)}
    pairs = [(t, models[t.model_id]) for t in await repository.tiers(db, list(models))]
    groups = {**ctx.actor.guest_of, **ctx.actor.member_of}
    if group_id is not None:
        if group_id not in groups:
            raise NotFound("You are not in that group.", code="not_in_group")
        groups = {group_id: groups[group_id]}
    elif ctx.actor.is_super_admin:
        return pairs
    allowed: set[uuid.UUID] = set()
    for g, o in groups.items():
        policy = await effective_for(db, ctx.actor.user_id, g, o)
        allowed |= {t.id for t, m in pairs if allows_tier(policy, m.name, t.name)}
    return [(t, m) for t, m in pairs if t.id in allowed]


def isolation_of(
    policy: EffectivePolicy, org_id: uuid.UUID | None, group_id: uuid.UUID
) -> Isolation:
    """The isolation a session of this group runs at under this policy: its level, and the
    tenants (the group, its organization) whose dedicated cards it may take."""
    tenants = {group_id} if org_id is None else {group_id, org_id}
    return Isolation(boundary_of(policy).isolation, frozenset(tenants))


async def caller_isolation(ctx: Context, group_id: uuid.UUID | None) -> Isolation:
    """Whose cards the caller's capacity views count: in `group_id` (or, none named, the only
    group they are in), its level and tenants; else every group they are in and its
    organization, at the shared level (a dedicated card counts only for its tenant, and for no
    one else)."""
    groups = {**ctx.actor.guest_of, **ctx.actor.member_of}
    if group_id is None and len(groups) == 1:
        [group_id] = groups
    if group_id is not None and group_id in groups:
        org_id = groups[group_id]
        policy = await effective_for(ctx.db, ctx.actor.user_id, group_id, org_id)
        return isolation_of(policy, org_id, group_id)
    return Isolation(tenants=frozenset(groups) | frozenset(groups.values()))


async def group_isolation(db: AsyncSession, group_id: uuid.UUID) -> Isolation:
    """The isolation of what a group books: its level (set for it, its organization or
    everyone) and its tenants."""
    return (await group_isolations(db, [group_id]))[group_id]


async def group_isolations(
    db: AsyncSession, group_ids: Iterable[uuid.UUID]
) -> dict[uuid.UUID, Isolation]:
    """`group_isolation` of each of these groups, in a fixed number of queries (a group that
    is gone: shared, its own tenant only)."""
    wanted = list(set(group_ids))
    # The nil user sets no policy: what the group, its organization and everyone set.
    nobody = uuid.UUID(int=0)
    policies = await effective_for_many(db, [(nobody, g) for g in wanted])
    orgs = await identity.orgs_of_groups(db, wanted)
    return {
        g: isolation_of(policies[(nobody, g)], orgs.get(g), g)
        if (nobody, g) in policies
        else Isolation(tenants=frozenset({g}))
        for g in wanted
    }


async def tiers_by_id(db: AsyncSession, ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, GpuTier]:
    """These tiers, retired ones too (what a session was asked on stays nameable)."""
    return await repository.tiers_by_id(db, ids)


async def model_names(db: AsyncSession) -> dict[uuid.UUID, str]:
    """Every GPU model's name, by its id."""
    return {m.id: m.name for m in await repository.all_models(db)}


async def tier_with_model(db: AsyncSession, tier_id: uuid.UUID) -> tuple[GpuTier, GpuModel]:
    """An active tier and its model, for admission."""
    return active_tier(await repository.tier_with_model(db, tier_id))


def active_tier(found: tuple[GpuTier, GpuModel] | None) -> tuple[GpuTier, GpuModel]:
    """A tier and its model as read, unless it is gone or retired."""
    if found is None or found[0].retired_at is not None:
        raise NotFound("No such tier.", code="tier_not_found")
    return found


# ---- policies ------------------------------------------------------------------------------

SCOPE_KINDS = {
    "global": ScopeKind.GLOBAL,
    "organization": ScopeKind.ORGANIZATION,
    "group": ScopeKind.GROUP,
    "user": ScopeKind.USER,
}
READ_ACTIONS = {
    "global": Action.POLICY_READ_GLOBAL,
    "organization": Action.POLICY_READ_ORG,
    "group": Action.POLICY_READ_GROUP,
    "user": Action.POLICY_READ_USER,
}
SET_ACTIONS = {
    "global": Action.POLICY_SET_GLOBAL,
    "organization": Action.POLICY_SET_ORG,
    "group": Action.POLICY_SET_GROUP,
    "user": Action.POLICY_SET_USER,
}


async def _scope_of(ctx: Context, kind: str, scope_id: uuid.UUID | None) -> Scope:
    """The permission scope of a policy's scope; 404 when it does not exist."""
    db = ctx.db
    if kind == "global":
        return GLOBAL
    assert scope_id is not None
    if kind == "organization":
        if not await identity.names(db, "org", [scope_id]):
            raise NotFound("No such organization.", code="org_not_found")
        return Scope(org_id=scope_id)
    if kind == "group":
        org_id = await identity.group_org(db, scope_id)
        if org_id is None:
            raise NotFound("No such group.", code="group_not_found")
        return Scope.of_group(scope_id, org_id)
    user_scope = await identity.user_scope_of(db, scope_id)
    if user_scope is None:
        raise NotFound("No such user.", code="user_not_found")
    return Scope(user=user_scope)


def policy_values(row: ResourcePolicy | None) -> dict[str, Any]:
    return {} if row is None else dict(row.values)


async def get_policy(ctx: Context, kind: str, scope_id: uuid.UUID | None) -> ResourcePolicy | None:
    scope = await _scope_of(ctx, kind, scope_id)
    require(ctx, READ_ACTIONS[kind], scope, target_type="policy", target_id=scope_id)
    return await repository.policy(ctx.db, kind, scope_id)


def _stored(values: dict[str, Any]) -> dict[str, Any]:
    return {k: sorted(v) if isinstance(v, frozenset) else v for k, v in values.items()}


async def _keep_reserved(
    ctx: Context, kind: str, scope_id: uuid.UUID | None, values: dict[str, Any]
) -> dict[str, Any]:
    """A super admin's values of the keys only a super admin sets (`RESERVED_KEYS`) stay as they
    are when anyone else replaces or clears the scope's policy; setting another is refused."""
    if ctx.actor.is_super_admin:
        return values
    row = await repository.policy(ctx.db, kind, scope_id)
    kept = {k: v for k, v in (row.values if row else {}).items() if k in RESERVED_KEYS}
    changed = sorted(
        k for k in RESERVED_KEYS if k in values and (k not in kept or kept[k] != values[k])
    )
    if changed:
        raise Forbidden(
            f"Only a super admin sets {', '.join(changed)}: these keys decide between tenants "
            "(whose session may be paused for whom, and which tenants may share a node).",
            code="policy_key_reserved",
        )
    return {**values, **kept}


async def refuse_unmeetable(db: AsyncSession, scope: Scope, kind: str, level: str) -> None:
    """Refuse an isolation level no card on a connected cluster can meet for the scope's
    sessions (a dedicated level is a tenant's: set for an organization or a group)."""
    if level == "shared":
        return
    if Isolation(level).dedicated and kind not in ("organization", "group"):
        raise InvalidPolicy(
            f"isolation {level} is set for an organization or a group: their dedicated nodes "
            "are what it runs on."
        )
    tenants = frozenset(t for t in (scope.org_id, scope.group_id) if t is not None)
    known = await repository.connected_traits(db)
    why = unmet(known, Isolation(level, tenants))
    if why is not None:
        raise Conflict(
            why.replace(" with this model", "") + " Set up a node for it first.",
            code="isolation_unmet",
        )


async def put_policy(
    ctx: Context, kind: str, scope_id: uuid.UUID | None, document: dict[str, Any]
) -> ResourcePolicy | None:
    """Replace the keys a scope sets (a key left out is no longer set there)."""
    scope = await _scope_of(ctx, kind, scope_id)
    require(ctx, SET_ACTIONS[kind], scope, target_type="policy", target_id=scope_id)
    read = read_policy(document)
    if not isinstance(read, PolicyAccepted):
        raise InvalidPolicy(" ".join(read.reasons))
    values = await _keep_reserved(ctx, kind, scope_id, _stored(dict(read.values)))
    if kind in ("group", "user") and (found := sorted(ORG_KEYS & values.keys())):
        raise InvalidPolicy(
            f"Set for an organization or globally, never for a group or a user: {', '.join(found)}."
        )
    level = values.get("isolation")
    old = await repository.policy(ctx.db, kind, scope_id)
    if isinstance(level, str) and (old is None or old.values.get("isolation") != level):
        await refuse_unmeetable(ctx.db, scope, kind, level)
    if values:
        await repository.put_policy(
            ctx.db, kind, scope_id, values, ctx.now, ctx.actor.user_id, new_id()
        )
    else:  # a policy that sets nothing is no policy
        await repository.delete_policy(ctx.db, kind, scope_id)
    await audit(
        ctx,
        "policy.set",
        target_type="policy",
        target_id=scope_id,
        org_id=scope.org_id,
        group_id=scope.group_id,
        detail={"scope": kind, "values": values},
    )
    row = await repository.policy(ctx.db, kind, scope_id)
    if row is not None:
        await ctx.db.refresh(row)
    return row


async def delete_policy(ctx: Context, kind: str, scope_id: uuid.UUID | None) -> None:
    scope = await _scope_of(ctx, kind, scope_id)
    require(ctx, SET_ACTIONS[kind], scope, target_type="policy", target_id=scope_id)
    if kept := await _keep_reserved(ctx, kind, scope_id, {}):
        # Only the keys this caller may set are cleared.
        await repository.put_policy(
            ctx.db, kind, scope_id, kept, ctx.now, ctx.actor.user_id, new_id()
        )
    elif not await repository.delete_policy(ctx.db, kind, scope_id):
        raise NotFound("This scope sets no policy.", code="policy_not_found")
    await audit(
        ctx,
        "policy.clear",
        target_type="policy",
        target_id=scope_id,
        org_id=scope.org_id,
        group_id=scope.group_id,
        detail={"scope": kind},
    )


def _layer(row: Any) -> ScopedPolicy:
    """A stored policy (scope_kind, scope_id, values) as a resolution layer."""
    read = read_policy(row.values)
    # Stored documents were valid when written; a key a later version dropped is ignored.
    values = read.values if isinstance(read, PolicyAccepted) else {}
    return ScopedPolicy(PolicyScope(SCOPE_KINDS[row.scope_kind], row.scope_id), values)


async def effective_for(
    db: AsyncSession, user_id: uuid.UUID, group_id: uuid.UUID, org_id: uuid.UUID
) -> EffectivePolicy:
    return effective_of(await repository.policies_for(db, org_id, group_id, user_id))


async def effective_for_org(db: AsyncSession, org_id: uuid.UUID) -> EffectivePolicy:
    """The policy of an organization as a whole: the global one, then the organization's."""
    return effective_of(await repository.policies_for(db, org_id, _NO_ONE, _NO_ONE))


_NO_ONE = uuid.UUID(int=0)  # no group or user has it


async def effective_for_group(
    db: AsyncSession, group_id: uuid.UUID, org_id: uuid.UUID
) -> EffectivePolicy:
    """The policy of a group as a whole: the global one, its organization's, then its own."""
    return await effective_for(db, _NO_ONE, group_id, org_id)


def effective_of(rows: Sequence[Any]) -> EffectivePolicy:
    """The effective policy of stored policies (rows of scope_kind, scope_id, values)."""
    return effective_policy([_layer(r) for r in rows])


async def effective_for_many(
    db: AsyncSession, asks: Sequence[tuple[uuid.UUID, uuid.UUID]]
) -> dict[tuple[uuid.UUID, uuid.UUID], EffectivePolicy]:
    """The effective policy of each (user, group) pair whose group exists, in two queries."""
    orgs = await identity.orgs_of_groups(db, [g for _, g in asks])
    rows = await repository.policies_of_scopes(
        db, list(orgs.values()), list(orgs), [u for u, _ in asks]
    )
    layers = {(r.scope_kind, r.scope_id): _layer(r) for r in rows}
    # Where each user's own policy applies (see `repository.policies_of_scopes`).
    applies = {r.scope_id: (r.everywhere, set(r.in_orgs)) for r in rows if r.scope_kind == "user"}
    out: dict[tuple[uuid.UUID, uuid.UUID], EffectivePolicy] = {}
    for user_id, group_id in set(asks):
        org_id = orgs.get(group_id)
        if org_id is None:
            continue
        keys = [("global", None), ("organization", org_id), ("group", group_id)]
        everywhere, in_orgs = applies.get(user_id, (False, set()))
        if everywhere or org_id in in_orgs:
            keys.append(("user", user_id))
        out[(user_id, group_id)] = effective_policy([layers[k] for k in keys if k in layers])
    return out


async def fair_share_tenants(db: AsyncSession, group_ids: Iterable[uuid.UUID]) -> Tenants:
    """The organizations of these groups and the weights fair share splits by, in two queries:
    each organization's `org_weight` (its own policy's, else the global one's) and each group's
    `queue_weight` (its policy's, else its organization's, else the global one's)."""
    orgs = await identity.orgs_of_groups(db, list(group_ids))
    rows = await repository.policies_of_scopes(db, list(set(orgs.values())), list(orgs), [])
    layers = {(r.scope_kind, r.scope_id): _layer(r) for r in rows}

    def weight(key: str, *scopes: tuple[str, uuid.UUID | None]) -> float:
        found = [layers[s] for s in (("global", None), *scopes) if s in layers]
        return share_weight(effective_policy(found), key)

    return Tenants(
        orgs,
        {org: weight("org_weight", ("organization", org)) for org in set(orgs.values())},
        {
            group: weight("queue_weight", ("organization", org), ("group", group))
            for group, org in orgs.items()
        },
    )


async def effective_policy_of(
    ctx: Context, user_id: uuid.UUID, group_id: uuid.UUID | None
) -> tuple[uuid.UUID, EffectivePolicy]:
    """A user's effective policy in one of their groups (the only one when they have one).

    Only the user, the super admin and admins of that very group see it: the policy of a group
    in another organization says what that organization decided, which is not theirs to read.
    A membership that has expired counts as none."""
    user_scope = await identity.user_scope_of(ctx.db, user_id)
    if user_scope is None:
        raise NotFound("No such user.", code="user_not_found")
    require(
        ctx, Action.POLICY_READ_USER, Scope(user=user_scope), target_type="user", target_id=user_id
    )
    groups = dict(user_scope.groups)
    if group_id is None:
        if len(groups) != 1:
            raise Unprocessable(
                "The user is in several groups (or none); name one with group_id.",
                code="group_required",
            )
        group_id = next(iter(groups))
    actor = ctx.actor
    org_id = groups.get(group_id)
    if (
        org_id is None
        or await identity.membership_org(ctx.db, user_id, group_id, ctx.now) is None
        or not (
            actor.user_id == user_id
            or actor.is_super_admin
            or actor.administers_group(group_id, org_id)
        )
    ):
        raise NotFound("The user is not in that group.", code="not_in_group")
    return group_id, await effective_for(ctx.db, user_id, group_id, org_id)
