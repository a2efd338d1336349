"""Admission: whether a session may run and where, its credit hold, the queue of what does not
fit yet, and the release that gives a card back.

One request goes through four steps: policy (403 `policy_denied`), credits (409
`insufficient_credits`: the user's own wallet must cover one hold window), placement (a pure
decision on a snapshot of every connected cluster's cards) and commit. The commit locks the
chosen card's row, checks the decision again against what the card holds now, carves the card
if it is empty, and writes the allocation and the hold in the caller's transaction. Losing a
race to another process only means deciding again; the database's constraints (see
`models.py`) refuse an over-allocated card even if this code were wrong.

Locks are taken in one order: the queue's advisory lock (dequeue only), the user's advisory lock,
the card's row, then wallets. Everything here only flushes; the caller commits.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from gshare.capacity import bookings, queue, repository, service
from gshare.capacity.isolation import (
    PLAIN_NODE,
    SHARED_ISOLATION,
    Isolation,
    NodeTraits,
    cpu_placement,
    pod_isolation,
    unmet,
)
from gshare.capacity.models import AdmissionRequest, Allocation, GpuModel, GpuTier
from gshare.capacity.placement import (
    HAMI_CORE,
    MIG,
    CapacitySnapshot,
    CardSnapshot,
    MigInstance,
    NoFit,
    Placement,
    PlacementIndex,
    PlacementRequest,
    RequestKind,
    competes,
    free_slots,
    kinds_of,
    may_hold,
    slot_limit,
    within_reach,
)
from gshare.capacity.policy import (
    Boundary,
    EffectivePolicy,
    PolicyDenial,
    SessionRequest,
    boundary_of,
    check_queueing,
    check_request,
)
from gshare.capacity.policy import (
    Usage as PolicyUsage,
)
from gshare.capacity.queue import FairShareSettings, Priority, QueuedRequest
from gshare.clusters import service as clusters
from gshare.credits import operations
from gshare.credits.amounts import format_amount, hold_amount
from gshare.credits.ledger import InsufficientCredits
from gshare.credits.operations import HoldResolved
from gshare.events import outbox
from gshare.identity import service as identity
from gshare.identity.authz import Context, audit, require
from gshare.identity.permissions import Action
from gshare.kit import metrics
from gshare.kit.errors import Conflict, Forbidden, GShareError, NotFound
from gshare.kit.hooks import Hook
from gshare.kit.ids import new_id
from gshare.kit.settings import Settings

COMMIT_ATTEMPTS = 6
DEFAULT_TYPICAL = timedelta(hours=1)
_SCOPE_NAMES = {0: "global", 1: "organization", 2: "group", 3: "user"}


class PolicyDenied(Forbidden):
    code = "policy_denied"

    def __init__(self, denial: PolicyDenial) -> None:
        self.key = denial.key
        self.scope = _SCOPE_NAMES[int(denial.scope.kind)]
        self.scope_id = denial.scope.id
        super().__init__(f"{denial.reason} It is set by the {self.scope} policy.")

    def body(self) -> dict[str, Any]:
        body = super().body()
        body["error"] |= {
            "key": self.key,
            "scope": self.scope,
            "scope_id": None if self.scope_id is None else str(self.scope_id),
        }
        return body


class NoCapacity(Conflict):
    code = "no_capacity"
    message = "No card can take this session now."


@dataclass(frozen=True)
class Ask:
    """A session asking to run: who, for which group, which tier (None: CPU only), how much."""

    request_id: uuid.UUID
    user_id: uuid.UUID
    group_id: uuid.UUID
    tier_id: uuid.UUID | None
    cpu_millicores: int = 1000
    memory_mib: int = 2048
    # Only a card of this cluster will do (the one holding the session's volumes); None: any.
    cluster_id: uuid.UUID | None = None
    # The session billed for the allocation (its hold names it); None: the request itself.
    session_id: uuid.UUID | None = None


@dataclass(frozen=True)
class Outcome:
    request: AdmissionRequest
    allocation: Allocation | None  # None while queued
    position: int | None = None
    estimated_wait: timedelta | None = None


def fair_share(settings: Settings) -> FairShareSettings:
    return FairShareSettings(
        half_life=timedelta(minutes=settings.fair_share_half_life_minutes),
        sampling_interval=timedelta(seconds=settings.fair_share_interval_seconds),
        starvation_limit=timedelta(minutes=settings.starvation_limit_minutes),
    )


# ---- preparing a request -------------------------------------------------------------------


@dataclass
class _Prepared:
    ask: Ask
    tier: GpuTier | None
    model: GpuModel | None
    policy: EffectivePolicy
    price: int
    hold: int
    wallet_id: uuid.UUID | None  # the user's own wallet, which the hold is placed on
    available: int
    group_wallet_id: uuid.UUID | None  # the wallet of the group the session runs for
    queue: tuple[bool, repository.Holds] | None  # read with `queue=True`
    isolation: Isolation = SHARED_ISOLATION

    @property
    def request(self) -> PlacementRequest | None:
        return (
            None
            if self.tier is None or self.model is None
            else placement_request(
                self.ask.request_id,
                self.tier,
                self.model.name,
                self.ask.cluster_id,
                self.isolation,
            )
        )


def boundary_block(
    isolation: Isolation,
    traits: NodeTraits,
    boundary: Boundary,
    cpu_cluster: uuid.UUID | None = None,
) -> dict[str, Any]:
    """What the session's resource is told of its trust boundary on a node with `traits`; for
    a session without a card, also the cluster chosen for it (`cpu_placement`)."""
    network: dict[str, Any] = {"egress": boundary.egress}
    if boundary.egress == "listed":
        network["cidrs"] = sorted(boundary.cidrs)
    block: dict[str, Any] = {"isolation": pod_isolation(isolation, traits), "network": network}
    if cpu_cluster is not None:
        block["cluster"] = str(cpu_cluster)
    return block


async def _cpu_cluster(db: AsyncSession, prepared: _Prepared) -> tuple[uuid.UUID, NodeTraits]:
    """The cluster a session without a card runs on (its pinned one, or any connected one),
    and what its pod is made for; the level's refusal when none meets it."""
    ask = prepared.ask
    candidates = [ask.cluster_id] if ask.cluster_id else await clusters.connected_ids(db)
    if not candidates:
        raise NoCapacity("No cluster is connected to run sessions on.")
    # No dedication of these clusters changes before this commits, nor while one being made
    # counts the sessions there (`boundaries.dedicate`).
    await repository.share_cluster_dedications(db, candidates)
    offers = await repository.cpu_offers(db, candidates)
    chosen = cpu_placement(offers, prepared.isolation, ask.group_id)
    if chosen is None:
        level = prepared.isolation.level
        raise IsolationUnmet(
            f"Isolation {level}: no connected cluster can run a session without a GPU at this "
            "level (it needs the cluster's sandbox RuntimeClass, every node vouched for user "
            "namespaces, or a node dedicated to your organization or group). Ask an "
            "administrator: the level is set by your policy."
        )
    return chosen


def placement_request(
    request_id: uuid.UUID,
    tier: GpuTier,
    model: str,
    cluster_id: uuid.UUID | None = None,
    isolation: Isolation = SHARED_ISOLATION,
) -> PlacementRequest:
    """What placement weighs of one session of `tier` on cards of `model`."""
    kind: RequestKind = "mig"
    if tier.kind in ("fraction", "exclusive"):
        kind = "fraction" if tier.kind == "fraction" else "exclusive"
    return PlacementRequest(
        id=request_id,
        tier=str(tier.id),
        kind=kind,
        model=model,
        vram_mib=tier.vram_mib,
        compute_percent=tier.compute_percent,
        slots_per_card=tier.denominator or 1,
        mig_profile=tier.mig_profile,
        cluster_id=cluster_id,
        isolation=isolation,
    )


def _policy_usage(held: tuple[int, int, int, int]) -> PolicyUsage:
    sessions, vram, millicores, memory = held
    return PolicyUsage(
        gpu_sessions=sessions, vram_mib=vram, cpu_cores=millicores / 1000, memory_mib=memory
    )


async def _prepare(
    db: AsyncSession, ask: Ask, now: datetime, window: int, *, queue: bool = False
) -> _Prepared:
    """Check who asks and what for; raise the policy's refusal. With `queue`, also read the
    queue's facts (`repository.queue_facts`) in the same round trip."""
    org_id = await identity.membership_org(db, ask.user_id, ask.group_id, now)
    if org_id is None:
        raise Forbidden("You are not in that group.", code="not_in_group")
    facts = await repository.admission_facts(
        db, ask.tier_id, org_id, ask.group_id, ask.user_id, queue=now if queue else None
    )
    tier = model = None
    if ask.tier_id is not None:
        tier, model = service.active_tier(facts.tier)
    policy = service.effective_of(facts.policies)
    wanted = SessionRequest(
        model=model.name if model else None,
        tier=tier.name if tier else None,
        vram_mib=tier.vram_mib if tier else 0,
        cpu_cores=ask.cpu_millicores / 1000,
        memory_mib=ask.memory_mib,
    )
    denial = check_request(policy, wanted, _policy_usage(facts.held))
    if denial is not None:
        raise PolicyDenied(denial)
    price = tier.price if tier else 0
    wallet, group_wallet_id = await operations.session_wallets(db, ask.user_id, ask.group_id)
    hold = hold_amount(price, window) if price else 0
    return _Prepared(
        ask,
        tier,
        model,
        policy,
        price,
        hold,
        wallet.wallet_id,
        wallet.amount,
        group_wallet_id,
        facts.queue,
        service.isolation_of(policy, org_id, ask.group_id),
    )


async def available_to(db: AsyncSession, user_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, int]:
    found = await operations.available_to(db, "user", list(set(user_ids)))
    return {user_id: a.amount for user_id, a in found.items()}


def _short_of_credits(prepared: _Prepared, available: int) -> InsufficientCredits:
    return InsufficientCredits(
        f"This tier costs {format_amount(prepared.price)} credits an hour; one hold window "
        f"needs {format_amount(prepared.hold)} and your wallet has "
        f"{format_amount(max(available, 0))} available."
    )


# ---- snapshots -----------------------------------------------------------------------------


def _card_snapshot(card: Any) -> CardSnapshot:
    """A card as placement sees it, from a row of `repository.snapshot_rows` or
    `locked_card_row` (its columns and `taken`, the slots held allocations take)."""
    taken = set(card.taken or ())
    pool = MIG if card.pool == MIG else HAMI_CORE
    return CardSnapshot(
        id=card.id,
        cluster_id=card.cluster_id,
        node=card.node,
        model=card.model,
        memory_mib=card.memory_mib,
        split_count=card.split_count,
        pool=pool,
        healthy=card.healthy,
        missing=card.missing,
        carved_tier=str(card.carved_tier_id) if card.carved_tier_id else None,
        allocated_slots=frozenset(taken) if pool == HAMI_CORE else frozenset(),
        mig_instances=tuple(
            MigInstance(i["profile"], i["start"], i["start"] in taken) for i in card.mig_layout
        )
        if pool == MIG
        else (),
        traits=repository.traits_of(card),
    )


async def capacity_snapshot(
    db: AsyncSession, models: set[str], now: datetime, holds: repository.Holds | None = None
) -> CapacitySnapshot:
    """Every usable card of these models on connected clusters, what each holds, and the cards
    held for starving requests or a booking's members (read here unless given)."""
    rows = await repository.snapshot_rows(db, await clusters.connected_ids(db), models)
    if holds is None:
        holds = (await repository.queue_facts(db, None, now))[1]
    # A reservation on a card that is no longer usable holds nothing: left in place it would
    # keep the starving request from reserving a card that is.
    usable = {r.id for r in rows}
    return CapacitySnapshot(
        tuple(_card_snapshot(r) for r in rows),
        {card: request for card, request in holds.reserved.items() if card in usable},
        {card: booking for card, booking in holds.booked.items() if card in usable},
    )


# ---- commit --------------------------------------------------------------------------------


async def _commit(
    db: AsyncSession,
    prepared: _Prepared,
    placement: Placement | None,
    now: datetime,
    settings: Settings,
    *,
    new_request: bool = False,
) -> Allocation | None:
    """Write the allocation and its hold (and, for a new request, the request itself); None
    when the card cannot take it any more, having written nothing."""
    ask, tier = prepared.ask, prepared.tier
    card_id = cluster_id = slot = live_slots = live_tier_id = None
    carve = False
    traits = PLAIN_NODE
    cpu_cluster: uuid.UUID | None = None
    if placement is None:
        cpu_cluster, traits = await _cpu_cluster(db, prepared)
    else:
        request = prepared.request
        assert request is not None
        assert tier is not None
        card = await repository.locked_card_row(db, placement.card_id)
        if card is None or not card.healthy or card.missing or card.draining:
            return None
        snapshot = _card_snapshot(card)
        fresh = PlacementIndex(CapacitySnapshot((snapshot,))).fit_on(card.id, request)
        if fresh is None:
            return None
        card_id, cluster_id, traits = card.id, card.cluster_id, snapshot.traits
        if card.pool == MIG:
            slot = fresh.mig_start
        else:
            live_slots = card.carved_slots
            if not card.taken:
                live_slots, carve = slot_limit(snapshot, request), True
            assert fresh.slot is not None
            if live_slots is None or fresh.slot >= live_slots:
                return None  # the split count grew since the card was carved
            slot, live_tier_id = fresh.slot, tier.id
    hold_id = None
    if prepared.price > 0:
        wallet_id = prepared.wallet_id or await operations.account_id(db, "user", ask.user_id, now)
        hold = await operations.place_hold(
            db,
            wallet_id=wallet_id,
            session_id=ask.session_id or ask.request_id,
            rate_per_hour=prepared.price,
            window_seconds=settings.hold_window_seconds,
            now=now,
            for_group_wallet_id=prepared.group_wallet_id
            or await operations.account_id(db, "group", ask.group_id, now),
        )
        hold_id = hold.id
    values: dict[str, Any] = {
        "id": new_id(),
        "request_id": ask.request_id,
        "user_id": ask.user_id,
        "group_id": ask.group_id,
        "cluster_id": cluster_id,
        "card_id": card_id,
        "tier_id": tier.id if tier else None,
        "model": prepared.model.name if prepared.model else None,
        "tier_name": tier.name if tier else None,
        "slot": slot,
        "mig_profile": tier.mig_profile if tier else None,
        "vram_mib": tier.vram_mib if tier else 0,
        "compute_percent": tier.compute_percent if tier else 0,
        "cpu_millicores": ask.cpu_millicores,
        "memory_mib": ask.memory_mib,
        "price_per_hour": prepared.price,
        "hold_id": hold_id,
        "status": "live",
        "live_card_id": card_id,
        "live_tier_id": live_tier_id,
        "live_slots": live_slots,
        "admitted_at": now,
        "boundary": boundary_block(
            prepared.isolation, traits, boundary_of(prepared.policy), cpu_cluster
        ),
    }
    penalty = 0.0
    if tier is not None:
        fair = fair_share(settings)
        share = queue.card_share(tier.kind, tier.denominator, tier.compute_percent)
        penalty = queue.decay_alpha(fair.sampling_interval, fair.half_life) * share
    if penalty > 0:
        await repository.lock_usage_shared(db)
    await repository.write_admission(
        db,
        values,
        carve=carve,
        new_request=_request_values(ask, prepared, "admitted", now) if new_request else None,
        penalty=penalty,
        never=service.EPOCH,
        # A new request is announced with its admission; a queued one by the dequeue's walk.
        events=_events([(ask.request_id, ask.user_id, ask.group_id, "admitted")])
        if new_request
        else [],
    )
    return Allocation(**values)


async def _place_and_commit(
    db: AsyncSession,
    prepared: _Prepared,
    now: datetime,
    settings: Settings,
    holds: repository.Holds,
) -> Allocation | NoFit:
    """Decide on a fresh snapshot and commit, deciding again when another process took the
    card first. Writes nothing unless it returns an allocation."""
    request = prepared.request
    if request is None:
        allocation = await _commit(db, prepared, None, now, settings, new_request=True)
        assert allocation is not None
        return allocation
    for _ in range(COMMIT_ATTEMPTS):
        snapshot = await capacity_snapshot(db, {request.model}, now, holds)
        decided = PlacementIndex(snapshot).place(request)
        if isinstance(decided, NoFit):
            return decided
        allocation = await _commit(db, prepared, decided, now, settings, new_request=True)
        if allocation is not None:
            return allocation
    return NoFit("no_capacity")


# ---- admitting -----------------------------------------------------------------------------


async def _waits_behind(
    db: AsyncSession, request: PlacementRequest, now: datetime, holds: repository.Holds
) -> bool:
    """Whether someone waiting for the request's tier may take a card it may: it then queues
    behind them. Someone who may use only other cards (another tenant's dedicated ones,
    another cluster's) does not hold it back."""
    rows = [r for r in await repository.queued(db) if str(r.tier_id) == request.tier]
    state = await queue_state(db, rows)
    kinds = kinds_of((await capacity_snapshot(db, {request.model}, now, holds)).cards)
    return any(competes(q.request, request, kinds) for q in state.queued)


async def _worth_waiting(db: AsyncSession, prepared: _Prepared, placed: NoFit) -> NoFit:
    """No usable card of the model is not the same as none at all: cards that are down, on an
    unreachable cluster or in the other pool for now may come back, so the request may wait.
    Nor is no usable card at the request's isolation level: a node that meets it may be down
    for now. A level no known card meets stays `isolation_unmet`."""
    model = prepared.model
    request = prepared.request
    if placed.reason == "isolation_unmet" and model is not None and request is not None:
        known = await repository.model_traits(db, model.name, request.cluster_id)
        if unmet(known, request.isolation) is None:
            return NoFit("no_capacity")
        return placed
    if (
        placed.reason == "no_card_of_model"
        and model is not None
        and await repository.model_has_cards(db, model.name)
    ):
        return NoFit("no_capacity")
    return placed


class IsolationUnmet(Conflict):
    code = "isolation_unmet"
    message = "No connected cluster can run this session at its isolation level."


async def _isolation_unmet(db: AsyncSession, prepared: _Prepared) -> IsolationUnmet:
    """Why the request's isolation level is met by no known card of its model."""
    request = prepared.request
    assert request is not None
    known = await repository.model_traits(db, request.model, request.cluster_id)
    why = unmet(known, request.isolation) or IsolationUnmet.message
    return IsolationUnmet(f"{why} Ask an administrator: the level is set by your policy.")


def _request_values(ask: Ask, prepared: _Prepared, status: str, now: datetime) -> dict[str, Any]:
    return {
        "id": ask.request_id,
        "user_id": ask.user_id,
        "group_id": ask.group_id,
        "tier_id": ask.tier_id,
        "model": prepared.model.name if prepared.model else None,
        "tier_name": prepared.tier.name if prepared.tier else None,
        "cpu_millicores": ask.cpu_millicores,
        "memory_mib": ask.memory_mib,
        "cluster_id": ask.cluster_id,
        "session_id": ask.session_id,
        "status": status,
        "reason": "",
        "enqueued_at": now,
        "decided_at": None if status == "queued" else now,
    }


async def _existing(db: AsyncSession, ask: Ask, now: datetime, settings: Settings) -> Outcome:
    found = await repository.request(db, ask.request_id)
    assert found is not None
    if found.user_id != ask.user_id:
        raise Conflict("This request id is taken.", code="request_exists")
    if found.status == "queued":
        return await _with_position(db, found, now, settings)
    return Outcome(found, await repository.allocation_of(db, found.id))


async def admit(db: AsyncSession, ask: Ask, now: datetime, settings: Settings) -> Outcome:
    """Admit a session now, or queue it; raise why not, having written nothing. Asking again
    with the same request id answers what became of the first ask. Each new decision is
    counted in the metrics: a refusal at once, the rest when the caller's transaction commits."""
    await repository.lock_user(db, ask.user_id)
    if await repository.request_exists(db, ask.request_id):
        return await _existing(db, ask, now, settings)
    try:
        outcome = await _admit_new(db, ask, now, settings)
    except GShareError as exc:
        metrics.ADMISSIONS.labels("request", "refused").inc()
        metrics.ADMISSION_REFUSALS.labels("request", exc.code).inc()
        raise
    decided = "queued" if outcome.allocation is None else "placed"
    metrics.count_after_commit(db, metrics.ADMISSIONS.labels("request", decided))
    return outcome


async def _admit_new(db: AsyncSession, ask: Ask, now: datetime, settings: Settings) -> Outcome:
    prepared = await _prepare(db, ask, now, settings.hold_window_seconds, queue=True)
    if prepared.hold > prepared.available:
        raise _short_of_credits(prepared, prepared.available)
    assert prepared.queue is not None
    waiting, holds = prepared.queue
    if waiting and prepared.request is not None:
        # Only those who may take a card it may hold it back; they share a card it may use,
        # so its level is met and it may wait.
        waiting = await _waits_behind(db, prepared.request, now, holds)
    placed: Allocation | NoFit = NoFit("no_capacity")
    if not waiting:
        placed = await _place_and_commit(db, prepared, now, settings, holds)
    if isinstance(placed, Allocation):  # announced as it was written
        return Outcome(AdmissionRequest(**_request_values(ask, prepared, "admitted", now)), placed)
    placed = await _worth_waiting(db, prepared, placed)
    if placed.reason == "isolation_unmet":
        raise await _isolation_unmet(db, prepared)
    refusal = check_queueing(prepared.policy)
    if refusal is not None or placed.reason == "no_card_of_model":
        why = (
            "No connected cluster has a card of this model in its pool."
            if placed.reason == "no_card_of_model"
            else "No card can take this session now, and the policy does not allow queueing."
        )
        raise NoCapacity(why)
    values = _request_values(ask, prepared, "queued", now)
    await repository.insert_request(db, values)
    row = await repository.request(db, ask.request_id)
    assert row is not None
    await _announce(db, [_change(row)])
    return await _with_position(db, row, now, settings)


async def release(
    db: AsyncSession,
    request_id: uuid.UUID,
    now: datetime,
    *,
    reason: str,
    used: int | None = None,
) -> Allocation | None:
    """Give an allocation's card slot back at once, and resolve its hold: settled for `used`
    credits when given, otherwise released whole. A dequeue follows once this commits. Returns
    the released allocation, or None when the request holds nothing (released already, or
    never admitted)."""
    released = await repository.release_allocation(db, request_id, now, reason)
    if released is None:
        return None
    allocation, card_id = released
    ended = _events([(request_id, allocation.user_id, allocation.group_id, "ended")])
    if card_id is None:
        await outbox.record_many(db, ended)
    else:
        # The card's row is locked now, so this reads what it holds after any admission to it
        # has committed.
        await repository.clear_carving(
            db, card_id, service.CAPACITY_CHANNEL, f"release {card_id}", ended
        )
    if allocation.hold_id is not None:
        try:
            if used is None:
                await operations.release_hold(db, hold_id=allocation.hold_id, now=now)
            else:
                await operations.settle_hold(db, hold_id=allocation.hold_id, used=used, now=now)
        except HoldResolved:
            pass  # the sessions domain settled it already
    return allocation


async def lock_paid_by(db: AsyncSession, hold_ids: Sequence[uuid.UUID]) -> None:
    """Lock what a release of the allocations these holds pay for would lock (the allocations,
    then their cards), ahead of the holds' wallets: metering may pause a session whose owner
    cannot pay, after it has locked the wallets."""
    await repository.lock_held_by_holds(db, hold_ids)


async def held_for_sessions(db: AsyncSession) -> dict[uuid.UUID, uuid.UUID]:
    """The requests that hold an allocation now, each with the session that asked for it."""
    return await repository.held_for_sessions(db)


async def ended_among(db: AsyncSession, ids: list[uuid.UUID]) -> set[uuid.UUID]:
    """Which of these sessions' admissions hold nothing any more (for the ledger check: no
    hold may stay open for them)."""
    return await repository.ended_requests(db, ids)


# ---- the queue -----------------------------------------------------------------------------


async def usage_state(db: AsyncSession, also: Sequence[uuid.UUID] = ()) -> queue.Usage:
    """The decayed usage of users, groups and organizations, with the organizations and
    fair-share weights of the groups that have usage, run or wait, and of the groups `also`
    names."""
    kept: dict[str, dict[uuid.UUID, float]] = {"user": {}, "group": {}, "org": {}}
    for row in await repository.usage(db):
        kept[row.subject_kind][row.subject_id] = row.usage
    groups = set(kept["group"]) | await repository.active_groups(db) | set(also)
    tenants = await service.fair_share_tenants(db, groups)
    return queue.Usage(kept["user"], kept["group"], kept["org"], tenants)


@dataclass
class QueueState:
    """The queued requests with what the pure queue needs of each."""

    rows: dict[uuid.UUID, AdmissionRequest] = field(default_factory=dict)
    queued: list[QueuedRequest] = field(default_factory=list)
    tiers: dict[uuid.UUID, tuple[GpuTier, GpuModel]] = field(default_factory=dict)
    weights: dict[uuid.UUID, float] = field(default_factory=dict)


async def queue_state(db: AsyncSession, rows: Sequence[AdmissionRequest]) -> QueueState:
    state = QueueState()
    tiers = await repository.tiers_by_id(db, [r.tier_id for r in rows if r.tier_id])
    models = {m.id: m for m in await repository.all_models(db)}
    policies = await service.effective_for_many(db, [(r.user_id, r.group_id) for r in rows])
    orgs = await identity.orgs_of_groups(db, list({r.group_id for r in rows}))
    for row in rows:
        tier = tiers.get(row.tier_id) if row.tier_id else None
        model = models.get(tier.model_id) if tier else None
        if tier is None or model is None or tier.retired_at is not None:
            continue  # refused at dequeue, before it can take a card in the pure decision
        weight = 1.0
        isolation = SHARED_ISOLATION
        policy = policies.get((row.user_id, row.group_id))
        if policy is not None:
            found = policy["queue_weight"].value
            weight = float(found) if isinstance(found, int | float) else 1.0
            isolation = service.isolation_of(policy, orgs.get(row.group_id), row.group_id)
        state.rows[row.id] = row
        state.tiers[row.id] = (tier, model)
        state.queued.append(
            QueuedRequest(
                placement_request(row.id, tier, model.name, row.cluster_id, isolation),
                row.user_id,
                row.group_id,
                row.enqueued_at,
                weight,
            )
        )
    return state


def _slots_for(snapshot: CapacitySnapshot, request: PlacementRequest) -> int:
    """How many sessions of the request's tier the usable cards it may use hold at most."""
    total = 0
    for card in snapshot.cards:
        if card.model != request.model or not within_reach(card, request):
            continue
        if request.kind == "mig":
            if card.pool == MIG:
                total += sum(1 for i in card.mig_instances if i.profile == request.mig_profile)
        elif card.pool == HAMI_CORE:
            total += slot_limit(card, request)
    return total


@dataclass(frozen=True)
class StartForecast:
    """A queued request's stored start forecast (see forecasting.py)."""

    likely: datetime | None
    surely: datetime | None
    first_likely: datetime | None
    at: datetime


@dataclass(frozen=True)
class Standing:
    position: int
    estimated_wait: timedelta
    priority: Priority
    ahead: queue.Ahead
    start: StartForecast | None = None
    waits_for: str = ""
    # Cards of its model held for other groups' bookings, and when the last hold ends.
    held_for_booking: tuple[int, datetime] | None = None


def _start_of(row: AdmissionRequest) -> StartForecast | None:
    if row.forecast_at is None:
        return None
    return StartForecast(
        row.likely_start_at, row.surely_start_by, row.first_likely_start_at, row.forecast_at
    )


async def standings(
    db: AsyncSession, now: datetime, settings: Settings
) -> dict[uuid.UUID, Standing]:
    """Every queued request's place among those waiting for the same model who may take the
    same cards, its estimated wait, its priority with its parts, and what is ahead of it and
    why; in the dequeue's order (members within a running booking first)."""
    state = await queue_state(db, await repository.queued(db))
    if not state.queued:
        return {}
    fair = fair_share(settings)
    state.queued, _ = await bookings.mark_booked(db, state.queued, now)
    ordered = queue.priorities(state.queued, await usage_state(db), now, fair)
    snapshot = await capacity_snapshot(db, {q.request.model for q in state.queued}, now)
    typical = await repository.typical_seconds(db, [t.id for t, _ in state.tiers.values()])
    by_id = {q.id: q for q in state.queued}
    holds = await repository.booked_holds(db, now)
    cards = {c.id: c for c in snapshot.cards}
    # A request counts behind those that may take a card it may (see `competes`): which of
    # the kinds of card each may use, and how many of each such set are ahead so far.
    kinds = kinds_of(snapshot.cards)
    reach = {
        q.id: frozenset(i for i, c in enumerate(kinds) if may_hold(c, q.request))
        for q in state.queued
    }
    ahead = queue.why_ahead(state.queued, ordered, reach)
    seen: Counter[tuple[str, frozenset[int]]] = Counter()
    out: dict[uuid.UUID, Standing] = {}
    for priority in ordered:
        q = by_id[priority.request_id]
        tier, _ = state.tiers[q.id]
        mine = reach[q.id]
        position = 1 + sum(
            n for (model, theirs), n in seen.items() if model == q.request.model and theirs & mine
        )
        seen[(q.request.model, mine)] += 1
        start = _start_of(state.rows[q.id])
        if start is not None and start.likely is not None:
            wait = max(start.likely - now, timedelta(0))
        else:  # not forecast yet: the tier's median length per round of its slots
            usual = timedelta(seconds=typical.get(tier.id, DEFAULT_TYPICAL.total_seconds()))
            wait = queue.estimated_wait(position, usual, _slots_for(snapshot, q.request))
        words = queue.waits_for_words(q.request, tier.name)
        # Cards held for other groups' bookings, of those it may use (another tenant's
        # dedicated cards are none of its business).
        others = [
            h
            for h in holds
            if h.model == q.request.model
            and h.group_id != q.group_id
            and h.card_id in cards
            and within_reach(cards[h.card_id], q.request)
        ]
        held = (len({h.card_id for h in others}), max(h.until for h in others)) if others else None
        out[q.id] = Standing(position, wait, priority, ahead[q.id], start, words, held)
    return out


@dataclass(frozen=True)
class Availability:
    """What a tier offers a new session now: free slots, or else about how long one waits."""

    free_slots: int
    estimated_wait: timedelta | None  # None while a slot is free, or with no card of the tier


async def availability(
    db: AsyncSession,
    pairs: Sequence[tuple[GpuTier, GpuModel]],
    now: datetime,
    isolation: Isolation = SHARED_ISOLATION,
) -> dict[uuid.UUID, Availability]:
    """Each tier's availability on the cards `isolation` may use, in a fixed number of queries
    however many tiers.

    A slot counts as free only while nobody who may take it waits for the tier (they take it
    first, and the preview says "queue" then too). The wait puts the new request behind
    everyone waiting for the same model who may take the same cards (see `competes`); the
    preview, which weighs priorities, says exactly where."""
    if not pairs:
        return {}
    waiting = await repository.queued(db)
    state = await queue_state(db, waiting) if waiting else QueueState()
    snapshot = await capacity_snapshot(db, {m.name for _, m in pairs}, now)
    kinds = kinds_of(snapshot.cards)
    typical = await repository.typical_seconds(db, [t.id for t, _ in pairs])
    out = {}
    for tier, model in pairs:
        request = placement_request(tier.id, tier, model.name, isolation=isolation)
        ahead = [q for q in state.queued if competes(q.request, request, kinds)]
        same_tier = any(state.rows[q.id].tier_id == tier.id for q in ahead)
        free = 0 if same_tier else free_slots(snapshot, request)
        slots = _slots_for(snapshot, request)
        wait = None
        if free == 0 and slots > 0:
            usual = timedelta(seconds=typical.get(tier.id, DEFAULT_TYPICAL.total_seconds()))
            wait = queue.estimated_wait(len(ahead) + 1, usual, slots)
        out[tier.id] = Availability(free, wait)
    return out


async def _with_position(
    db: AsyncSession, row: AdmissionRequest, now: datetime, settings: Settings
) -> Outcome:
    standing = (await standings(db, now, settings)).get(row.id)
    if standing is None:
        return Outcome(row, None)
    return Outcome(row, None, standing.position, standing.estimated_wait)


ADMISSION_CHANGED = "admission.changed"
_Change = tuple[uuid.UUID, uuid.UUID, uuid.UUID, str]  # request, user, group, status


def _change(row: AdmissionRequest) -> _Change:
    return (row.id, row.user_id, row.group_id, row.status)


def _events(changes: Sequence[_Change]) -> list[outbox.NewEvent]:
    """A request was admitted, queued, moved in the queue or ended: tell its owner and the
    admins of its group."""
    return [
        outbox.NewEvent(
            ADMISSION_CHANGED,
            outbox.Audience(user_id=user_id, group_id=group_id),
            {"request_id": str(request_id), "state": status},
        )
        for request_id, user_id, group_id, status in changes
    ]


async def _announce(db: AsyncSession, changes: Sequence[_Change]) -> None:
    await outbox.record_many(db, _events(changes))


def _decide(row: AdmissionRequest, status: str, reason: str, now: datetime) -> None:
    row.status, row.reason, row.decided_at, row.reserved_card_id = status, reason, now, None


@dataclass
class DequeueSummary:
    admitted: list[uuid.UUID] = field(default_factory=list)
    insufficient_credits: list[uuid.UUID] = field(default_factory=list)
    dropped: list[uuid.UUID] = field(default_factory=list)
    refused: list[uuid.UUID] = field(default_factory=list)
    reserved: dict[uuid.UUID, uuid.UUID] = field(default_factory=dict)
    waiting: int = 0  # requests still queued after this walk


def _ask_of(row: AdmissionRequest) -> Ask:
    return Ask(
        row.id,
        row.user_id,
        row.group_id,
        row.tier_id,
        row.cpu_millicores,
        row.memory_mib,
        row.cluster_id,
        row.session_id,
    )


def _refuse(
    row: AdmissionRequest, exc: GShareError, now: datetime, summary: DequeueSummary
) -> None:
    if isinstance(exc, InsufficientCredits):
        _decide(row, "insufficient_credits", exc.message, now)
        summary.insufficient_credits.append(row.id)
    elif isinstance(exc, PolicyDenied | NotFound | IsolationUnmet):
        _decide(row, "refused", exc.message, now)
        summary.refused.append(row.id)
    else:
        _decide(row, "dropped", exc.message, now)
        summary.dropped.append(row.id)


async def dequeue(db: AsyncSession, now: datetime, settings: Settings) -> DequeueSummary:
    """Admit everything queued that fits now, in fair-share priority order; one dequeue at a
    time across every process. Requests of deactivated users are dropped, those of retired
    tiers refused, those whose owner cannot pay the hold marked `insufficient_credits`."""
    summary = DequeueSummary()
    await repository.lock_queue(db)
    rows, busy = await claim_queued(db)
    if not rows:
        summary.waiting = busy
        return summary
    active = await identity.active_among(db, [r.user_id for r in rows])
    state = await queue_state(db, [r for r in rows if r.user_id in active])
    for row in rows:
        if row.user_id not in active:
            _decide(row, "dropped", "The user was deactivated.", now)
            summary.dropped.append(row.id)
        elif row.id not in state.rows:
            _decide(row, "refused", "The tier was retired.", now)
            summary.refused.append(row.id)
    fair = fair_share(settings)
    # Cards promised to requests by preemption are held like a starving request's, but do not
    # count against the cards held for starving requests.
    promised = await repository.promised_requests(db, [r.id for r in rows if r.reserved_card_id])
    fair = replace(fair, max_reserved_cards=fair.max_reserved_cards + len(promised))
    window = settings.hold_window_seconds
    # What the policy refuses now is refused before the decision, so that it cannot take a
    # card another request would get in this cycle.
    still: list[QueuedRequest] = []
    known: dict[tuple[str, uuid.UUID | None], list[NodeTraits]] = {}
    for q in state.queued:
        try:
            prepared = await _prepare(db, _ask_of(state.rows[q.id]), now, window)
            # A level no card can meet any more (a dedication withdrawn, or the level changed
            # for a resume bound to its volumes' cluster) is refused, not kept waiting for ever.
            where = (q.request.model, q.request.cluster_id)
            if where not in known:
                known[where] = await repository.model_traits(db, *where)
            if known[where] and unmet(known[where], prepared.isolation) is not None:
                raise await _isolation_unmet(db, prepared)
        except GShareError as exc:
            _refuse(state.rows[q.id], exc, now, summary)
            continue
        still.append(replace(q, request=replace(q.request, isolation=prepared.isolation)))
    # Members within what their group booked and is running now go ahead of the fair queue.
    state.queued, _ = await bookings.mark_booked(db, still, now)
    available = await available_to(db, [q.user_id for q in state.queued])

    def can_afford(q: QueuedRequest) -> bool:
        tier, _ = state.tiers[q.id]
        needed = hold_amount(tier.price, window) if tier.price else 0
        if needed > available.get(q.user_id, 0):
            return False
        available[q.user_id] = available.get(q.user_id, 0) - needed
        return True

    snapshot = await capacity_snapshot(db, {q.request.model for q in state.queued}, now)
    result = queue.dequeue(snapshot, state.queued, now, await usage_state(db), can_afford, fair)
    # The users' locks and the cards' rows first, each in id order: one walk admitting several
    # then takes them in the one lock order, as a single admission does.
    for user_id in sorted({q.user_id for q, _ in result.admitted}):
        await repository.lock_user(db, user_id)
    for card_id in sorted({p.card_id for _, p in result.admitted}):
        await repository.lock_card(db, card_id)
    for q, placement in result.admitted:
        row = state.rows[q.id]
        try:
            async with db.begin_nested():
                await repository.lock_user(db, row.user_id)
                prepared = await _prepare(db, _ask_of(row), now, window)
                allocation = await _commit(db, prepared, placement, now, settings)
                if allocation is None:
                    continue  # lost a race for the card; stays queued for the next cycle
        except GShareError as exc:
            _refuse(row, exc, now, summary)
            continue
        _decide(row, "admitted", "", now)
        summary.admitted.append(row.id)
    for request_id in result.unaffordable:
        row = state.rows[request_id]
        _decide(row, "insufficient_credits", "Your wallet cannot cover one hold window.", now)
        summary.insufficient_credits.append(request_id)
    reserved_for = {request_id: card_id for card_id, request_id in result.reserved.items()}
    for row in state.rows.values():
        if row.status == "queued":
            row.reserved_card_id = reserved_for.get(row.id)
    summary.reserved = dict(result.reserved)
    summary.waiting = sum(row.status == "queued" for row in rows) + busy
    await db.flush()
    if any(row.status != "queued" for row in rows):
        # Whoever is still waiting has moved up the queue.
        await _announce(db, [_change(row) for row in rows])
        await dequeued.results(db, summary, now)
    return summary


# The sessions domain follows what the queue decided, in the same transaction.
dequeued: Hook[[DequeueSummary, datetime], None] = Hook("dequeued")
# The sessions waiting on these queued requests are locked for a walk of the queue (they come
# before their requests in the lock order), skipping any another transaction holds: a handler
# returns the requests whose waiting session it could not lock.
locking_waiters: Hook[[list[uuid.UUID]], set[uuid.UUID]] = Hook("locking waiters")


async def claim_queued(db: AsyncSession) -> tuple[list[AdmissionRequest], int]:
    """The queued requests a walk of the queue may decide on, locked in the one lock order
    (the sessions waiting on them, then the requests), in queue order; and how many more wait
    that another transaction is changing now.

    A walk writes only rows it holds and reads their state again under the lock: a stop or a
    pause of a waiting session holds its session, then its request, until it commits, and a
    walk that decided on a request it had not locked would admit it after it was withdrawn,
    leaving a card and a hold to a session that has ended. Those are left to the next walk,
    which the change's own commit wakes."""
    seen = await repository.queued(db)
    busy: set[uuid.UUID] = set()
    for found in await locking_waiters.results(db, [r.id for r in seen]):
        busy |= found
    rows = await repository.lock_queued(db, [r.id for r in seen if r.id not in busy])
    still = {r.id for r in rows}
    return rows, sum(r.id not in still for r in seen)


# A queued request is being cancelled from the queue (request id, when, whether by its owner):
# whatever waits on it stops waiting; True from a handler that did.
cancelling: Hook[[uuid.UUID, datetime, bool], bool] = Hook("cancelling")


async def withdraw(db: AsyncSession, request_id: uuid.UUID, now: datetime, reason: str) -> bool:
    """Take a queued request out of the queue (its session was paused or stopped while it
    waited); False when it was not queued."""
    row = await repository.request(db, request_id, lock=True)
    if row is None or row.status != "queued":
        return False
    _decide(row, "cancelled", reason, now)
    await _announce(db, [_change(r) for r in [row, *await repository.queued(db)]])
    await db.flush()
    return True


@dataclass(frozen=True)
class CardAssignment:
    """The card an allocation holds, as the cluster names it."""

    node: str
    card_uuid: str
    vram_mib: int | None
    cores_percent: int | None
    mig_profile: str | None


async def assignment(db: AsyncSession, allocation: Allocation) -> CardAssignment | None:
    """Where the allocation's card is; None for a CPU-only allocation (or a card gone)."""
    if allocation.card_id is None:
        return None
    card = await repository.card(db, allocation.card_id)
    if card is None:
        return None
    if allocation.mig_profile is not None:
        return CardAssignment(card.node, card.uuid, None, None, allocation.mig_profile)
    return CardAssignment(
        card.node, card.uuid, allocation.vram_mib, allocation.compute_percent or None, None
    )


async def lost_among(db: AsyncSession, request_ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
    """Which of these requests' allocations are lost (their card went missing or changed)."""
    return await repository.lost_requests(db, request_ids)


async def allocation_of(db: AsyncSession, request_id: uuid.UUID) -> Allocation | None:
    return await repository.allocation_of(db, request_id)


async def decision_reason(db: AsyncSession, request_id: uuid.UUID) -> str | None:
    """Why the queue decided a request as it did (a refusal's reason), if it said."""
    row = await repository.request(db, request_id)
    return row.reason if row is not None else None


async def lock_user(db: AsyncSession, user_id: uuid.UUID) -> None:
    """Hold the user's admission lock until commit: what is checked against their policy
    (here or by a caller, such as their storage total) cannot be raced past meanwhile."""
    await repository.lock_user(db, user_id)


async def sample_usage(db: AsyncSession, now: datetime, settings: Settings) -> bool:
    """Fold the cards in use now into the decayed usage, at most once per sampling interval
    across every worker."""
    fair = fair_share(settings)
    await repository.lock_sampling(db)
    last = await repository.last_sampled(db)
    if last is not None and last > service.EPOCH and now - last < fair.sampling_interval:
        return False
    current_user: dict[uuid.UUID, float] = {}
    current_group: dict[uuid.UUID, float] = {}
    held = [a for a in await repository.held_allocations(db) if a.card_id is not None]
    tiers = await repository.tiers_by_id(db, [a.tier_id for a in held if a.tier_id])
    for allocation in held:
        tier = tiers.get(allocation.tier_id) if allocation.tier_id else None
        share = (
            queue.card_share(tier.kind, tier.denominator, tier.compute_percent)
            if tier is not None
            else allocation.compute_percent / 100
        )
        current_user[allocation.user_id] = current_user.get(allocation.user_id, 0) + share
        current_group[allocation.group_id] = current_group.get(allocation.group_id, 0) + share
    sampled = queue.sample_usage(await usage_state(db), current_user, current_group, fair)
    rows = [
        {"subject_kind": kind, "subject_id": subject, "usage": max(value, 0.0), "sampled_at": now}
        for kind, values in (
            ("user", sampled.by_user),
            ("group", sampled.by_group),
            ("org", sampled.by_org),
        )
        for subject, value in values.items()
    ]
    await repository.store_usage(db, rows)
    return True


# ---- what the console asks -----------------------------------------------------------------


@dataclass(frozen=True)
class Preview:
    outcome: str
    message: str
    price: int
    available: int
    hours: float | None
    position: int | None = None
    estimated_wait: timedelta | None = None
    denial: PolicyDenied | None = None


async def preview(ctx: Context, ask: Ask, settings: Settings) -> Preview:
    """What admitting `ask` would do now; changes nothing."""
    require(ctx, Action.ADMISSION_PREVIEW, target_type="admission")
    db = ctx.db
    available = (await available_to(db, [ask.user_id]))[ask.user_id]
    try:
        prepared = await _prepare(db, ask, ctx.now, settings.hold_window_seconds)
    except PolicyDenied as denied:
        return Preview("policy_denied", denied.message, 0, available, None, denial=denied)
    price = prepared.price
    hours = None if price == 0 else max(available, 0) / price
    if prepared.hold > available:
        message = _short_of_credits(prepared, available).message
        return Preview("insufficient_credits", message, price, available, hours)
    request, tier = prepared.request, prepared.tier
    if request is None or tier is None:
        try:
            await _cpu_cluster(db, prepared)
        except (IsolationUnmet, NoCapacity) as refused:
            return Preview("no_capacity", refused.message, price, available, hours)
        return Preview("start", "A CPU session starts at once.", price, available, hours)
    snapshot = await capacity_snapshot(db, {request.model}, ctx.now)
    # Who waits and may take the cards this request may: they go first.
    kinds = kinds_of(snapshot.cards)
    state = await queue_state(db, await repository.queued(db))
    ahead = [q for q in state.queued if competes(q.request, request, kinds)]
    waiting = any(state.rows[q.id].tier_id == tier.id for q in ahead)
    decided = PlacementIndex(snapshot).place(request)
    if isinstance(decided, Placement) and not waiting:
        return Preview("start", "A card is free: it would start now.", price, available, hours)
    if isinstance(decided, NoFit):
        decided = await _worth_waiting(db, prepared, decided)
        if decided.reason == "isolation_unmet":
            unmet_level = await _isolation_unmet(db, prepared)
            return Preview("no_capacity", unmet_level.message, price, available, hours)
    if (isinstance(decided, NoFit) and decided.reason == "no_card_of_model") or check_queueing(
        prepared.policy
    ):
        return Preview("no_capacity", NoCapacity.message, price, available, hours)
    fair = fair_share(settings)
    weight = prepared.policy["queue_weight"].value
    me = QueuedRequest(
        request,
        ask.user_id,
        ask.group_id,
        ctx.now,
        float(weight) if isinstance(weight, int | float) else 1.0,
    )
    ordered = queue.priorities(
        [*ahead, me],
        await usage_state(db, [ask.group_id]),
        ctx.now,
        fair,
    )
    position = next(i for i, p in enumerate(ordered, 1) if p.request_id == me.id)
    typical = await repository.typical_seconds(db, [tier.id])
    usual = timedelta(seconds=next(iter(typical.values()), DEFAULT_TYPICAL.total_seconds()))
    wait = queue.estimated_wait(position, usual, _slots_for(snapshot, request))
    return Preview(
        "queue",
        f"Every card is taken: it would wait in the queue at position {position}.",
        price,
        available,
        hours,
        position,
        wait,
    )


def _administered_groups_filter(ctx: Context) -> set[uuid.UUID] | None:
    return None if ctx.actor.is_super_admin else set(ctx.actor.group_admin_of)


async def administered_groups(ctx: Context) -> set[uuid.UUID] | None:
    """The groups the caller administers, their organizations' included; None: every group."""
    groups = _administered_groups_filter(ctx)
    if groups is not None:
        for org_id in ctx.actor.org_admin_of:
            groups |= {g.id for g in await identity.groups_of_org(ctx.db, org_id)}
    return groups


async def queue_view(
    ctx: Context, settings: Settings, *, whole_scope: bool
) -> tuple[list[AdmissionRequest], dict[uuid.UUID, Standing], bool]:
    """The caller's own requests, or (admins) every request in the groups they administer;
    with each queued one's standing. The third value says whether priorities may be shown."""
    db = ctx.db
    if not whole_scope:
        require(ctx, Action.QUEUE_READ_OWN, target_type="queue")
        rows = await repository.requests_of(db, user_id=ctx.actor.user_id)
        return rows, await standings(db, ctx.now, settings), False
    require(ctx, Action.QUEUE_READ_SCOPE, target_type="queue")
    groups = await administered_groups(ctx)
    rows = await repository.requests_of(db, group_ids=None if groups is None else sorted(groups))
    return rows, await standings(db, ctx.now, settings), True


async def cancel(ctx: Context, request_id: uuid.UUID) -> AdmissionRequest:
    """Withdraw a queued request: its owner, or an admin of its group."""
    require(ctx, Action.QUEUE_CANCEL, target_type="admission_request", target_id=request_id)
    row = await repository.request(ctx.db, request_id)
    org_id = None if row is None else await identity.group_org(ctx.db, row.group_id)
    if row is None or not (
        row.user_id == ctx.actor.user_id
        or ctx.actor.is_super_admin
        or (org_id is not None and ctx.actor.administers_group(row.group_id, org_id))
    ):
        raise NotFound("No such request.", code="request_not_found")
    if row.status != "queued":
        raise Conflict(f"The request is {row.status.replace('_', ' ')}.", code="not_queued")
    # What waits on the request stops waiting first (and withdraws it), locking in the order
    # the waiters lock: their own row, then the request.
    by_owner = row.user_id == ctx.actor.user_id
    waited = any(await cancelling.results(ctx.db, request_id, ctx.now, by_owner))
    row = await repository.request(ctx.db, request_id, lock=True)
    assert row is not None
    if not waited:
        if row.status != "queued":  # decided meanwhile by someone else
            raise Conflict(f"The request is {row.status.replace('_', ' ')}.", code="not_queued")
        _decide(row, "cancelled", "Cancelled.", ctx.now)
    await _announce(ctx.db, [_change(r) for r in [row, *await repository.queued(ctx.db)]])
    await audit(
        ctx,
        "queue.cancel",
        target_type="admission_request",
        target_id=request_id,
        group_id=row.group_id,
    )
    await ctx.db.flush()
    return row
