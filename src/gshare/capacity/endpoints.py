"""Capacity routes: the inventory callback, cards, pools and MIG layouts, models and tiers,
resource policies, the admission preview and the queue."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request

from gshare.capacity import admission, bookings, boundaries, preempting, service, shares, views
from gshare.capacity.schemas import (
    AdmissionPreviewIn,
    AdmissionPreviewOut,
    BookingCheckOut,
    BookingEdit,
    BookingIn,
    BookingOut,
    BookingPage,
    CalendarOut,
    CalendarResource,
    CalendarStep,
    CardErrorAck,
    CardErrorReport,
    CardOut,
    CardPage,
    DedicationCreate,
    DedicationOut,
    DedicationPage,
    DrainIn,
    DrainOut,
    DrainPage,
    EffectivePolicyOut,
    GpuModelIn,
    GpuModelOut,
    GpuModelPage,
    GpuModelPatch,
    GroupShareOut,
    InventoryAck,
    InventoryReport,
    MigChoicesOut,
    MigLayoutPut,
    NodePage,
    NoticePage,
    OrgIsolationOut,
    PolicyOut,
    PolicyPut,
    PoolPut,
    QueuePage,
    TierIn,
    TierOut,
    TierPage,
    TierPatch,
)
from gshare.capacity.tiers import TierKind, TierSpec
from gshare.clusters.callbacks import CallingCluster, OperatorCallbackRoute, refused_callback
from gshare.credits.service import amount_of
from gshare.identity.dependencies import Ctx
from gshare.identity.permissions import Action
from gshare.kit.errors import NotFound
from gshare.kit.schemas import NO_NUL, UtcDatetime
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


@router.get(
    "/api/v1/clusters/{cluster_id}/cards",
    response_model=CardPage,
    **declare(Action.CAPACITY_READ, 404),
)
async def list_cards(cluster_id: uuid.UUID, ctx: Ctx) -> CardPage:
    """Each card with its pool, carving, occupants and free slots or MIG instances."""
    return CardPage(
        items=await views.cards_out(ctx.db, await service.cluster_cards(ctx, cluster_id))
    )


@router.put(
    "/api/v1/cards/{card_id}/pool",
    response_model=CardOut,
    **declare(Action.CAPACITY_MANAGE, 404, 409),
)
async def put_card_pool(card_id: uuid.UUID, body: PoolPut, ctx: Ctx) -> CardOut:
    """Move a card between the hami-core and mig pools; only while nothing is allocated on it."""
    return await views.card_out(ctx.db, await service.set_pool(ctx, card_id, body.pool))


@router.put(
    "/api/v1/cards/{card_id}/mig-layout",
    response_model=CardOut,
    **declare(Action.CAPACITY_MANAGE, 404, 409),
)
async def put_mig_layout(card_id: uuid.UUID, body: MigLayoutPut, ctx: Ctx) -> CardOut:
    """Set a mig-pool card's MIG instances; only layouts the GPU accepts, only while empty."""
    items = [(i.profile, i.start) for i in body.instances]
    return await views.card_out(ctx.db, await service.set_mig_layout(ctx, card_id, items))


@router.get(
    "/api/v1/cards/{card_id}/mig-layouts",
    response_model=MigChoicesOut,
    **declare(Action.CAPACITY_READ, 404),
)
async def get_mig_layouts(card_id: uuid.UUID, ctx: Ctx) -> MigChoicesOut:
    """The full MIG layouts the card's GPU accepts, to choose from."""
    return views.mig_choices_out(*await service.mig_choices(ctx, card_id))


# ---- models and tiers ----------------------------------------------------------------------


@router.get("/api/v1/tiers", response_model=TierPage, **declare(Action.TIERS_READ, 404))
async def list_tiers(ctx: Ctx, group_id: Annotated[uuid.UUID | None, Query()] = None) -> TierPage:
    """The tiers the caller may use (in `group_id`, or in any of their groups), with prices,
    free slots now and, for a tier with none, about how long a new session would wait."""
    pairs = await service.usable_tiers(ctx, group_id)
    isolation = await service.caller_isolation(ctx, group_id)
    found = await admission.availability(ctx.db, pairs, ctx.now, isolation)
    return TierPage(items=views.usable_tiers_out(pairs, found))


@router.get("/api/v1/gpu-models", response_model=GpuModelPage, **declare(Action.CAPACITY_READ))
async def list_gpu_models(ctx: Ctx) -> GpuModelPage:
    """Every priced GPU model with all its tiers, retired ones included."""
    return GpuModelPage(items=[views.model_out(m, t) for m, t in await service.list_models(ctx)])


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
    return views.model_out(model, [])


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
    return views.model_out(model, await service.tiers_of(ctx, model.id))


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
    return views.tier_out(tier, await service.model_of(ctx, tier))


@router.patch(
    "/api/v1/tiers/{tier_id}", response_model=TierOut, **declare(Action.CAPACITY_MANAGE, 400, 404)
)
async def update_tier(tier_id: uuid.UUID, body: TierPatch, ctx: Ctx) -> TierOut:
    """Change a tier's price (null: back to the default); running sessions keep theirs."""
    price = None if body.price_per_hour is None else amount_of(body.price_per_hour, allow_zero=True)
    tier = await service.set_tier_price(ctx, tier_id, price)
    return views.tier_out(tier, await service.model_of(ctx, tier))


@router.delete("/api/v1/tiers/{tier_id}", status_code=204, **declare(Action.CAPACITY_MANAGE, 404))
async def retire_tier(tier_id: uuid.UUID, ctx: Ctx) -> None:
    """Retire a tier: no new admissions; its running sessions go on."""
    await service.retire_tier(ctx, tier_id)


# ---- policies ------------------------------------------------------------------------------


def _policy_routes(kind: str, path: str, noun: str) -> None:
    """GET, PUT and DELETE of one scope kind's policy; every scope but the global one is named
    by `{scope_id}` in the path."""
    if "{scope_id}" in path:

        async def read(scope_id: uuid.UUID, ctx: Ctx) -> PolicyOut:
            return views.policy_out(kind, scope_id, await service.get_policy(ctx, kind, scope_id))

        async def write(scope_id: uuid.UUID, body: PolicyPut, ctx: Ctx) -> PolicyOut:
            row = await service.put_policy(ctx, kind, scope_id, body.values)
            return views.policy_out(kind, scope_id, row)

        async def clear(scope_id: uuid.UUID, ctx: Ctx) -> None:
            await service.delete_policy(ctx, kind, scope_id)

        handlers: tuple[Any, Any, Any] = (read, write, clear)
    else:

        async def read_global(ctx: Ctx) -> PolicyOut:
            return views.policy_out(kind, None, await service.get_policy(ctx, kind, None))

        async def write_global(body: PolicyPut, ctx: Ctx) -> PolicyOut:
            return views.policy_out(
                kind, None, await service.put_policy(ctx, kind, None, body.values)
            )

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
    return views.effective_policy_out(user_id, group, policy)


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
    return views.preview_out(await admission.preview(ctx, ask, settings))


@router.get(
    "/api/v1/groups/{group_id}/fair-share",
    response_model=GroupShareOut,
    **declare(Action.FAIR_SHARE_READ, 403, 404),
)
async def get_group_fair_share(
    group_id: uuid.UUID, ctx: Ctx, settings: AppSettings
) -> GroupShareOut:
    """The group's GPU use against its share over the decay window, and its organization's
    groups beside it (their names, use and shares, so that members see where their group
    stands; no people), for whoever is in or administers the group; each current member's use
    for the group's admins."""
    return views.group_share_out(await shares.group_share(ctx, group_id, settings))


@router.get("/api/v1/queue", response_model=QueuePage, **declare(Action.QUEUE_READ_OWN))
async def list_queue(
    ctx: Ctx,
    settings: AppSettings,
    scope: Annotated[Literal["own", "all"], Query()] = "own",
) -> QueuePage:
    """The caller's own requests, newest first; `scope=all` (admins): every request in the
    groups they administer, with each queued request's priority and its parts."""
    rows, standings, admin = await admission.queue_view(ctx, settings, whole_scope=scope == "all")
    return QueuePage(items=await views.queue_out(ctx.db, rows, standings, with_priorities=admin))


@router.delete(
    "/api/v1/queue/{request_id}", status_code=204, **declare(Action.QUEUE_CANCEL, 404, 409)
)
async def cancel_queued(request_id: uuid.UUID, ctx: Ctx) -> None:
    """Withdraw a queued request (its owner, or an admin of its group)."""
    await admission.cancel(ctx, request_id)


# ---- drains and notices --------------------------------------------------------------------


def _drain_out(found: preempting.DrainView) -> DrainOut:
    d = found.drain
    return DrainOut(
        id=d.id,
        scope=d.scope,
        cluster_id=d.cluster_id,
        node=d.node,
        card_id=d.card_id,
        reason=d.reason,
        source=d.source,
        deadline=d.deadline,
        status=d.status,
        created_at=d.created_at,
        ended_at=d.ended_at,
        cards=found.cards,
        sessions_left=found.sessions_left,
        next_deadline=found.next_deadline,
    )


@router.post(
    "/api/v1/drains",
    status_code=201,
    response_model=DrainOut,
    **declare(Action.CAPACITY_MANAGE, 404),
)
async def start_drain(body: DrainIn, ctx: Ctx) -> DrainOut:
    """Drain a card, a node or a cluster for maintenance: it takes no new session, and the
    sessions on it are given notice and paused at the deadline, to resume elsewhere."""
    found = await preempting.start_drain(
        ctx,
        scope=body.scope,
        cluster_id=body.cluster_id,
        node=body.node,
        card_id=body.card_id,
        deadline=body.deadline,
        reason=body.reason,
    )
    return _drain_out(found)


@router.get("/api/v1/drains", response_model=DrainPage, **declare(Action.CAPACITY_READ))
async def list_drains(
    ctx: Ctx, active: Annotated[bool, Query(description="Only active drains.")] = True
) -> DrainPage:
    """Drains with their progress: the cards covered, the sessions left, the next deadline."""
    return DrainPage(
        items=[_drain_out(d) for d in await preempting.list_drains(ctx, active_only=active)]
    )


@router.post(
    "/api/v1/drains/{drain_id}/end",
    response_model=DrainOut,
    **declare(Action.CAPACITY_MANAGE, 404, 409),
)
async def end_drain(drain_id: uuid.UUID, ctx: Ctx) -> DrainOut:
    """The maintenance is done: the capacity takes sessions again."""
    return _drain_out(await preempting.end_drain(ctx, drain_id, "ended"))


@router.post(
    "/api/v1/drains/{drain_id}/cancel",
    response_model=DrainOut,
    **declare(Action.CAPACITY_MANAGE, 404, 409),
)
async def cancel_drain(drain_id: uuid.UUID, ctx: Ctx) -> DrainOut:
    """Call the drain off: the capacity takes sessions again and pending notices are
    withdrawn."""
    return _drain_out(await preempting.end_drain(ctx, drain_id, "cancelled"))


@router.get("/api/v1/notices", response_model=NoticePage, **declare(Action.QUEUE_READ_SCOPE))
async def list_notices(
    ctx: Ctx,
    pending: Annotated[bool, Query(description="Only notices still running.")] = True,
    days: Annotated[int, Query(ge=1, le=366, description="How far back.")] = 30,
) -> NoticePage:
    """Preemption and drain notices given to sessions of the groups the caller administers, or
    for their requests, with each group's preemption counts over the period (admins)."""
    seen = await preempting.list_notices(
        ctx, pending_only=pending, since=ctx.now - timedelta(days=days)
    )
    return views.notice_page(seen)


@callbacks.put(
    "/internal/v1/clusters/{cluster_id}/card-errors",
    response_model=CardErrorAck,
    **declare(Action.CLUSTER_CALLBACK, 404),
)
async def report_card_errors(
    cluster_id: uuid.UUID,
    body: CardErrorReport,
    caller: CallingCluster,
    request: Request,
    db: DbSession,
    now: Now,
) -> CardErrorAck:
    """Cards of the cluster whose DCGM exporter shows new hardware trouble (a fatal XID,
    double-bit ECC errors, a failed row remap): each drains itself with a short notice, and
    every super admin is told. Cards the cluster does not have are ignored."""
    if caller != cluster_id:
        raise refused_callback(request, now, "wrong_cluster")
    drained = await preempting.report_card_errors(db, caller, body.items, now)
    return CardErrorAck(drained=drained)


router.include_router(callbacks)


# ---- bookings ------------------------------------------------------------------------------


def _booking_out(found: bookings.BookingView) -> BookingOut:
    b = found.booking
    window = found.next_window
    return BookingOut(
        id=b.id,
        group_id=b.group_id,
        group_name=found.group_name,
        tier_id=b.tier_id,
        tier_name=found.tier_name,
        model=b.model,
        count=b.count,
        starts_at=b.starts_at,
        ends_at=b.ends_at,
        weekly_until=b.weekly_until,
        title=b.title,
        notice_minutes=b.notice_minutes,
        status=b.status,
        created_at=b.created_at,
        updated_at=b.updated_at,
        cancelled_at=b.cancelled_at,
        next_window=None if window is None else (window.starts_at, window.ends_at),
        can_manage=found.can_manage,
        in_use=found.in_use,
    )


@router.get("/api/v1/bookings", response_model=BookingPage, **declare(Action.BOOKING_READ))
async def list_bookings(
    ctx: Ctx,
    model: Annotated[
        str | None, Query(max_length=120, pattern=NO_NUL, description="Of this GPU model.")
    ] = None,
    group_id: Annotated[uuid.UUID | None, Query(description="Of this group.")] = None,
    ended: Annotated[bool, Query(description="Also ended and cancelled ones.")] = False,
) -> BookingPage:
    """The bookings of the groups the caller is in or administers (every one for the super
    admin), soonest first."""
    found = await bookings.list_bookings(ctx, model=model, group_id=group_id, include_ended=ended)
    return BookingPage(items=[_booking_out(b) for b in found])


@router.get(
    "/api/v1/bookings/calendar",
    response_model=CalendarOut,
    **declare(Action.BOOKING_READ, 404),
)
async def booking_calendar(
    ctx: Ctx,
    model: Annotated[
        str, Query(min_length=1, max_length=120, pattern=NO_NUL, description="The GPU model.")
    ],
    starts_at: Annotated[UtcDatetime, Query(description="From this instant.")],
    ends_at: Annotated[UtcDatetime, Query(description="To this one, at most 62 days later.")],
    group_id: Annotated[
        uuid.UUID | None,
        Query(description="The cards this group may use (one the caller is in or administers)."),
    ] = None,
) -> CalendarOut:
    """Booked and free capacity of a GPU model over a window: for its whole cards, and for
    each MIG profile's instances, of the cards the caller's groups may use at their isolation
    levels, or those of `group_id` (a node dedicated to another tenant is not counted, nor, for
    a dedicated level, any but the tenant's own; the super admin sees every card). It names no
    group and no title."""
    found = await bookings.calendar(ctx, model, starts_at, ends_at, group_id)
    return CalendarOut(
        model=found.model,
        starts_at=found.window.starts_at,
        ends_at=found.window.ends_at,
        resources=[
            CalendarResource(
                pool=resource.pool,
                profile=resource.profile,
                unit="cards" if resource.pool == "hami-core" else "instances",
                capacity=capacity,
                steps=[
                    CalendarStep(
                        starts_at=s.window.starts_at,
                        ends_at=s.window.ends_at,
                        booked=s.booked,
                        free=s.free,
                    )
                    for s in steps
                ],
            )
            for resource, capacity, steps in found.resources
        ],
    )


@router.post(
    "/api/v1/bookings/check",
    response_model=BookingCheckOut,
    **declare(Action.BOOKING_MANAGE, 404),
)
async def check_booking(body: BookingIn, ctx: Ctx) -> BookingCheckOut:
    """Whether this booking would be accepted now, and if not why; books nothing."""
    decided = await bookings.check(ctx, body)
    refusal = decided.refusal
    return BookingCheckOut(
        fits=refusal is None,
        code=None if refusal is None else refusal.code,
        message="It fits." if refusal is None else refusal.message,
        at=decided.at,
    )


@router.post(
    "/api/v1/bookings",
    status_code=201,
    response_model=BookingOut,
    **declare(Action.BOOKING_MANAGE, 404, 409),
)
async def create_booking(body: BookingIn, ctx: Ctx) -> BookingOut:
    """Book capacity for a group: 409 `booking_conflict` names the first moment the capacity
    falls short, 409 `booking_quota` the first week over the group's or the organization's
    card-hours, 403 `policy_denied` what the group's policy does not let its members run."""
    return _booking_out(await bookings.create(ctx, body))


@router.get(
    "/api/v1/bookings/{booking_id}",
    response_model=BookingOut,
    **declare(Action.BOOKING_READ, 404),
)
async def get_booking(booking_id: uuid.UUID, ctx: Ctx) -> BookingOut:
    return _booking_out(await bookings.get_booking(ctx, booking_id))


@router.patch(
    "/api/v1/bookings/{booking_id}",
    response_model=BookingOut,
    **declare(Action.BOOKING_MANAGE, 404, 409),
)
async def edit_booking(booking_id: uuid.UUID, body: BookingEdit, ctx: Ctx) -> BookingOut:
    """Change a booking before it starts; it is checked again as a whole."""
    return _booking_out(await bookings.edit(ctx, booking_id, body))


@router.post(
    "/api/v1/bookings/{booking_id}/cancel",
    response_model=BookingOut,
    **declare(Action.BOOKING_MANAGE, 404, 409),
)
async def cancel_booking(booking_id: uuid.UUID, ctx: Ctx) -> BookingOut:
    """Call a booking off; sessions running on it go on as ordinary sessions."""
    return _booking_out(await bookings.cancel(ctx, booking_id))


# ---- isolation levels ----------------------------------------------------------------------


@router.get("/api/v1/isolation/nodes", response_model=NodePage, **declare(Action.ISOLATION_MANAGE))
async def list_isolation_nodes(ctx: Ctx) -> NodePage:
    """Every node with cards: what it offers to isolation levels and whom it is dedicated to."""
    return NodePage(items=await views.nodes_out(ctx.db, await boundaries.nodes(ctx)))


@router.get(
    "/api/v1/isolation/dedications",
    response_model=DedicationPage,
    **declare(Action.ISOLATION_MANAGE),
)
async def list_dedications(ctx: Ctx) -> DedicationPage:
    """Every node and cluster dedicated to a tenant."""
    return DedicationPage(
        items=await views.dedications_out(ctx.db, await boundaries.dedications(ctx))
    )


@router.post(
    "/api/v1/isolation/dedications",
    status_code=201,
    response_model=DedicationOut,
    **declare(Action.ISOLATION_MANAGE, 404, 409),
)
async def create_dedication(body: DedicationCreate, ctx: Ctx) -> DedicationOut:
    """Dedicate a node, or a whole cluster, to one organization or group: its cards take only
    that tenant's sessions. Put the label and taint the answer names on the node."""
    found = await boundaries.dedicate(
        ctx, body.cluster_id, body.node, body.organization_id, body.group_id
    )
    return (await views.dedications_out(ctx.db, [found]))[0]


@router.delete(
    "/api/v1/isolation/dedications/{dedication_id}",
    status_code=204,
    **declare(Action.ISOLATION_MANAGE, 404),
)
async def delete_dedication(dedication_id: uuid.UUID, ctx: Ctx) -> None:
    """Give a dedicated node back to everyone."""
    await boundaries.undedicate(ctx, dedication_id)


@router.get(
    "/api/v1/orgs/{org_id}/isolation",
    response_model=OrgIsolationOut,
    **declare(Action.ISOLATION_AUDIT, 404),
)
async def get_org_isolation(org_id: uuid.UUID, ctx: Ctx) -> OrgIsolationOut:
    """The organization's isolation level, where its sessions ran in the last 30 days, and any
    pod its operators found outside its level."""
    return await views.org_isolation_out(ctx.db, await boundaries.org_report(ctx, org_id))
