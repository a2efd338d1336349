"""Preempting and draining: the notices that pause running sessions to free their cards.

One walk (`walk`, after each dequeue, under the queue's lock) moves every notice on:
1. settle: a pending notice whose session left its card already is `freed`; one no longer
   needed (its request left the queue or no longer holds the card, its drain ended) is
   `withdrawn` (a booking's notice also when the booking is cancelled);
2. drains: every session on capacity being drained gets a notice with the drain's deadline
   (the earliest, when several cover it, and a shorter one started later moves it nearer);
3. due: a session whose notice's deadline has passed is paused and queued again to resume by
   itself (the sessions domain does both, through `notice_due`), and its notice is `paused`;
4. claims: each queued request without a card held for it, in queue order, asks the pure
   `preemption` core for victims; their owners get notice (`preemption_notice_minutes` of the
   victim's policy) and the card is held for the request until it is admitted there.

A card held for a request takes no other (placement's reservations), so the card freed at the
deadline, or earlier by a victim pausing itself, goes to the request it was promised to.
Everything here only flushes; the caller commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import or_, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from gshare.audit.service import AuditEvent, record
from gshare.capacity import admission, bookings, queue, repository, reservations, service
from gshare.capacity.isolation import Isolation
from gshare.capacity.models import AdmissionRequest, Booking, Drain, GpuTier, Notice
from gshare.capacity.placement import CapacitySnapshot, PlacementRequest
from gshare.capacity.policy import preemption_terms
from gshare.capacity.preemption import (
    Claim,
    Preemption,
    PreemptionIndex,
    PreemptionSnapshot,
    RunningSession,
    soonest_pause,
    split_shares,
)
from gshare.capacity.schemas import ReportedCardError
from gshare.clusters import service as clusters
from gshare.credits.amounts import hold_amount
from gshare.events import outbox
from gshare.events.notifications import notify_user
from gshare.identity import service as identity
from gshare.identity.authz import Context, audit, require
from gshare.identity.permissions import Action
from gshare.kit.errors import Conflict, NotFound, Unprocessable
from gshare.kit.hooks import Hook
from gshare.kit.ids import new_id
from gshare.kit.settings import Settings
from gshare.operator.metrics import trouble_reason

NOTICE_CHANGED = "notice.changed"


@dataclass(frozen=True)
class NoticeFacts:
    """What the sessions domain needs to tell a victim's owner."""

    session_id: uuid.UUID
    kind: str  # preemption | drain
    reason: str  # fair_share | waited_too_long | priority | booking | booking_start | drain | xid
    deadline: datetime
    detail: str  # the drain's reason, or empty


@dataclass
class WalkSummary:
    noticed: int = 0
    paused: int = 0
    freed: int = 0
    withdrawn: int = 0
    promised: dict[uuid.UUID, uuid.UUID] = field(default_factory=dict)  # request -> card


# The sessions domain tells owners of new notices (and of withdrawn ones), and pauses the
# sessions whose deadline passed, queueing each again; it returns those it paused.
noticed: Hook[[Sequence[NoticeFacts], datetime], None] = Hook("noticed")
withdrawn: Hook[[Sequence[uuid.UUID], datetime], None] = Hook("notice_withdrawn")
notice_due: Hook[[Sequence[NoticeFacts], datetime, Settings], set[uuid.UUID]] = Hook("notice_due")
# Which of these sessions are idle now (idle sessions are preempted first).
idle_among: Hook[[Sequence[uuid.UUID]], set[uuid.UUID]] = Hook("idle_among")


_SETTLE = text(
    "UPDATE capacity_notices n SET status = CASE "  # noqa: S608 (constants only)
    " WHEN a.status <> 'live' THEN 'freed' ELSE 'withdrawn' END, ended_at = :now "
    "FROM gpu_allocations a WHERE n.status = 'pending' AND a.id = n.allocation_id AND ("
    " a.status <> 'live'"
    " OR (n.request_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM admission_requests r "
    "  WHERE r.id = n.request_id AND r.status = 'queued' AND r.reserved_card_id = n.card_id))"
    " OR (n.kind = 'drain' AND NOT EXISTS (SELECT 1 FROM capacity_drains d "
    "  WHERE d.id = n.drain_id AND d.status = 'active'))"
    # A booking's notice stands while the booking does: cancelled, the lent session keeps on.
    " OR (n.reason = 'booking' AND n.request_id IS NOT NULL AND NOT EXISTS ("
    "  SELECT 1 FROM capacity_bookings b JOIN admission_requests r ON r.group_id = b.group_id "
    "  AND r.tier_id = b.tier_id WHERE r.id = n.request_id AND b.status = 'active'))"
    # One given ahead of a window stands while the booking does and still starts then.
    " OR (n.booking_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM capacity_bookings b "
    f"  WHERE b.id = n.booking_id AND b.status = 'active' AND {repository.AT_A_WINDOW_START}))) "
    "RETURNING n.status, n.session_id"
)
# Sessions on draining capacity that have no notice yet, with the drain that covers them
# (the one with the earliest deadline when several do).
_UNNOTICED_ON_DRAINS = text(
    "SELECT DISTINCT ON (a.id) a.id AS allocation_id, r.session_id, a.user_id, a.group_id, "
    "a.card_id, d.id AS drain_id, d.deadline, d.reason, d.source "
    "FROM gpu_allocations a JOIN gpu_cards c ON c.id = a.card_id "
    "JOIN admission_requests r ON r.id = a.request_id "
    "JOIN capacity_drains d ON d.status = 'active' AND d.cluster_id = c.cluster_id AND ("
    " d.scope = 'cluster' OR (d.scope = 'node' AND d.node = c.node) OR d.card_id = c.id) "
    "WHERE a.status = 'live' AND NOT EXISTS (SELECT 1 FROM capacity_notices n "
    " WHERE n.allocation_id = a.id AND n.status = 'pending') "
    "ORDER BY a.id, d.deadline"
)
_DUE = text(
    "SELECT n.id, n.session_id, n.kind, n.reason, n.deadline, a.request_id, "
    "coalesce(d.reason, '') AS detail "
    "FROM capacity_notices n JOIN gpu_allocations a ON a.id = n.allocation_id "
    "LEFT JOIN capacity_drains d ON d.id = n.drain_id "
    "WHERE n.status = 'pending' AND n.deadline <= :now ORDER BY n.deadline, n.id"
)
_END = text(
    "UPDATE capacity_notices SET status = :status, ended_at = :now "
    "WHERE id = ANY(:ids) AND status = 'pending'"
)
# Every live allocation on a card that has no notice, with what preemption weighs.
_RUNNING = text(
    "SELECT a.id, r.session_id, a.user_id, a.group_id, a.card_id, a.slot, a.tier_id, "
    "a.admitted_at FROM gpu_allocations a JOIN admission_requests r ON r.id = a.request_id "
    "WHERE a.status = 'live' AND a.card_id IS NOT NULL AND a.slot IS NOT NULL "
    "AND NOT EXISTS (SELECT 1 FROM capacity_notices n "
    " WHERE n.allocation_id = a.id AND n.status = 'pending')"
)


# Pending preemption notices (a drain's stand whatever the session's terms), with what the
# victim's terms are read from.
_PENDING_PREEMPTIONS = text(
    "SELECT n.id, n.session_id, n.deadline, a.user_id, a.group_id, a.admitted_at "
    "FROM capacity_notices n JOIN gpu_allocations a ON a.id = n.allocation_id "
    "WHERE n.status = 'pending' AND n.kind = 'preemption' ORDER BY n.id"
)


async def walk(db: AsyncSession, now: datetime, settings: Settings) -> WalkSummary:
    """Move every notice on, and give new ones; see the module's docstring."""
    summary = WalkSummary()
    await repository.lock_queue(db)
    await _settle(db, now, summary)
    await _withdraw_protected(db, now, summary)
    await _notice_drained(db, now, summary)
    await _hasten(db, now, summary)
    await _pause_due(db, now, settings, summary)
    active = await bookings.active(db, now)
    await _claim(db, now, settings, summary, bookings.running_among(active, now))
    await _clear_ahead(db, now, summary, active)
    return summary


async def _settle(db: AsyncSession, now: datetime, summary: WalkSummary) -> None:
    ended = list(await db.execute(_SETTLE, {"now": now}))
    summary.freed += sum(status == "freed" for status, _ in ended)
    gone = [session for status, session in ended if status == "withdrawn" and session]
    summary.withdrawn += sum(status == "withdrawn" for status, _ in ended)
    if gone:
        await withdrawn.results(db, gone, now)
        await _announce(db, len(gone))


async def _withdraw_protected(db: AsyncSession, now: datetime, summary: WalkSummary) -> None:
    """A session its super admin protected after it was given notice (made not preemptible,
    or given a minimum runtime it will not have run by the deadline) keeps running: its notice
    is withdrawn, and a later walk gives one only on its new terms."""
    rows = list(await db.execute(_PENDING_PREEMPTIONS))
    if not rows:
        return
    policies = await service.effective_for_many(db, [(r.user_id, r.group_id) for r in rows])
    protected = []
    for r in rows:
        policy = policies.get((r.user_id, r.group_id))
        if policy is None:
            continue
        terms = preemption_terms(policy)
        if not terms.preemptible or r.admitted_at + terms.min_runtime > r.deadline:
            protected.append(r)
    if not protected:
        return
    await db.execute(_END, {"ids": [r.id for r in protected], "status": "withdrawn", "now": now})
    summary.withdrawn += len(protected)
    told = [r.session_id for r in protected if r.session_id is not None]
    if told:
        await withdrawn.results(db, told, now)
    await _announce(db, len(protected))


async def _notice_drained(db: AsyncSession, now: datetime, summary: WalkSummary) -> None:
    rows = list(await db.execute(_UNNOTICED_ON_DRAINS))
    facts = []
    for r in rows:
        db.add(
            Notice(
                id=new_id(),
                kind="drain",
                reason="xid" if r.source == "xid" else "drain",
                allocation_id=r.allocation_id,
                session_id=r.session_id,
                user_id=r.user_id,
                group_id=r.group_id,
                card_id=r.card_id,
                drain_id=r.drain_id,
                noticed_at=now,
                deadline=max(r.deadline, now),
                status="pending",
            )
        )
        if r.session_id is not None:
            reason = "xid" if r.source == "xid" else "drain"
            facts.append(NoticeFacts(r.session_id, "drain", reason, max(r.deadline, now), r.reason))
    if rows:
        await db.flush()
        summary.noticed += len(rows)
        await noticed.results(db, facts, now)
        await _announce(db, len(rows))


# A pending drain notice moves to the earliest deadline among the active drains covering its
# card (a card reporting an error while a node's drain runs is paused at the error's).
_HASTEN = text(
    "UPDATE capacity_notices n SET deadline = greatest(d.deadline, n.noticed_at), "
    "drain_id = d.id, reason = CASE WHEN d.source = 'xid' THEN 'xid' ELSE 'drain' END "
    "FROM gpu_cards c, capacity_drains d WHERE n.status = 'pending' AND n.kind = 'drain' "
    "AND c.id = n.card_id AND d.status = 'active' AND d.cluster_id = c.cluster_id "
    "AND (d.scope = 'cluster' OR (d.scope = 'node' AND d.node = c.node) OR d.card_id = c.id) "
    "AND greatest(d.deadline, n.noticed_at) < n.deadline "
    "AND d.deadline = (SELECT min(d2.deadline) FROM capacity_drains d2 "
    " WHERE d2.status = 'active' AND d2.cluster_id = c.cluster_id AND (d2.scope = 'cluster' "
    " OR (d2.scope = 'node' AND d2.node = c.node) OR d2.card_id = c.id)) "
    "RETURNING n.session_id, n.deadline, n.reason, d.reason AS detail"
)


async def _hasten(db: AsyncSession, now: datetime, summary: WalkSummary) -> None:
    rows = list(await db.execute(_HASTEN))
    facts = [
        NoticeFacts(r.session_id, "drain", r.reason, r.deadline, r.detail)
        for r in rows
        if r.session_id is not None
    ]
    if facts:
        await noticed.results(db, facts, now)
        await _announce(db, len(facts))


async def _pause_due(
    db: AsyncSession, now: datetime, settings: Settings, summary: WalkSummary
) -> None:
    rows = list(await db.execute(_DUE, {"now": now}))
    if not rows:
        return
    facts = [
        NoticeFacts(r.session_id, r.kind, r.reason, r.deadline, r.detail)
        for r in rows
        if r.session_id is not None
    ]
    paused: set[uuid.UUID] = set()
    for found in await notice_due.results(db, facts, now, settings):
        paused |= found
    # A request no session stands behind gives its card back directly.
    for r in rows:
        if r.session_id is None:
            await admission.release(db, r.request_id, now, reason="preempted")
    done = [r.id for r in rows if r.session_id is None or r.session_id in paused]
    await db.execute(_END, {"ids": done, "status": "paused", "now": now})
    summary.paused += len(done)
    await _announce(db, len(done))


@dataclass
class _Running:
    """The sessions a walk may give notice to, as preemption weighs them."""

    sessions: dict[uuid.UUID, RunningSession]  # by allocation
    by_id: dict[uuid.UUID, Any]  # allocation -> (row, its preemption terms)
    policies: dict[tuple[uuid.UUID, uuid.UUID], Any]  # (user, group) -> effective policy

    def index(
        self,
        snapshot: CapacitySnapshot,
        waiting: set[uuid.UUID],
        tenants: queue.Tenants,
        now: datetime,
    ) -> PreemptionIndex:
        """The cards are split among the organizations running or waiting by their weights,
        and each organization's share among its groups running or waiting by theirs."""
        groups = {s.group_id for s in self.sessions.values()} | waiting
        shares = split_shares(float(len(snapshot.cards)), groups, tenants)
        running = tuple(self.sessions.values())
        split = PreemptionSnapshot(snapshot, running, shares.groups, tenants.org_of, shares.orgs)
        return PreemptionIndex(split, now)


async def _running(
    db: AsyncSession,
    running_bookings: Sequence[Booking],
    pairs: set[tuple[uuid.UUID, uuid.UUID]],
) -> _Running | None:
    """Every live session without a notice, with its policy's terms (and the policies of these
    other (user, group) pairs); None when there is none."""
    running = list(await db.execute(_RUNNING))
    if not running:
        return None
    policies = await service.effective_for_many(
        db, list(pairs | {(r.user_id, r.group_id) for r in running})
    )
    tiers = await repository.tiers_by_id(db, [r.tier_id for r in running if r.tier_id])
    idle: set[uuid.UUID] = set()
    for found in await idle_among.results(db, [r.session_id for r in running if r.session_id]):
        idle |= found
    # Sessions on capacity their own group booked and is running now are no one's to take.
    within = reservations.sessions_within(
        [(r.id, r.group_id, str(r.tier_id), r.admitted_at) for r in running if r.tier_id],
        [bookings.as_running(b) for b in running_bookings],
    )
    world = _Running({}, {}, dict(policies))
    for r in running:
        tier = tiers.get(r.tier_id) if r.tier_id else None
        policy = policies.get((r.user_id, r.group_id))
        if tier is None or policy is None:
            continue
        terms = preemption_terms(policy)
        world.by_id[r.id] = (r, terms)
        world.sessions[r.id] = RunningSession(
            id=r.id,
            card_id=r.card_id,
            slot=r.slot,
            group_id=r.group_id,
            cards=queue.card_share(tier.kind, tier.denominator, tier.compute_percent),
            started_at=r.admitted_at,
            priority=terms.priority,
            idle=r.session_id in idle,
            preemptible=terms.preemptible,
            min_runtime=terms.min_runtime,
            within_booking=r.id in within,
            kept_notice=terms.kept_notice,
        )
    return world


async def _claim(
    db: AsyncSession,
    now: datetime,
    settings: Settings,
    summary: WalkSummary,
    running_bookings: Sequence[Booking],
) -> None:
    rows, _ = await admission.claim_queued(db)
    # A request a card is already being freed for waits for it; one holding a card only
    # because it starves may still claim another.
    promised = await repository.promised_requests(db, [r.id for r in rows if r.reserved_card_id])
    # Nobody is paused for a request whose owner is no longer in its group (a guest whose
    # membership ran out, a member removed) or was deactivated: the dequeue refuses it.
    members = {
        group: set(ids)
        for group, ids in (
            await identity.members_of_groups(db, list({r.group_id for r in rows}), now)
        ).items()
    }
    active = await identity.active_among(db, list({r.user_id for r in rows}))
    queued = [
        r
        for r in rows
        if r.id not in promised
        and r.user_id in active
        and r.user_id in members.get(r.group_id, set())
    ]
    if not queued:
        return
    state = await admission.queue_state(db, queued)
    # Nobody is paused for a request its owner cannot pay for.
    available = await admission.available_to(db, [q.user_id for q in state.queued])
    window = settings.hold_window_seconds
    state.queued = [
        q
        for q in state.queued
        if available.get(q.user_id, 0) >= hold_amount(state.tiers[q.id][0].price, window)
    ]
    if not state.queued:
        return
    # A member within their group's running booking takes back what it lends to others, with
    # the booking's own notice.
    state.queued, booked = await bookings.mark_booked(db, state.queued, now, running_bookings)
    snapshot = await admission.capacity_snapshot(db, {q.request.model for q in state.queued}, now)
    world = await _running(db, running_bookings, {(q.user_id, q.group_id) for q in state.queued})
    if world is None:
        return
    usage = await admission.usage_state(db)
    index = world.index(snapshot, {q.group_id for q in state.queued}, usage.tenants, now)
    fair = admission.fair_share(settings)
    ordered = queue.priorities(state.queued, usage, now, fair)
    by_request = {q.id: q for q in state.queued}
    spare = await _spare_slots(db, rows, promised, snapshot)
    for priority in ordered:
        q = by_request[priority.request_id]
        policy = world.policies.get((q.user_id, q.group_id))
        if policy is None:
            continue
        key = (q.group_id, q.request.tier)
        if q.booked and spare.get(key, 0) > 0:
            # A card being freed for the group's tier has a slot for it: no other card need be.
            spare[key] -= 1
            continue
        terms = preemption_terms(policy)
        claim = Claim(q, terms.priority, terms.max_wait, booked=q.booked)
        decision = index.select(claim)
        if not isinstance(decision, Preemption):
            continue
        index.assume(claim, decision)
        spare[key] = spare.get(key, 0) + _slots_left(snapshot, decision, q.request)
        notice = None
        if q.id in booked:
            notice = timedelta(minutes=booked[q.id].notice_minutes)
        deadlines = _deadlines(decision, world, now, notice)
        await _promise(db, decision, q, world.by_id, deadlines, now, summary)
        state.rows[q.id].reserved_card_id = decision.card_id
    await db.flush()


_FREEING_FOR_BOOKINGS = text(
    "SELECT booking_id, card_id, deadline, count(*) AS sessions FROM capacity_notices "
    "WHERE status = 'pending' AND booking_id = ANY(:ids) GROUP BY booking_id, card_id, deadline"
)


async def _clear_ahead(
    db: AsyncSession, now: datetime, summary: WalkSummary, active: Sequence[Booking]
) -> None:
    """Sessions in the way of a booking whose window starts within its notice are told to be
    gone by its start, so that the booked capacity is free then.

    A booking needs its count less what its group holds of the tier, less what its earlier
    notices free; what still fits on free capacity is counted there, the rest is claimed as a
    member's booked request would claim it (any other group's session, but one within a
    booking of its own), with the start as every victim's deadline. Each walk weighs it again,
    so a session started on that capacity meanwhile is told at once how long it may run."""
    soon = bookings.starting_among(active, now)
    if not soon:
        return
    tiers = await repository.tiers_by_id(db, [b.tier_id for b, _ in soon])
    snapshot = await admission.capacity_snapshot(db, {b.model for b, _ in soon}, now)
    # Members' sessions within a booking running now, or about to start too, are not taken.
    booked = [*bookings.running_among(active, now), *(b for b, _ in soon)]
    world = await _running(db, booked, set())
    if world is None:
        return
    tenants = (await admission.usage_state(db, [b.group_id for b, _ in soon])).tenants
    index = world.index(snapshot, {b.group_id for b, _ in soon}, tenants, now)
    held = await repository.held_by_group_and_tier(db, [(b.group_id, b.tier_id) for b, _ in soon])
    starts = {b.id: start for b, start in soon}
    freeing = _freeing(
        [
            r
            for r in await db.execute(_FREEING_FOR_BOOKINGS, {"ids": list(starts)})
            if r.deadline == starts[r.booking_id]  # this window's, not an earlier one's
        ],
        {b.id: tiers.get(b.tier_id) for b, _ in soon},
        snapshot,
    )
    isolations: dict[uuid.UUID, Isolation] = {}
    for booking, start in soon:
        tier = tiers.get(booking.tier_id)
        if tier is None:
            continue
        if booking.group_id not in isolations:
            isolations[booking.group_id] = await service.group_isolation(db, booking.group_id)
        key = (booking.group_id, booking.tier_id)
        mine = min(held.get(key, 0), booking.count)
        held[key] = held.get(key, 0) - mine  # two bookings of one tier share what is held
        spare = 0
        for i in range(booking.count - mine - freeing.get(booking.id, 0)):
            if spare > 0:
                spare -= 1
                continue
            slot_id = uuid.uuid5(booking.id, f"{start.isoformat()}/{i}")
            # Only cards the group's members may take are freed for it.
            request = replace(
                admission.placement_request(
                    slot_id, tier, booking.model, isolation=isolations[booking.group_id]
                ),
                booking_id=booking.id,
            )
            if index.take(request):
                continue
            owner = booking.created_by or booking.id  # who stands for the slot, in the audit
            q = queue.QueuedRequest(request, owner, booking.group_id, now)
            # Only sessions that can be told their own notice and run their minimum runtime
            # by the start; the others are the window's to take, with their own terms.
            claim = Claim(q, booked=True, by=start)
            decision = index.select(claim)
            if not isinstance(decision, Preemption):
                break  # nothing more can be freed for it
            index.assume(claim, decision)
            spare += _slots_left(snapshot, decision, request)
            deadlines = dict.fromkeys((v.session_id for v in decision.victims), start)
            await _promise(db, decision, q, world.by_id, deadlines, now, summary, booking)


def _freeing(
    rows: Sequence[Any], tiers: dict[uuid.UUID, GpuTier | None], snapshot: CapacitySnapshot
) -> dict[uuid.UUID, int]:
    """Per booking, the slots of its tier its pending notices free: a card carved to the tier
    frees one per session, any other card is emptied for the tier (its slot count)."""
    cards = {c.id: c for c in snapshot.cards}
    freeing: dict[uuid.UUID, int] = {}
    for r in rows:
        tier, card = tiers.get(r.booking_id), cards.get(r.card_id)
        if tier is None or card is None:
            continue
        if tier.kind != "fraction" or card.carved_tier == str(tier.id):
            slots = int(r.sessions) if tier.kind != "exclusive" else 1
        else:
            slots = min(tier.denominator or 1, card.split_count)
        freeing[r.booking_id] = freeing.get(r.booking_id, 0) + slots
    return freeing


def _deadlines(
    decision: Preemption, world: _Running, now: datetime, notice: timedelta | None
) -> dict[uuid.UUID, datetime]:
    """Each victim's deadline: its own policy's notice; or, for a booking, the booking's
    `notice`, never sooner than the notice set for the victim (`soonest_pause`)."""
    if notice is None:
        return {v.session_id: now + world.by_id[v.session_id][1].notice for v in decision.victims}
    return {
        v.session_id: max(now + notice, soonest_pause(world.sessions[v.session_id], now))
        for v in decision.victims
    }


def _slots_left(snapshot: CapacitySnapshot, decision: Preemption, request: PlacementRequest) -> int:
    """Slots of the request's tier left on the decision's card once its victims are gone and the
    request has taken one: a card emptied for a fraction tier takes the tier's slot count."""
    if request.kind != "fraction":
        return 0
    card = next((c for c in snapshot.cards if c.id == decision.card_id), None)
    if card is not None and card.carved_tier == request.tier:
        return max(len(decision.victims) - 1, 0)
    return max(request.slots_per_card - 1, 0)


async def _spare_slots(
    db: AsyncSession,
    rows: Sequence[AdmissionRequest],
    promised: set[uuid.UUID],
    snapshot: CapacitySnapshot,
) -> dict[tuple[uuid.UUID, str], int]:
    """Per (group, tier), the slots cards already being freed for the group's requests of a
    fraction tier will have left over: the group's next booked requests of the tier wait for
    them rather than claim cards of their own."""
    waiting = [
        (r.group_id, r.tier_id, r.reserved_card_id)
        for r in rows
        if r.id in promised and r.reserved_card_id is not None and r.tier_id is not None
    ]
    if not waiting:
        return {}
    tiers = await repository.tiers_by_id(db, [tier_id for _, tier_id, _ in waiting])
    cards = {c.id: c for c in snapshot.cards}
    spare: dict[tuple[uuid.UUID, str], int] = {}
    for group_id, tier_id, card_id in waiting:
        tier = tiers.get(tier_id)
        card = cards.get(card_id)
        if tier is None or tier.kind != "fraction" or card is None:
            continue
        if card.carved_tier == str(tier.id):
            continue  # one slot of a carved card is being freed: the request's own
        key = (group_id, str(tier.id))
        spare[key] = spare.get(key, 0) + max(min(tier.denominator or 1, card.split_count) - 1, 0)
    return spare


async def _promise(
    db: AsyncSession,
    decision: Preemption,
    claimant: queue.QueuedRequest,
    by_id: dict[uuid.UUID, Any],
    deadlines: dict[uuid.UUID, datetime],
    now: datetime,
    summary: WalkSummary,
    booking: Booking | None = None,
) -> None:
    """Give each victim notice to leave by its deadline, and audit it once for each side, in
    that side's organization and group. The card is held for the queued request claiming it;
    or, ahead of a `booking`'s window, freed for the booking (the claimant stands for one of
    its slots)."""
    facts = []
    orgs = await identity.orgs_of_groups(
        db, [claimant.group_id, *(by_id[v.session_id][0].group_id for v in decision.victims)]
    )
    for victim in decision.victims:
        row, _ = by_id[victim.session_id]
        deadline = deadlines[victim.session_id]
        # Ahead of a window: the booking's start is the reason (its title is the group's own).
        reason = "booking_start" if booking else victim.reason
        db.add(
            Notice(
                id=new_id(),
                kind="preemption",
                reason=reason,
                allocation_id=row.id,
                session_id=row.session_id,
                user_id=row.user_id,
                group_id=row.group_id,
                card_id=decision.card_id,
                request_id=None if booking else claimant.id,
                booking_id=booking.id if booking else None,
                for_group_id=claimant.group_id,
                noticed_at=now,
                deadline=deadline,
                status="pending",
            )
        )
        if row.session_id is not None:
            facts.append(NoticeFacts(row.session_id, "preemption", reason, deadline, ""))
        await record(db, _victim_side(row, decision, reason, deadline, claimant, orgs), now=now)
    await record(db, _claimant_side(decision, claimant, deadlines, orgs, booking), now=now)
    summary.noticed += len(decision.victims)
    if booking is None:
        summary.promised[claimant.id] = decision.card_id
    await db.flush()
    await noticed.results(db, facts, now)
    await _announce(db, len(decision.victims))


# A notice concerns two tenants, each audited apart: a side's entry carries its own ids only,
# and names the other side's group only within one organization.
NOTICED = "session.preemption_noticed"


def _victim_side(
    row: Any,
    decision: Preemption,
    reason: str,
    deadline: datetime,
    claimant: queue.QueuedRequest,
    orgs: dict[uuid.UUID, uuid.UUID],
) -> AuditEvent:
    """The victim's group's entry: its session, its user, the card, the reason, the deadline."""
    org_id = orgs.get(row.group_id)
    detail: dict[str, str | None] = {
        "side": "victim",
        "session_id": str(row.session_id) if row.session_id else None,
        "user_id": str(row.user_id),
        "card_id": str(decision.card_id),
        "reason": reason,
        "deadline": deadline.isoformat(),
    }
    if org_id is not None and org_id == orgs.get(claimant.group_id):
        detail["for_group_id"] = str(claimant.group_id)
    return AuditEvent(
        action=NOTICED,
        target_type="session",
        target_id=str(row.session_id or row.id),
        org_id=org_id,
        group_id=row.group_id,
        detail=detail,
    )


def _claimant_side(
    decision: Preemption,
    claimant: queue.QueuedRequest,
    deadlines: dict[uuid.UUID, datetime],
    orgs: dict[uuid.UUID, uuid.UUID],
    booking: Booking | None,
) -> AuditEvent:
    """The claiming group's entry: its request (or booking) and user, the card, and when the
    card is free (the latest of its victims' deadlines)."""
    freed_at = max(deadlines[v.session_id] for v in decision.victims)
    user_id: uuid.UUID | None
    if booking is None:
        target = ("admission_request", claimant.id)
        detail = {"side": "claimant", "request_id": str(claimant.id)}
        user_id = claimant.user_id
    else:
        target = ("booking", booking.id)
        detail = {"side": "claimant", "booking_id": str(booking.id)}
        user_id = booking.created_by
    return AuditEvent(
        action=NOTICED,
        target_type=target[0],
        target_id=str(target[1]),
        org_id=orgs.get(claimant.group_id),
        group_id=claimant.group_id,
        detail=detail
        | {
            "user_id": str(user_id) if user_id else None,
            "card_id": str(decision.card_id),
            "deadline": freed_at.isoformat(),
        },
    )


async def _announce(db: AsyncSession, count: int) -> None:
    """Notices changed: the admin queue and card pictures refresh (the owners' own sessions
    are announced by the sessions domain as they change)."""
    if count:
        await outbox.record(db, NOTICE_CHANGED, outbox.Audience(), {"count": count})


# ---- reading -------------------------------------------------------------------------------


_PENDING_FOR_SESSIONS = text(
    "SELECT n.session_id, n.kind, n.reason, n.deadline, n.noticed_at, "
    "coalesce(d.reason, '') AS detail "
    "FROM capacity_notices n LEFT JOIN capacity_drains d ON d.id = n.drain_id "
    "WHERE n.status = 'pending' AND n.session_id = ANY(:ids)"
)
_PROMISED_FOR_REQUESTS = text(
    "SELECT request_id, max(deadline) AS deadline FROM capacity_notices "
    "WHERE status = 'pending' AND kind = 'preemption' AND request_id = ANY(:ids) "
    "GROUP BY request_id"
)


@dataclass(frozen=True)
class PendingNotice:
    kind: str
    reason: str
    deadline: datetime
    noticed_at: datetime
    detail: str


async def pending_for_sessions(
    db: AsyncSession, session_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, PendingNotice]:
    """The pending notice of each of these sessions that has one."""
    if not session_ids:
        return {}
    rows = await db.execute(_PENDING_FOR_SESSIONS, {"ids": list(session_ids)})
    return {
        r.session_id: PendingNotice(r.kind, r.reason, r.deadline, r.noticed_at, r.detail)
        for r in rows
    }


async def promised_for_requests(
    db: AsyncSession, request_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, datetime]:
    """For each of these queued requests that has a card being freed for it, when the last of
    its victims' notices ends (it may start earlier, if they leave first)."""
    if not request_ids:
        return {}
    rows = await db.execute(_PROMISED_FOR_REQUESTS, {"ids": list(request_ids)})
    return {r.request_id: r.deadline for r in rows}


def notice_left(deadline: datetime, now: datetime) -> timedelta:
    return max(deadline - now, timedelta(0))


# ---- drains: a super admin's maintenance, and cards that report a fatal error ---------------

MAX_DRAIN_AHEAD = timedelta(days=30)
XID_NOTICE = timedelta(minutes=2)

_COVERED_CARDS = text(
    "SELECT c.id FROM gpu_cards c WHERE c.cluster_id = :cluster AND ("
    " :scope = 'cluster' OR (:scope = 'node' AND c.node = :node) OR c.id = :card) "
    "ORDER BY c.id FOR UPDATE"
)
_PROGRESS = text(
    "SELECT d.id, "
    "(SELECT count(*) FROM gpu_cards c WHERE c.cluster_id = d.cluster_id AND ("
    "  d.scope = 'cluster' OR (d.scope = 'node' AND c.node = d.node) OR c.id = d.card_id)) "
    "  AS cards, "
    "(SELECT count(*) FROM gpu_allocations a JOIN gpu_cards c ON c.id = a.card_id "
    "  WHERE a.status = 'live' AND c.cluster_id = d.cluster_id AND (d.scope = 'cluster' "
    "  OR (d.scope = 'node' AND c.node = d.node) OR c.id = d.card_id)) AS sessions_left, "
    "(SELECT min(n.deadline) FROM capacity_notices n WHERE n.drain_id = d.id "
    "  AND n.status = 'pending') AS next_deadline "
    "FROM capacity_drains d WHERE d.id = ANY(:ids)"
)


@dataclass(frozen=True)
class DrainView:
    drain: Drain
    cards: int
    sessions_left: int
    next_deadline: datetime | None


async def _views(db: AsyncSession, drains: Sequence[Drain]) -> list[DrainView]:
    if not drains:
        return []
    found = {r.id: r for r in await db.execute(_PROGRESS, {"ids": [d.id for d in drains]})}
    return [
        DrainView(d, found[d.id].cards, found[d.id].sessions_left, found[d.id].next_deadline)
        for d in drains
    ]


async def start_drain(
    ctx: Context,
    *,
    scope: str,
    cluster_id: uuid.UUID,
    node: str | None,
    card_id: uuid.UUID | None,
    deadline: datetime,
    reason: str,
) -> DrainView:
    """Take a card, a node or a cluster out of service: it takes no new session from now, and
    the sessions on it are given notice to pause at `deadline`."""
    require(ctx, Action.CAPACITY_MANAGE, target_type="drain")
    db = ctx.db
    if deadline > ctx.now + MAX_DRAIN_AHEAD:
        raise Unprocessable("A drain's deadline is at most 30 days ahead.", code="invalid_deadline")
    if deadline < ctx.now - timedelta(minutes=1):
        raise Unprocessable("A drain's deadline is now or later.", code="invalid_deadline")
    if not await clusters.cluster_exists(db, cluster_id):
        raise NotFound("No such cluster.", code="cluster_not_found")
    if scope == "card":
        if card_id is None or node is not None:
            raise Unprocessable("A card's drain names the card, and no node.", code="invalid_drain")
        card = await repository.card(db, card_id)
        if card is None or card.cluster_id != cluster_id:
            raise NotFound("No such card in that cluster.", code="card_not_found")
    elif scope == "node":
        if node is None or card_id is not None:
            raise Unprocessable("A node's drain names the node, and no card.", code="invalid_drain")
    elif node is not None or card_id is not None:
        raise Unprocessable("A cluster's drain names no node and no card.", code="invalid_drain")
    # The covered cards' rows are locked, so an admission to one of them that has not
    # committed yet finishes first (and gets its notice) or sees the drain.
    covered = list(
        await db.execute(
            _COVERED_CARDS, {"cluster": cluster_id, "scope": scope, "node": node, "card": card_id}
        )
    )
    if scope == "node" and not covered:
        raise NotFound("No card of that cluster is on that node.", code="node_not_found")
    drain = Drain(
        id=new_id(),
        scope=scope,
        cluster_id=cluster_id,
        node=node,
        card_id=card_id,
        reason=reason,
        source="admin",
        deadline=max(deadline, ctx.now),
        status="active",
        created_by=ctx.actor.user_id,
        created_at=ctx.now,
    )
    db.add(drain)
    await db.flush()
    await audit(
        ctx,
        "capacity.drain_started",
        target_type="drain",
        target_id=drain.id,
        detail={
            "scope": scope,
            "cluster_id": str(cluster_id),
            "node": node,
            "card_id": str(card_id) if card_id else None,
            "deadline": drain.deadline.isoformat(),
            "reason": reason,
        },
    )
    await service.capacity_changed(db, f"drain {drain.id}")
    return (await _views(db, [drain]))[0]


async def drain_card_for_error(
    db: AsyncSession, card_id: uuid.UUID, cluster_id: uuid.UUID, why: str, now: datetime
) -> bool:
    """A card reported a fatal hardware error: drain it with a short notice, unless an active
    drain of its own covers it already. True when a drain was started."""
    # A maintenance drain of the card may have a later deadline: the error's own drain, with
    # its short notice, shortens its sessions' notices (see `_hasten`).
    existing = await db.scalar(
        select(Drain.id).where(
            Drain.card_id == card_id,
            Drain.status == "active",
            Drain.scope == "card",
            Drain.source == "xid",
        )
    )
    if existing is not None:
        return False
    drain = Drain(
        id=new_id(),
        scope="card",
        cluster_id=cluster_id,
        card_id=card_id,
        reason=why[:500],
        source="xid",
        deadline=now + XID_NOTICE,
        status="active",
        created_at=now,
    )
    db.add(drain)
    await db.flush()
    await record(
        db,
        AuditEvent(
            action="capacity.drain_started",
            target_type="drain",
            target_id=str(drain.id),
            detail={"scope": "card", "card_id": str(card_id), "source": "xid", "reason": why},
        ),
        now=now,
    )
    await service.capacity_changed(db, f"drain {drain.id}")
    return True


async def list_drains(ctx: Context, *, active_only: bool) -> list[DrainView]:
    require(ctx, Action.CAPACITY_READ, target_type="drain")
    query = select(Drain).order_by(Drain.created_at.desc(), Drain.id).limit(500)
    if active_only:
        query = query.where(Drain.status == "active")
    return await _views(ctx.db, list(await ctx.db.scalars(query)))


async def end_drain(ctx: Context, drain_id: uuid.UUID, status: str) -> DrainView:
    """End a drain (`ended`: the maintenance is done) or call it off (`cancelled`): either way
    its capacity takes sessions again and the notices still pending are withdrawn."""
    require(ctx, Action.CAPACITY_MANAGE, target_type="drain", target_id=drain_id)
    drain = await ctx.db.get(Drain, drain_id, with_for_update=True)
    if drain is None:
        raise NotFound("No such drain.", code="drain_not_found")
    if drain.status != "active":
        raise Conflict(f"The drain is {drain.status} already.", code="drain_not_active")
    drain.status, drain.ended_at, drain.ended_by = status, ctx.now, ctx.actor.user_id
    await ctx.db.flush()
    await audit(ctx, f"capacity.drain_{status}", target_type="drain", target_id=drain.id, detail={})
    await service.capacity_changed(ctx.db, f"drain {drain.id}")
    return (await _views(ctx.db, [drain]))[0]


_DRAINS_OF_CARDS = text(
    "SELECT DISTINCT ON (c.id) c.id AS card_id, d.id, d.scope, d.source, d.reason, d.deadline "
    "FROM gpu_cards c JOIN capacity_drains d ON d.status = 'active' "
    "AND d.cluster_id = c.cluster_id AND (d.scope = 'cluster' "
    "OR (d.scope = 'node' AND d.node = c.node) OR d.card_id = c.id) "
    "WHERE c.id = ANY(:ids) ORDER BY c.id, d.deadline"
)


async def drains_of_cards(
    db: AsyncSession, card_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, dict[str, Any]]:
    """The active drain covering each of these cards (the earliest deadline's), if any."""
    if not card_ids:
        return {}
    rows = await db.execute(_DRAINS_OF_CARDS, {"ids": list(card_ids)})
    return {
        r.card_id: {
            "id": r.id,
            "scope": r.scope,
            "source": r.source,
            "reason": r.reason,
            "deadline": r.deadline,
        }
        for r in rows
    }


async def notices_of_allocations(
    db: AsyncSession, allocation_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, datetime]:
    """The pending notice's deadline of each of these allocations that has one."""
    if not allocation_ids:
        return {}
    rows = await db.execute(
        select(Notice.allocation_id, Notice.deadline).where(
            Notice.allocation_id.in_(list(allocation_ids)), Notice.status == "pending"
        )
    )
    return {row.allocation_id: row.deadline for row in rows}


# ---- notices, as admins see them -----------------------------------------------------------

_COUNTS = text(
    "SELECT g AS group_id, sum(preempted) AS preempted, sum(preempting) AS preempting FROM ("
    " SELECT group_id AS g, 1 AS preempted, 0 AS preempting FROM capacity_notices "
    "  WHERE kind = 'preemption' AND noticed_at >= :since "
    " UNION ALL SELECT for_group_id, 0, 1 FROM capacity_notices "
    "  WHERE kind = 'preemption' AND noticed_at >= :since) t "
    "WHERE (CAST(:groups AS uuid[]) IS NULL OR g = ANY(:groups)) GROUP BY g ORDER BY g"
)


@dataclass(frozen=True)
class NoticesSeen:
    """Notices as one caller may read them, with what decides which of their fields are the
    caller's: the groups they administer (None: every group) and each group's organization."""

    rows: list[Notice]
    counts: list[Any]
    groups: set[uuid.UUID] | None
    orgs: dict[uuid.UUID, uuid.UUID]


async def list_notices(ctx: Context, *, pending_only: bool, since: datetime) -> NoticesSeen:
    """Notices given to sessions of the groups the caller administers, or given for them;
    with each such group's preemption counts since `since`. What belongs to the other side
    (see `views.notice_page`) is left out at the edge."""
    require(ctx, Action.QUEUE_READ_SCOPE, target_type="notice")
    groups = await admission.administered_groups(ctx)
    query = select(Notice).where(Notice.noticed_at >= since)
    if pending_only:
        query = query.where(Notice.status == "pending")
    if groups is not None:
        query = query.where(or_(Notice.group_id.in_(groups), Notice.for_group_id.in_(groups)))
    rows = list(await ctx.db.scalars(query.order_by(Notice.deadline, Notice.id).limit(1000)))
    counts = list(
        await ctx.db.execute(
            _COUNTS, {"since": since, "groups": None if groups is None else sorted(groups)}
        )
    )
    named = {r.group_id for r in rows} | {r.for_group_id for r in rows if r.for_group_id}
    orgs = await identity.orgs_of_groups(ctx.db, sorted(named))
    return NoticesSeen(rows, counts, groups, orgs)


# ---- cards that report hardware trouble ----------------------------------------------------

CARD_DRAINED_ERROR = "card.drained.error"
_NAMED_IN_NOTIFICATION = 10
_CARDS_BY_UUID = text(
    "SELECT id, uuid, node FROM gpu_cards WHERE cluster_id = :cluster AND uuid = ANY(:uuids) "
    "ORDER BY id FOR UPDATE"
)


async def _drained_for(db: AsyncSession, card_id: uuid.UUID, why: str) -> bool:
    """Whether the card drained itself for this very trouble before (and a super admin has
    ended that drain since, or it still runs)."""
    found = await db.scalar(
        select(Drain.id).where(
            Drain.card_id == card_id, Drain.source == "xid", Drain.reason == why[:500]
        )
    )
    return found is not None


async def report_card_errors(
    db: AsyncSession, cluster_id: uuid.UUID, items: Sequence[ReportedCardError], now: datetime
) -> int:
    """A cluster's operator reports cards with hardware trouble: each of the cluster's cards it
    names drains itself (`drain_card_for_error`: a short notice, then its sessions are paused
    and queued again), and every super admin is told. Cards of other clusters and unknown cards
    are ignored; a card already draining itself is not drained again. Returns how many cards
    started draining.

    The reasons are worded here from the kind of trouble and the XID; what the operator says
    of it (`detail`) reaches the super admins' notification data only.

    The cluster's row is locked first, then the cards' in id order (as inventory reports do),
    so two reports of one card cannot both start a drain."""
    cluster = await clusters.connected_cluster(db, cluster_id, now)
    reasons: dict[str, list[str]] = {}
    details: dict[str, list[str]] = {}
    fresh: set[str] = set()  # cards with trouble the operator saw begin while it watched
    for item in items:
        if not item.standing:
            fresh.add(item.card_uuid)
        reason = trouble_reason(item.kind, item.xid)
        if reason not in reasons.setdefault(item.card_uuid, []):
            reasons[item.card_uuid].append(reason)
        if item.detail and item.detail not in details.setdefault(item.card_uuid, []):
            details[item.card_uuid].append(item.detail)
    if not reasons:
        return 0
    rows = list(await db.execute(_CARDS_BY_UUID, {"cluster": cluster_id, "uuids": list(reasons)}))
    drained = []
    for row in rows:
        why = "; ".join(reasons[row.uuid])
        if row.uuid not in fresh and await _drained_for(db, row.id, why):
            continue  # trouble that was there before the operator started, handled already
        if await drain_card_for_error(db, row.id, cluster_id, why, now):
            drained.append((row, why))
    if drained:
        lines = [f"{row.uuid} on node {row.node}: {why}." for row, why in drained]
        if len(lines) > _NAMED_IN_NOTIFICATION:
            lines[_NAMED_IN_NOTIFICATION:] = [
                f"And {len(lines) - _NAMED_IN_NOTIFICATION} more cards."
            ]
        title = (
            f"Card {drained[0][0].uuid} of {cluster.name} is draining itself"
            if len(drained) == 1
            else f"{len(drained)} cards of {cluster.name} are draining themselves"
        )
        body = (
            "\n".join(lines)
            + f"\nTheir sessions are paused in {XID_NOTICE.seconds // 60} minutes and queued "
            "again. End the drain once the card is reset or replaced."
        )
        data = {
            "cluster_id": str(cluster_id),
            "cards": [
                {
                    "card_id": str(row.id),
                    "card_uuid": row.uuid,
                    "node": row.node,
                    "reason": why,
                    "reported": details.get(row.uuid, [])[:3],
                }
                for row, why in drained[:_NAMED_IN_NOTIFICATION]
            ],
        }
        for admin_id in await identity.super_admin_ids(db):
            await notify_user(
                db, admin_id, CARD_DRAINED_ERROR, title=title, body=body, now=now, data=data
            )
    return len(drained)
