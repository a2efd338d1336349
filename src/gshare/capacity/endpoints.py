"""Capacity routes: the inventory callback, cards, pools and MIG layouts, models and tiers,
resource policies, the admission preview and the queue."""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request

from gshare.capacity import admission, mig, service
from gshare.capacity.models import GpuModel, GpuTier, ResourcePolicy
from gshare.capacity.schemas import (
    AdmissionPreviewIn,
    AdmissionPreviewOut,
    CardOut,
    CardPage,
    EffectivePolicyOut,
    EffectiveValueOut,
    GpuModelIn,
    GpuModelOut,
    GpuModelPage,
    GpuModelPatch,
    InventoryAck,
    InventoryReport,
    MigChoicesOut,
    MigLayoutPut,
    PolicyOut,
    PolicyPut,
    PoolPut,
    PriorityOut,
    QueueItemOut,
    QueuePage,
    TierIn,
    TierOut,
    TierPage,
    TierPatch,
)
from gshare.capacity.tiers import TierKind, TierSpec
from gshare.clusters.callbacks import CallingCluster, OperatorCallbackRoute, refused_callback
from gshare.credits.amounts import format_amount
from gshare.credits.service import amount_of
from gshare.identity import service as identity
from gshare.identity.dependencies import Ctx
from gshare.identity.permissions import Action
from gshare.kit.errors import NotFound
from gshare.kit.web import AppSettings, DbSession, Now, declare

router = APIRouter()
callbacks = APIRouter(route_class=OperatorCallbackRoute)


@callbacks.put(
    "/internal/v1/clusters/{cluster_id}/inventory",
    response_model=InventoryAck,
    **declare(Action.CLUSTER_CALLBACK, 404),
)
async def report_inventory(
    cluster_id: uuid.UUID,
    body: InventoryReport,
    caller: CallingCluster,
    request: Request,
    db: DbSession,
    now: Now,
) -> InventoryAck:
    """The operator's whole GPU inventory, parsed from HAMi's node annotations."""
    if caller != cluster_id:
        raise refused_callback(request, now, "wrong_cluster")
    applied = await service.apply_inventory(db, caller, body, now)
    return InventoryAck(applied=applied, sequence=body.sequence)


# ---- cards ---------------------------------------------------------------------------------


async def _card_out(ctx: Ctx, views: list[service.CardView]) -> list[CardOut]:
    emails = await identity.emails(ctx.session, [a.user_id for v in views for a in v.held])
    out = []
    for view in views:
        card = view.card
        occupied = {a.slot for a in view.held}
        out.append(
            CardOut(
                id=card.id,
                uuid=card.uuid,
                node=card.node,
                model=card.model,
                memory_mib=card.memory_mib,
                cores=card.cores,
                split_count=card.split_count,
                healthy=card.healthy,
                missing=card.missing,
                last_seen_at=card.last_seen_at,
                pool=card.pool,
                carved_tier=view.carved_tier.name if view.carved_tier else None,
                carved_slots=card.carved_slots if view.held else None,
                free_slots=view.free_slots if view.held else None,
                mig_instances=[
                    {
                        "profile": i["profile"],
                        "start": i["start"],
                        "occupied": i["start"] in occupied,
                    }
                    for i in card.mig_layout
                ],
                occupants=[
                    {
                        "request_id": a.request_id,
                        "user_id": a.user_id,
                        "user_email": emails.get(a.user_id, ""),
                        "group_id": a.group_id,
                        "tier": a.tier_name,
                        "slot": a.slot,
                        "mig_profile": a.mig_profile,
                        "vram_mib": a.vram_mib,
                        "status": a.status,
                        "admitted_at": a.admitted_at,
                    }
                    for a in view.held
                ],
            )
        )
    return out


@router.get(
    "/api/v1/clusters/{cluster_id}/cards",
    response_model=CardPage,
    **declare(Action.CAPACITY_READ, 404),
)
async def list_cards(cluster_id: uuid.UUID, ctx: Ctx) -> CardPage:
    """Each card with its pool, carving, occupants and free slots or MIG instances."""
    return CardPage(items=await _card_out(ctx, await service.cluster_cards(ctx, cluster_id)))


@router.put(
    "/api/v1/cards/{card_id}/pool",
    response_model=CardOut,
    **declare(Action.CAPACITY_MANAGE, 404, 409),
)
async def put_card_pool(card_id: uuid.UUID, body: PoolPut, ctx: Ctx) -> CardOut:
    """Move a card between the hami-core and mig pools; only while nothing is allocated on it."""
    return (await _card_out(ctx, [await service.set_pool(ctx, card_id, body.pool)]))[0]


@router.put(
    "/api/v1/cards/{card_id}/mig-layout",
    response_model=CardOut,
    **declare(Action.CAPACITY_MANAGE, 404, 409),
)
async def put_mig_layout(card_id: uuid.UUID, body: MigLayoutPut, ctx: Ctx) -> CardOut:
    """Set a mig-pool card's MIG instances; only layouts the GPU accepts, only while empty."""
    items = [(i.profile, i.start) for i in body.instances]
    return (await _card_out(ctx, [await service.set_mig_layout(ctx, card_id, items)]))[0]


@router.get(
    "/api/v1/cards/{card_id}/mig-layouts",
    response_model=MigChoicesOut,
    **declare(Action.CAPACITY_READ, 404),
)
async def get_mig_layouts(card_id: uuid.UUID, ctx: Ctx) -> MigChoicesOut:
    """The full MIG layouts the card's GPU accepts, to choose from."""
    geometry_name, layouts = await service.mig_choices(ctx, card_id)
    geometry = mig.geometry_for(geometry_name)
    profiles = [p.name for p in geometry.profiles] if geometry else []
    return MigChoicesOut(
        geometry=geometry_name, profiles=profiles, layouts=[list(x) for x in layouts]
    )


# ---- models and tiers ----------------------------------------------------------------------


def _tier_out(tier: GpuTier, model: GpuModel) -> TierOut:
    return TierOut(
        id=tier.id,
        model_id=model.id,
        model=model.name,
        name=tier.name,
        kind=tier.kind,
        denominator=tier.denominator,
        mig_profile=tier.mig_profile,
        vram_mib=tier.vram_mib,
        compute_percent=tier.compute_percent,
        price_per_hour=format_amount(tier.price),
        price_is_default=tier.price_is_default,
        retired_at=tier.retired_at,
    )


def _model_out(model: GpuModel, tiers: list[GpuTier]) -> GpuModelOut:
    geometry = mig.geometry_for(model.name)
    return GpuModelOut(
        id=model.id,
        name=model.name,
        memory_mib=model.memory_mib,
        split_count=model.split_count,
        exclusive_price=format_amount(model.exclusive_price),
        mig_geometry=geometry.model if geometry else None,
        tiers=[_tier_out(t, model) for t in tiers],
    )


@router.get("/api/v1/tiers", response_model=TierPage, **declare(Action.TIERS_READ, 404))
async def list_tiers(ctx: Ctx, group_id: Annotated[uuid.UUID | None, Query()] = None) -> TierPage:
    """The tiers the caller may use (in `group_id`, or in any of their groups), with prices."""
    pairs = await service.usable_tiers(ctx, group_id)
    return TierPage(items=[_tier_out(t, m) for t, m in pairs])


@router.get("/api/v1/gpu-models", response_model=GpuModelPage, **declare(Action.CAPACITY_READ))
async def list_gpu_models(ctx: Ctx) -> GpuModelPage:
    """Every priced GPU model with all its tiers, retired ones included."""
    return GpuModelPage(items=[_model_out(m, t) for m, t in await service.list_models(ctx)])


@router.post(
    "/api/v1/gpu-models",
    status_code=201,
    response_model=GpuModelOut,
    **declare(Action.CAPACITY_MANAGE, 400, 409),
)
async def create_gpu_model(body: GpuModelIn, ctx: Ctx) -> GpuModelOut:
    """Price a GPU model by the name its cards report."""
    model = await service.create_model(
        ctx,
        name=body.name,
        exclusive_price=amount_of(body.exclusive_price, allow_zero=True),
        memory_mib=body.memory_mib,
        split_count=body.split_count,
    )
    return _model_out(model, [])


@router.patch(
    "/api/v1/gpu-models/{model_id}",
    response_model=GpuModelOut,
    **declare(Action.CAPACITY_MANAGE, 400, 404),
)
async def update_gpu_model(model_id: uuid.UUID, body: GpuModelPatch, ctx: Ctx) -> GpuModelOut:
    """A new exclusive price; tiers at their default price follow it for new admissions."""
    model = await service.update_model(
        ctx, model_id, amount_of(body.exclusive_price, allow_zero=True)
    )
    return _model_out(model, await service.tiers_of(ctx, model.id))


@router.post(
    "/api/v1/gpu-models/{model_id}/tiers",
    status_code=201,
    response_model=TierOut,
    **declare(Action.CAPACITY_MANAGE, 400, 404),
)
async def create_tier(model_id: uuid.UUID, body: TierIn, ctx: Ctx) -> TierOut:
    """Add a tier: a fraction 1/n, exclusive, or one MIG profile."""
    price = None if body.price_per_hour is None else amount_of(body.price_per_hour, allow_zero=True)
    spec = TierSpec(TierKind(body.kind), body.denominator, body.mig_profile, price)
    tier = await service.add_tier(ctx, model_id, spec)
    return _tier_out(tier, await service.model_of(ctx, tier))


@router.patch(
    "/api/v1/tiers/{tier_id}", response_model=TierOut, **declare(Action.CAPACITY_MANAGE, 400, 404)
)
async def update_tier(tier_id: uuid.UUID, body: TierPatch, ctx: Ctx) -> TierOut:
    """Change a tier's price (null: back to the default); running sessions keep theirs."""
    price = None if body.price_per_hour is None else amount_of(body.price_per_hour, allow_zero=True)
    tier = await service.set_tier_price(ctx, tier_id, price)
    return _tier_out(tier, await service.model_of(ctx, tier))


@router.delete("/api/v1/tiers/{tier_id}", status_code=204, **declare(Action.CAPACITY_MANAGE, 404))
async def retire_tier(tier_id: uuid.UUID, ctx: Ctx) -> None:
    """Retire a tier: no new admissions; its running sessions go on."""
    await service.retire_tier(ctx, tier_id)


# ---- policies ------------------------------------------------------------------------------


def _policy_out(kind: str, scope_id: uuid.UUID | None, row: ResourcePolicy | None) -> PolicyOut:
    return PolicyOut(
        scope=kind,
        scope_id=scope_id,
        values=service.policy_values(row),
        updated_at=row.updated_at if row else None,
    )


def _policy_routes(kind: str, path: str, noun: str) -> None:
    """GET, PUT and DELETE of one scope kind's policy; every scope but the global one is named
    by `{scope_id}` in the path."""
    if "{scope_id}" in path:

        async def read(scope_id: uuid.UUID, ctx: Ctx) -> PolicyOut:
            return _policy_out(kind, scope_id, await service.get_policy(ctx, kind, scope_id))

        async def write(scope_id: uuid.UUID, body: PolicyPut, ctx: Ctx) -> PolicyOut:
            row = await service.put_policy(ctx, kind, scope_id, body.values)
            return _policy_out(kind, scope_id, row)

        async def clear(scope_id: uuid.UUID, ctx: Ctx) -> None:
            await service.delete_policy(ctx, kind, scope_id)

        handlers: tuple[Any, Any, Any] = (read, write, clear)
    else:

        async def read_global(ctx: Ctx) -> PolicyOut:
            return _policy_out(kind, None, await service.get_policy(ctx, kind, None))

        async def write_global(body: PolicyPut, ctx: Ctx) -> PolicyOut:
            return _policy_out(kind, None, await service.put_policy(ctx, kind, None, body.values))

        async def clear_global(ctx: Ctx) -> None:
            await service.delete_policy(ctx, kind, None)

        handlers = (read_global, write_global, clear_global)
    read_h, write_h, clear_h = handlers
    read_h.__doc__ = f"The policy keys {noun} sets."
    write_h.__doc__ = f"Replace the policy keys {noun} sets (a key left out is unset)."
    clear_h.__doc__ = f"Unset every policy key of {noun}."
    name = kind.replace("organization", "org")
    errors = (404,) if "{scope_id}" in path else ()
    router.add_api_route(
        path,
        read_h,
        methods=["GET"],
        response_model=PolicyOut,
        name=f"get_{name}_policy",
        **declare(service.READ_ACTIONS[kind], *errors),
    )
    router.add_api_route(
        path,
        write_h,
        methods=["PUT"],
        response_model=PolicyOut,
        name=f"put_{name}_policy",
        **declare(service.SET_ACTIONS[kind], 400, *errors),
    )
    router.add_api_route(
        path,
        clear_h,
        methods=["DELETE"],
        status_code=204,
        name=f"delete_{name}_policy",
        **declare(service.SET_ACTIONS[kind], 404),
    )


_policy_routes("global", "/api/v1/policies/global", "the global scope")
_policy_routes("organization", "/api/v1/policies/orgs/{scope_id}", "an organization")
_policy_routes("group", "/api/v1/policies/groups/{scope_id}", "a group")
_policy_routes("user", "/api/v1/policies/users/{scope_id}", "a user")

_SCOPE_NAMES = {0: "global", 1: "organization", 2: "group", 3: "user"}


@router.get(
    "/api/v1/users/{user_id}/effective-policy",
    response_model=EffectivePolicyOut,
    **declare(Action.POLICY_READ_USER, 404),
)
async def effective_policy(
    user_id: uuid.UUID, ctx: Ctx, group_id: Annotated[uuid.UUID | None, Query()] = None
) -> EffectivePolicyOut:
    """Each key's value for the user in one of their groups, with the scope it came from."""
    group, policy = await service.effective_policy_of(ctx, user_id, group_id)
    values = []
    for key, found in policy.values.items():
        value: Any = found.value
        if isinstance(value, frozenset):
            value = sorted(value)
        values.append(
            EffectiveValueOut(
                key=key,
                value=value,
                scope=_SCOPE_NAMES[int(found.scope.kind)] if found.scope else None,
                scope_id=found.scope.id if found.scope else None,
            )
        )
    return EffectivePolicyOut(user_id=user_id, group_id=group, values=values)


# ---- admission and the queue ---------------------------------------------------------------


@router.post(
    "/api/v1/admission/preview",
    response_model=AdmissionPreviewOut,
    **declare(Action.ADMISSION_PREVIEW, 403, 404),
)
async def preview_admission(
    body: AdmissionPreviewIn, ctx: Ctx, settings: AppSettings
) -> AdmissionPreviewOut:
    """What admission would do for the caller now (start, queue, or why not), its price per
    hour and how long the caller's credits last at it. Changes nothing."""
    if body.group_id not in {**ctx.actor.guest_of, **ctx.actor.member_of}:
        # Like `GET /api/v1/tiers?group_id=`: a group one is not in is not there for one.
        raise NotFound("You are not in that group.", code="not_in_group")
    ask = admission.Ask(
        uuid.uuid4(),
        ctx.actor.user_id,
        body.group_id,
        body.tier_id,
        round(body.cpu_cores * 1000),
        body.memory_mib,
    )
    found = await admission.preview(ctx, ask, settings)
    denial = found.denial
    return AdmissionPreviewOut(
        outcome=found.outcome,
        message=found.message,
        price_per_hour=format_amount(found.price),
        available_credits=format_amount(max(found.available, 0)),
        hours_affordable=found.hours,
        queue_position=found.position,
        estimated_wait_seconds=(
            found.estimated_wait.total_seconds() if found.estimated_wait else None
        ),
        policy_key=denial.key if denial else None,
        policy_scope=denial.scope if denial else None,
    )


@router.get("/api/v1/queue", response_model=QueuePage, **declare(Action.QUEUE_READ_OWN))
async def list_queue(
    ctx: Ctx,
    settings: AppSettings,
    scope: Annotated[Literal["own", "all"], Query()] = "own",
) -> QueuePage:
    """The caller's own requests, newest first; `scope=all` (admins): every request in the
    groups they administer, with each queued request's priority and its parts."""
    rows, standings, admin = await admission.queue_view(ctx, settings, whole_scope=scope == "all")
    emails = await identity.emails(ctx.session, list({r.user_id for r in rows}))
    items = []
    for row in rows:
        standing = standings.get(row.id) if row.status == "queued" else None
        priority = None
        if admin and standing is not None:
            p = standing.priority
            priority = PriorityOut(
                value=p.value,
                waited_seconds=p.waited.total_seconds(),
                wait_bonus=p.wait_bonus,
                user_usage=p.user_usage,
                group_usage=p.group_usage,
                weight=p.weight,
                starving=p.starving,
            )
        items.append(
            QueueItemOut(
                id=row.id,
                user_id=row.user_id,
                user_email=emails.get(row.user_id, ""),
                group_id=row.group_id,
                model=row.model,
                tier=row.tier_name,
                status=row.status,
                reason=row.reason,
                enqueued_at=row.enqueued_at,
                decided_at=row.decided_at,
                position=standing.position if standing else None,
                estimated_wait_seconds=(
                    standing.estimated_wait.total_seconds() if standing else None
                ),
                reserved_card_id=row.reserved_card_id,
                priority=priority,
            )
        )
    return QueuePage(items=items)


@router.delete(
    "/api/v1/queue/{request_id}", status_code=204, **declare(Action.QUEUE_CANCEL, 404, 409)
)
async def cancel_queued(request_id: uuid.UUID, ctx: Ctx) -> None:
    """Withdraw a queued request (its owner, or an admin of its group)."""
    await admission.cancel(ctx, request_id)


router.include_router(callbacks)
