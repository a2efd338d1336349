"""Bookings: GPU capacity a group books ahead for a class or a deadline.

A group admin books for their group, an org admin for any group of the organization, the super
admin for any group. A booking is accepted only if, at every moment of each of its windows, the
capacity that exists now (usable cards of the model on connected clusters, in the tier's pool,
not draining) less what other bookings hold covers it, and the group's effective policy allows
it: sessions of the tier may run at all, the group stays within `max_booked_card_hours_week`
(168 card-hours unless the super admin sets more or less) and `max_booking_days_ahead`, and all
of its organization's groups together within `max_org_booked_card_hours_week`. The arithmetic
is `reservations.py`'s; this module reads, locks and writes around it.

Two bookings of one model (or one organization) are decided one at a time: each takes the
organization's, then the model's advisory lock before it reads the others.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from gshare.capacity import repository, reservations, service
from gshare.capacity.isolation import Isolation, NodeTraits, admits
from gshare.capacity.mig import MEMORY_SLICES, geometry_for
from gshare.capacity.models import Booking, GpuModel, GpuTier
from gshare.capacity.placement import MIG
from gshare.capacity.policy import EffectivePolicy, SessionRequest, Usage, check_request
from gshare.capacity.queue import QueuedRequest
from gshare.capacity.reservations import Conflict as Shortfall
from gshare.capacity.reservations import Resource, Window
from gshare.capacity.schemas import BookingEdit, BookingIn
from gshare.clusters import service as clusters
from gshare.events import outbox
from gshare.events.notifications import notify_user
from gshare.identity import service as identity
from gshare.identity.authz import Context, audit, require
from gshare.identity.permissions import Action, Actor, Scope
from gshare.kit.errors import Conflict, Forbidden, NotFound, Unprocessable
from gshare.kit.ids import new_id

MAX_WINDOW = timedelta(days=14)
MAX_WEEKLY_WINDOW = timedelta(days=7)
MAX_RECURRENCE = timedelta(days=366)
PAST_GRACE = timedelta(minutes=1)  # a start "now" typed a moment ago is still now
MAX_CALENDAR = timedelta(days=62)
MAX_AHEAD = timedelta(days=3660 + 366)  # the longest `max_booking_days_ahead`, then a year
NOTIFICATION = "booking.changed"
CHANGED = "booking.changed"  # the live event: the calendars and booking lists refresh


class BookingConflict(Conflict):
    code = "booking_conflict"
    message = "The capacity is not there for this booking."


@dataclass(frozen=True)
class BookingView:
    booking: Booking
    tier_name: str
    group_name: str
    can_manage: bool
    next_window: Window | None
    in_use: int | None = None  # while a window runs: the group's sessions of the tier now


@dataclass(frozen=True)
class Check:
    """Whether a booking would be accepted: None when it would, else the refusal."""

    refusal: Conflict | Forbidden | Unprocessable | None
    at: datetime | None = None


# ---- what a booking holds ------------------------------------------------------------------


def resource_of(tier: GpuTier, model: GpuModel) -> tuple[Resource, int, float]:
    """What a booking of one session of `tier` competes for, how many units `count` of them
    need (see `amount_of`), and what one unit counts as in whole cards."""
    if tier.kind == "mig":
        profile = tier.mig_profile or ""
        geometry = geometry_for(model.name)
        found = geometry.profile(profile) if geometry else None
        units = found.memory_slices / MEMORY_SLICES if found else 1.0
        return Resource(model.name, MIG, found.name if found else profile), 1, units
    per_card = 1 if tier.kind == "exclusive" else min(tier.denominator or 1, model.split_count)
    return Resource(model.name), max(per_card, 1), 1.0


def _pure(booking: Booking, tier: GpuTier, model: GpuModel) -> reservations.Booking:
    resource, per_unit, units = resource_of(tier, model)
    amount = booking.count if per_unit == 1 else reservations.cards_for(booking.count, per_unit)
    return reservations.Booking(
        booking.id,
        resource,
        amount,
        Window(booking.starts_at, booking.ends_at),
        booking.weekly_until,
        units,
    )


def next_window(booking: Booking, now: datetime) -> Window | None:
    """The booking's window running at `now`, or its next one; None once the last has ended."""
    pure = reservations.Booking(
        booking.id,
        Resource(booking.model),
        1,
        Window(booking.starts_at, booking.ends_at),
        booking.weekly_until,
    )
    found = reservations.occurrences(pure, Window(now, reservations.span(pure).ends_at))
    return found[0] if found else None


@dataclass(frozen=True)
class _Cards:
    """What exists of each of a model's resources now, by the traits of the cards' nodes
    (whom they take and what they offer: all that decides who may use them): usable hami-core
    cards, and the instances of each profile on usable MIG cards."""

    by_traits: dict[NodeTraits, dict[Resource, int]]

    def reach(self, isolation: Isolation | None) -> frozenset[NodeTraits]:
        """The kinds of card a session at `isolation` may use (every kind: None)."""
        return frozenset(t for t in self.by_traits if isolation is None or admits(t, isolation))

    def capacity(self, kinds: Iterable[NodeTraits], resource: Resource) -> int:
        return sum(self.by_traits.get(k, {}).get(resource, 0) for k in kinds)


async def _cards(ctx: Context, model: str) -> _Cards:
    rows = await repository.snapshot_rows(ctx.db, await clusters.connected_ids(ctx.db), {model})
    found: dict[NodeTraits, dict[Resource, int]] = {}
    for card in rows:
        counts = found.setdefault(repository.traits_of(card), {})
        if card.pool == MIG:
            for instance in card.mig_layout or ():
                key = Resource(model, MIG, instance["profile"])
                counts[key] = counts.get(key, 0) + 1
        else:
            counts[Resource(model)] = counts.get(Resource(model), 0) + 1
    return _Cards(found)


@dataclass(frozen=True)
class _Shared:
    """The bookings of a model as they bear on one booker: each one's kinds of card, and the
    pools of kinds the booker shares with them (see `reservations.pools`)."""

    cards: _Cards
    mine: frozenset[NodeTraits]
    pures: dict[uuid.UUID, reservations.Booking]
    reaches: dict[uuid.UUID, frozenset[NodeTraits]]
    pools: list[frozenset[NodeTraits]]

    def within(self, pool: frozenset[NodeTraits]) -> list[reservations.Booking]:
        """The bookings that may use only cards of the pool (and some card at all)."""
        return [p for i, p in self.pures.items() if self.reaches[i] and self.reaches[i] <= pool]


async def _shared(
    ctx: Context, model: str, isolations: Iterable[Isolation] | None, rows: Sequence[Booking]
) -> _Shared:
    """The bookings `rows` as they bear on a booker who may use the cards any of `isolations`
    admits (every card: None)."""
    cards = await _cards(ctx, model)
    if isolations is None:
        mine = cards.reach(None)
    else:
        mine = frozenset(k for i in isolations for k in cards.reach(i))
    levels = await service.group_isolations(ctx.db, [b.group_id for b in rows])
    reaches = {b.id: cards.reach(levels[b.group_id]) for b in rows}
    pures = await _pures(ctx, rows)
    return _Shared(cards, mine, pures, reaches, reservations.pools(mine, reaches.values()))


# ---- checks --------------------------------------------------------------------------------


def _window_refusal(
    starts_at: datetime, ends_at: datetime, weekly_until: datetime | None, now: datetime
) -> Unprocessable | None:
    # Nothing lies beyond the longest horizon a policy may allow, so no arithmetic below nears
    # the calendar's end.
    if max(starts_at, ends_at, weekly_until or starts_at) > now + MAX_AHEAD:
        return Unprocessable(
            f"A booking lies within {MAX_AHEAD.days} days from now.", code="invalid_window"
        )
    if ends_at <= starts_at:
        return Unprocessable("A booking ends after it starts.", code="invalid_window")
    if starts_at < now - PAST_GRACE:
        return Unprocessable("A booking starts now or later.", code="invalid_window")
    longest = MAX_WINDOW if weekly_until is None else MAX_WEEKLY_WINDOW
    if ends_at - starts_at > longest:
        days = longest.days
        return Unprocessable(
            f"A {'weekly ' if weekly_until else ''}booking's window lasts at most {days} days.",
            code="invalid_window",
        )
    if weekly_until is not None and not (starts_at < weekly_until <= starts_at + MAX_RECURRENCE):
        return Unprocessable(
            "A weekly booking repeats until a moment after its first start, at most a year later.",
            code="invalid_window",
        )
    return None


def _horizon_refusal(
    policy: EffectivePolicy, pure: reservations.Booking, now: datetime
) -> Unprocessable | None:
    days = policy["max_booking_days_ahead"].value
    if not isinstance(days, int):
        return None
    if reservations.span(pure).ends_at > now + timedelta(days=days):
        return Unprocessable(
            f"Your group books at most {days} days ahead; this booking ends later.",
            code="booking_too_far",
        )
    return None


def _policy_refusal(policy: EffectivePolicy, tier: GpuTier, model: GpuModel) -> Forbidden | None:
    """A group books only what its members could run: a model or tier its policy does not
    allow, no GPU session at all, or less VRAM than one session of the tier, is refused."""
    one = SessionRequest(model.name, tier.name, tier.vram_mib, cpu_cores=0, memory_mib=0)
    denial = check_request(policy, one, Usage())
    if denial is None:
        return None
    scope = denial.scope.kind.name.lower()
    return Forbidden(f"{denial.reason} It is set by the {scope} policy.", code="policy_denied")


def _weekly_limit(policy: EffectivePolicy, key: str) -> float | None:
    limit = policy[key].value
    if not isinstance(limit, int | float) or isinstance(limit, bool):
        return None
    return float(limit)


async def _quota_refusal(
    ctx: Context, policy: EffectivePolicy, pure: reservations.Booking, booking: Booking
) -> Conflict | None:
    """The first week over the group's card-hours, or over its organization's (all of its
    groups' bookings together); None when neither is. The caller holds the organization's
    booking lock, so no other booking of the organization is decided meanwhile."""
    others = await repository.active_bookings(ctx.db, org_id=booking.org_id, ending_after=ctx.now)
    pures = await _pures(ctx, others)
    group = [pures[b.id] for b in others if b.group_id == booking.group_id and b.id in pures]
    limit = _weekly_limit(policy, "max_booked_card_hours_week")
    if limit is not None and (over := reservations.over_quota(group, pure, limit)):
        week, total = over
        return Conflict(
            f"Your group may book {limit:g} card-hours a week; the week of "
            f"{week:%Y-%m-%d} would hold {total:.1f}.",
            code="booking_quota",
        )
    limit = _weekly_limit(policy, "max_org_booked_card_hours_week")
    if limit is not None and (over := reservations.over_quota(pures.values(), pure, limit)):
        week, total = over
        return Conflict(
            f"Your organization's groups may book {limit:g} card-hours a week together; the "
            f"week of {week:%Y-%m-%d} would hold {total:.1f}.",
            code="booking_quota",
        )
    return None


async def _pures(ctx: Context, rows: Sequence[Booking]) -> dict[uuid.UUID, reservations.Booking]:
    """Each booking as the pure checks weigh it, by id (one whose tier is gone: none)."""
    tiers = await repository.tiers_with_models(ctx.db, {b.tier_id for b in rows})
    return {b.id: _pure(b, *tiers[b.tier_id]) for b in rows if b.tier_id in tiers}


async def _decide(
    ctx: Context, booking: Booking, tier: GpuTier, model: GpuModel, org_id: uuid.UUID
) -> Check:
    """Every check a new or edited booking passes, with the locks that keep it true until
    commit; nothing is written."""
    refusal = _window_refusal(booking.starts_at, booking.ends_at, booking.weekly_until, ctx.now)
    if refusal is not None:
        return Check(refusal)
    pure = _pure(booking, tier, model)
    policy = await service.effective_for_group(ctx.db, booking.group_id, org_id)
    denied = _policy_refusal(policy, tier, model) or _horizon_refusal(policy, pure, ctx.now)
    if denied is not None:
        return Check(denied)
    await repository.lock_bookings(ctx.db, org_id, model.name)
    quota = await _quota_refusal(ctx, policy, pure, booking)
    if quota is not None:
        return Check(quota)
    # Against every pool of cards the group shares with other groups' bookings: it fits when
    # each pool still holds what may use only its cards.
    others = await repository.active_bookings(ctx.db, model=model.name, ending_after=ctx.now)
    isolation = await service.group_isolation(ctx.db, booking.group_id)
    shared = await _shared(ctx, model.name, [isolation], others)
    for pool in shared.pools:
        capacity = shared.cards.capacity(pool, pure.resource)
        decided = reservations.check(capacity, shared.within(pool), pure)
        if not isinstance(decided, Shortfall):
            continue
        unit = "cards" if pure.resource.pool != MIG else f"{pure.resource.profile} instances"
        at, needed = decided.at.isoformat(), decided.needed
        # Numbers only of the cards the group may use: the others' are not its to see.
        if pool == shared.mine:
            conflict = BookingConflict(
                f"At {at} this booking needs {needed} {unit} of {model.name}; "
                f"{decided.booked} of {decided.capacity} are booked already."
            )
        else:
            conflict = BookingConflict(
                f"At {at} this booking needs {needed} {unit} of {model.name}; the cards it may "
                "use are booked already."
            )
        return Check(conflict, decided.at)
    return Check(None)


# ---- reading -------------------------------------------------------------------------------


def _sees(actor: Actor, group_id: uuid.UUID, org_id: uuid.UUID) -> bool:
    return actor.is_super_admin or actor.sees_group(group_id, org_id) or group_id in actor.guest_of


def _manages(actor: Actor, booking: Booking) -> bool:
    return actor.is_super_admin or actor.administers_group(booking.group_id, booking.org_id)


async def _views(ctx: Context, rows: Sequence[Booking]) -> list[BookingView]:
    tiers = await repository.tiers_with_models(ctx.db, {b.tier_id for b in rows})
    groups = await identity.names(ctx.db, "group", list({b.group_id for b in rows}))
    windows = {b.id: next_window(b, ctx.now) if b.status == "active" else None for b in rows}
    running = [b for b in rows if (w := windows[b.id]) is not None and w.starts_at <= ctx.now]
    held = await repository.held_by_group_and_tier(
        ctx.db, [(b.group_id, b.tier_id) for b in running]
    )
    return [
        BookingView(
            b,
            tiers[b.tier_id][0].name if b.tier_id in tiers else "",
            groups.get(b.group_id, ""),
            _manages(ctx.actor, b),
            windows[b.id],
            held.get((b.group_id, b.tier_id), 0) if b in running else None,
        )
        for b in rows
    ]


async def _visible(ctx: Context, booking_id: uuid.UUID, *, lock: bool = False) -> Booking:
    booking = await repository.booking(ctx.db, booking_id, lock=lock)
    if booking is None or not _sees(ctx.actor, booking.group_id, booking.org_id):
        raise NotFound("No such booking.", code="booking_not_found")
    return booking


async def list_bookings(
    ctx: Context,
    *,
    model: str | None,
    group_id: uuid.UUID | None,
    include_ended: bool,
) -> list[BookingView]:
    """The bookings of the groups the caller is in or administers (every one for the super
    admin), soonest first; ended and cancelled ones only when asked."""
    require(ctx, Action.BOOKING_READ)
    actor = ctx.actor
    groups: list[uuid.UUID] | None = None
    orgs: list[uuid.UUID] | None = None
    if not actor.is_super_admin:
        groups = list({*actor.member_of, *actor.guest_of, *actor.group_admin_of})
        orgs = list(actor.org_admin_of)
    rows = await repository.bookings(
        ctx.db,
        group_ids=groups,
        org_ids=orgs,
        model=model,
        group_id=group_id,
        ending_after=None if include_ended else ctx.now,
    )
    return await _views(ctx, rows)


async def get_booking(ctx: Context, booking_id: uuid.UUID) -> BookingView:
    require(ctx, Action.BOOKING_READ)
    return (await _views(ctx, [await _visible(ctx, booking_id)]))[0]


@dataclass(frozen=True)
class CalendarView:
    model: str
    window: Window
    resources: list[tuple[Resource, int, list[reservations.Free]]]


async def _viewer_isolations(ctx: Context, group_id: uuid.UUID | None) -> list[Isolation] | None:
    """Whose cards a calendar counts: with `group_id`, that group's (its level, and its dedicated
    cards), for whoever sees the group; else those of every group the caller is in or
    administers; every card (None) for the super admin."""
    actor = ctx.actor
    if group_id is not None:
        scope = await identity.scope_of_group(ctx.db, group_id)
        assert scope.org_id is not None
        if not _sees(actor, group_id, scope.org_id):
            raise NotFound("No such group.", code="group_not_found")
        return [await service.group_isolation(ctx.db, group_id)]
    if actor.is_super_admin:
        return None
    groups = {*actor.member_of, *actor.guest_of, *actor.group_admin_of}
    for org_id in sorted(actor.org_admin_of):
        groups |= {g.id for g in await identity.groups_of_org(ctx.db, org_id)}
    if not groups:
        return [Isolation()]  # the shared cards: what anyone's group could use
    return list((await service.group_isolations(ctx.db, groups)).values())


async def calendar(
    ctx: Context,
    model: str,
    starts_at: datetime,
    ends_at: datetime,
    group_id: uuid.UUID | None = None,
) -> CalendarView:
    """What is booked and free of each of the model's resources over a window (at most 62
    days), of the cards the caller's groups may use at their isolation levels, or those
    `group_id` may (every card, for the super admin without a group). Anyone signed in reads
    it: it names no group and no title."""
    require(ctx, Action.BOOKING_READ)
    if ends_at <= starts_at or ends_at - starts_at > MAX_CALENDAR:
        raise Unprocessable(
            "A calendar spans more than nothing and at most 62 days.", code="invalid_window"
        )
    if await repository.model_named(ctx.db, model) is None:
        raise NotFound("No such GPU model.", code="model_not_found")
    # The caller's view: the cards their groups may use (a tenant's dedicated cards are no one
    # else's, and a dedicated level uses no other), and at each moment what they could still
    # book of them.
    isolations = await _viewer_isolations(ctx, group_id)
    booked = await repository.active_bookings(ctx.db, model=model, ending_after=starts_at)
    shared = await _shared(ctx, model, isolations, booked)
    window = Window(starts_at, ends_at)
    resources = {r for k in shared.mine for r in shared.cards.by_traits[k]} | {
        p.resource for p in shared.within(shared.mine)
    }
    found = []
    for r in sorted(resources | {Resource(model)}):
        capacity = shared.cards.capacity(shared.mine, r)
        pools = [(shared.cards.capacity(pool, r), shared.within(pool)) for pool in shared.pools]
        found.append((r, capacity, reservations.bookable(pools, r, window, capacity)))
    return CalendarView(model, window, found)


# ---- changing ------------------------------------------------------------------------------


async def _draft(ctx: Context, body: BookingIn) -> tuple[Booking, GpuTier, GpuModel, uuid.UUID]:
    scope = await identity.scope_of_group(ctx.db, body.group_id)
    require(ctx, Action.BOOKING_MANAGE, scope, target_type="group", target_id=body.group_id)
    assert scope.org_id is not None
    tier, model = await service.tier_with_model(ctx.db, body.tier_id)
    booking = Booking(
        id=new_id(),
        group_id=body.group_id,
        org_id=scope.org_id,
        tier_id=tier.id,
        model=model.name,
        count=body.count,
        starts_at=body.starts_at,
        ends_at=body.ends_at,
        weekly_until=body.weekly_until,
        title=body.title,
        notice_minutes=body.notice_minutes,
        status="active",
        created_by=ctx.actor.user_id,
        created_at=ctx.now,
        updated_at=ctx.now,
    )
    return booking, tier, model, scope.org_id


async def check(ctx: Context, body: BookingIn) -> Check:
    """Whether `body` would be booked now; writes nothing."""
    booking, tier, model, org_id = await _draft(ctx, body)
    return await _decide(ctx, booking, tier, model, org_id)


def _raise(decided: Check) -> None:
    if decided.refusal is not None:
        raise decided.refusal


async def _tell_members(ctx: Context, booking: Booking, title: str, body: str) -> None:
    for user_id in await identity.member_ids(ctx.db, booking.group_id, ctx.now):
        await notify_user(
            ctx.db,
            user_id,
            NOTIFICATION,
            title=title,
            body=body,
            now=ctx.now,
            data={"booking_id": str(booking.id), "group_id": str(booking.group_id)},
        )


def _when(booking: Booking) -> str:
    repeat = f", weekly until {booking.weekly_until:%Y-%m-%d}" if booking.weekly_until else ""
    return f"{booking.starts_at:%a %Y-%m-%d %H:%M} to {booking.ends_at:%H:%M} UTC{repeat}"


def _detail(booking: Booking) -> dict[str, object]:
    return {
        "tier_id": str(booking.tier_id),
        "model": booking.model,
        "count": booking.count,
        "starts_at": booking.starts_at.isoformat(),
        "ends_at": booking.ends_at.isoformat(),
        "weekly_until": booking.weekly_until.isoformat() if booking.weekly_until else None,
        "title": booking.title,
        "notice_minutes": booking.notice_minutes,
    }


async def create(ctx: Context, body: BookingIn) -> BookingView:
    booking, tier, model, org_id = await _draft(ctx, body)
    _raise(await _decide(ctx, booking, tier, model, org_id))
    await repository.add_booking(ctx.db, booking)
    return await _changed(
        ctx,
        booking,
        "capacity.booking_created",
        _detail(booking),
        f"Capacity booked: {booking.title}",
        f"{booking.count} x {tier.name} of {model.name} for your group, {_when(booking)}.",
    )


async def _changed(
    ctx: Context,
    booking: Booking,
    action: str,
    detail: dict[str, object],
    title: str,
    body: str,
) -> BookingView:
    """A booking was made, changed or cancelled: audit it, tell the group's members, and answer
    it as the caller sees it."""
    await audit(
        ctx,
        action,
        target_type="booking",
        target_id=booking.id,
        org_id=booking.org_id,
        group_id=booking.group_id,
        detail=detail,
    )
    await _tell_members(ctx, booking, title, body)
    # Every signed-in console's calendar changes; the event names nothing of the booking.
    await outbox.record(ctx.db, CHANGED, outbox.Audience.signed_in(), {"model": booking.model})
    return (await _views(ctx, [booking]))[0]


async def _managed(ctx: Context, booking_id: uuid.UUID) -> Booking:
    booking = await _visible(ctx, booking_id, lock=True)
    require(
        ctx,
        Action.BOOKING_MANAGE,
        Scope.of_group(booking.group_id, booking.org_id),
        target_type="booking",
        target_id=booking_id,
    )
    if booking.status != "active":
        raise Conflict("This booking is cancelled.", code="booking_cancelled")
    return booking


async def edit(ctx: Context, booking_id: uuid.UUID, body: BookingEdit) -> BookingView:
    """Change a booking that has not started yet; the changed booking is checked as a new one
    (beside every other, not itself)."""
    booking = await _managed(ctx, booking_id)
    if booking.starts_at <= ctx.now:
        raise Conflict("This booking has started; cancel it, or book anew.", code="booking_started")
    found = await repository.tier_with_model(ctx.db, booking.tier_id)
    assert found is not None  # a booked tier is never deleted (foreign key)
    tier, model = found
    before = _detail(booking)
    changes = body.model_dump(exclude_unset=True)
    for field in ("count", "starts_at", "ends_at", "title", "notice_minutes"):
        if changes.get(field) is not None:
            setattr(booking, field, changes[field])
    if body.once:
        booking.weekly_until = None
    elif body.weekly_until is not None:
        booking.weekly_until = body.weekly_until
    # The changed window is refused before anything is read again (which would write it).
    _raise(await _decide(ctx, booking, tier, model, booking.org_id))
    booking.updated_at = ctx.now
    await ctx.db.flush()
    return await _changed(
        ctx,
        booking,
        "capacity.booking_changed",
        {"before": before, "after": _detail(booking)},
        f"Booking changed: {booking.title}",
        f"Now {booking.count} x {tier.name} of {model.name}, {_when(booking)}.",
    )


async def cancel(ctx: Context, booking_id: uuid.UUID) -> BookingView:
    """Call a booking off: its capacity is free to book and to use at once. Sessions already
    running on it go on as ordinary sessions."""
    booking = await _managed(ctx, booking_id)
    booking.status, booking.cancelled_at, booking.cancelled_by = (
        "cancelled",
        ctx.now,
        ctx.actor.user_id,
    )
    booking.updated_at = ctx.now
    await ctx.db.flush()
    return await _changed(
        ctx,
        booking,
        "capacity.booking_cancelled",
        _detail(booking),
        f"Booking cancelled: {booking.title}",
        f"It was for {_when(booking)}.",
    )


# ---- during the window ---------------------------------------------------------------------


async def active(db: AsyncSession, now: datetime) -> list[Booking]:
    """Active bookings with a window running at `now` or still to come."""
    return await repository.active_bookings(db, ending_after=now)


def running_among(found: Sequence[Booking], now: datetime) -> list[Booking]:
    """Those of these bookings with a window running at `now`."""
    return [b for b in found if (w := next_window(b, now)) is not None and w.starts_at <= now]


def starting_among(found: Sequence[Booking], now: datetime) -> list[tuple[Booking, datetime]]:
    """Those of these bookings whose next window starts after `now` but within the booking's
    notice, with that start (soonest first): sessions in their way are told now to be gone by
    then."""
    soon = []
    for b in found:
        w = next_window(b, now)
        if w is not None and now < w.starts_at <= now + timedelta(minutes=b.notice_minutes):
            soon.append((b, w.starts_at))
    return sorted(soon, key=lambda pair: (pair[1], pair[0].id))


async def running_now(db: AsyncSession, now: datetime) -> list[Booking]:
    """Active bookings with a window running at `now`."""
    return running_among(await active(db, now), now)


def as_running(booking: Booking) -> reservations.Running:
    """A booking running now, as `reservations` sees it."""
    return reservations.Running(
        booking.id,
        booking.group_id,
        str(booking.tier_id),
        booking.count,
        timedelta(minutes=booking.notice_minutes),
    )


async def mark_booked(
    db: AsyncSession,
    queued: Sequence[QueuedRequest],
    now: datetime,
    running: Sequence[Booking] | None = None,
) -> tuple[list[QueuedRequest], dict[uuid.UUID, Booking]]:
    """The queued requests, those within a booking running now (`running`, read here unless
    given) marked `booked` (`reservations.within_bookings`) and asking for that booking's held
    cards, and the booking each of those falls within."""
    if not queued:
        return list(queued), {}
    if running is None:
        running = await running_now(db, now)
    if not running:
        return list(queued), {}
    held = await repository.held_by_group_and_tier(db, [(b.group_id, b.tier_id) for b in running])
    rows = {b.id: b for b in running}
    within = reservations.within_bookings(
        [reservations.Waiting(q.id, q.group_id, q.request.tier, q.enqueued_at) for q in queued],
        [as_running(b) for b in running],
        {(g, str(t)): n for (g, t), n in held.items()},
    )
    return (
        [
            replace(q, booked=True, request=replace(q.request, booking_id=within[q.id].id))
            if q.id in within
            else q
            for q in queued
        ],
        {request_id: rows[b.id] for request_id, b in within.items()},
    )
