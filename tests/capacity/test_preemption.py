"""Victim selection over card snapshots: examples with whole results, and a property per rule
checked against every set of sessions on every card."""

from __future__ import annotations

import itertools
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gshare.capacity.placement import (
    CapacitySnapshot,
    CardSnapshot,
    MigInstance,
    PlacementIndex,
    PlacementRequest,
)
from gshare.capacity.preemption import (
    PRIORITIES,
    Claim,
    NoPreemption,
    Preemption,
    PreemptionIndex,
    PreemptionReason,
    PreemptionSnapshot,
    Priority,
    RunningSession,
    Shares,
    Victim,
    fair_shares,
    select_victims,
    soonest_pause,
    split_shares,
)
from gshare.capacity.queue import QueuedRequest, Tenants
from tests.capacity.test_placement import (
    A100,
    CardBuilder,
    card,
    card_id,
    exclusive,
    fraction,
    mig,
    request_id,
    snapshot,
)

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
HEAVY, LIGHT, OTHER = uuid.UUID(int=501), uuid.UUID(int=502), uuid.UUID(int=503)
USER = uuid.UUID(int=900)
QUARTER = f"{A100}:1/4"
HALF = f"{A100}:1/2"


def session_id(n: int) -> uuid.UUID:
    return uuid.UUID(int=2_000_000 + n)


def running(
    n: int,
    card_n: int,
    slot: int,
    group: uuid.UUID = HEAVY,
    *,
    cards: float = 0.25,
    minutes_ago: int = 60,
    priority: Priority = "normal",
    idle: bool = False,
    preemptible: bool = True,
    min_runtime: timedelta = timedelta(0),
    within_booking: bool = False,
    kept_notice: timedelta = timedelta(0),
) -> RunningSession:
    started = NOW - timedelta(minutes=minutes_ago)
    return RunningSession(
        session_id(n),
        card_id(card_n),
        slot,
        group,
        cards,
        started,
        priority,
        idle,
        preemptible,
        min_runtime,
        within_booking,
        kept_notice,
    )


def world(
    *cards: CardBuilder,
    sessions: list[RunningSession],
    shares: dict[uuid.UUID, float] | None = None,
    reserved: dict[uuid.UUID, uuid.UUID] | None = None,
) -> PreemptionSnapshot:
    given_shares = shares if shares is not None else {HEAVY: 1.0, LIGHT: 1.0, OTHER: 1.0}
    return PreemptionSnapshot(snapshot(*cards, reserved=reserved), tuple(sessions), given_shares)


def claim(
    request: PlacementRequest,
    group: uuid.UUID = LIGHT,
    *,
    priority: Priority = "normal",
    max_wait: timedelta | None = None,
    waited: timedelta = timedelta(minutes=5),
    booked: bool = False,
    by: datetime | None = None,
) -> Claim:
    return Claim(QueuedRequest(request, USER, group, NOW - waited), priority, max_wait, booked, by)


# Examples ----------------------------------------------------------------------------------


def test_a_group_within_its_share_takes_a_slot_from_the_group_furthest_above_its_own() -> None:
    snap = world(
        card(1).carved(QUARTER, 0, 1, 2, 3),
        sessions=[
            running(1, 1, 0, HEAVY),
            running(2, 1, 1, HEAVY),
            running(3, 1, 2, OTHER),
            running(4, 1, 3, OTHER),
        ],
        shares={HEAVY: 0.25, OTHER: 0.4, LIGHT: 1.0},
    )
    # HEAVY holds 0.5 of a 0.25 share, OTHER 0.5 of 0.4: HEAVY is furthest above; of its two
    # sessions, started at the same time, the id decides.
    assert select_victims(snap, claim(fraction("1/4")), NOW) == Preemption(
        request_id(1), card_id(1), (Victim(session_id(1), card_id(1), 0, HEAVY, "fair_share"),)
    )


def test_idle_sessions_go_first_then_lower_priority_then_the_latest_started() -> None:
    sessions = [
        running(1, 1, 0, priority="low", minutes_ago=10),
        running(2, 1, 1, idle=True, minutes_ago=300),
        running(3, 1, 2, priority="low", minutes_ago=5),
        running(4, 1, 3),
    ]
    snap = world(card(1).carved(QUARTER, 0, 1, 2, 3), sessions=sessions, shares={HEAVY: 0.1})
    chosen = select_victims(snap, claim(fraction("1/4"), priority="high"), NOW)
    assert isinstance(chosen, Preemption)
    assert [v.session_id for v in chosen.victims] == [session_id(2)]
    without_idle = world(
        card(1).carved(QUARTER, 0, 1, 2, 3),
        sessions=[*sessions[:1], replace(sessions[1], idle=False), *sessions[2:]],
        shares={HEAVY: 0.1},
    )
    chosen = select_victims(without_idle, claim(fraction("1/4"), priority="high"), NOW)
    assert isinstance(chosen, Preemption)
    assert [v.session_id for v in chosen.victims] == [session_id(3)]  # low, started last


def test_a_group_above_its_share_never_takes_from_a_group_within_its_own() -> None:
    snap = world(
        card(1).carved(QUARTER, 0, 1, 2, 3),
        sessions=[running(n, 1, n, LIGHT, priority="low") for n in range(4)],
        shares={LIGHT: 4.0, HEAVY: 0.1},
    )
    high = claim(fraction("1/4"), HEAVY, priority="high", max_wait=timedelta(0))
    assert select_victims(snap, high, NOW) == NoPreemption("no_eligible_victims")


def test_minimum_runtime_and_policy_protect_a_session() -> None:
    sessions = [
        running(0, 1, 0, min_runtime=timedelta(minutes=90)),
        running(1, 1, 1, preemptible=False),
        running(2, 1, 2, min_runtime=timedelta(minutes=60)),  # exactly served: may go
        running(3, 1, 3, preemptible=False),
    ]
    snap = world(card(1).carved(QUARTER, 0, 1, 2, 3), sessions=sessions, shares={LIGHT: 1.0})
    assert select_victims(snap, claim(fraction("1/4")), NOW) == Preemption(
        request_id(1), card_id(1), (Victim(session_id(2), card_id(1), 2, HEAVY, "fair_share"),)
    )
    protected = world(card(1).carved(QUARTER, 0, 1, 2, 3), sessions=[*sessions[:2], *sessions[3:]])
    assert select_victims(protected, claim(fraction("1/4")), NOW) == NoPreemption(
        "no_eligible_victims"
    )


def test_exclusive_empties_the_card_whose_worst_victim_is_the_best() -> None:
    snap = world(
        card(1).carved(HALF, 0),
        card(2).carved(QUARTER, 0, 1),
        sessions=[
            running(1, 1, 0, cards=0.5),
            running(2, 2, 0, idle=True),
            running(3, 2, 1, idle=True),
        ],
        shares={HEAVY: 0.1, LIGHT: 2.0},
    )
    assert select_victims(snap, claim(exclusive()), NOW) == Preemption(
        request_id(1),
        card_id(2),
        (
            Victim(session_id(2), card_id(2), 0, HEAVY, "fair_share"),
            Victim(session_id(3), card_id(2), 1, HEAVY, "fair_share"),
        ),
    )


def test_a_card_of_another_tier_is_emptied_whole() -> None:
    snap = world(
        card(1).carved(HALF, 0, 1),
        sessions=[running(1, 1, 0, cards=0.5), running(2, 1, 1, cards=0.5)],
        shares={HEAVY: 0.1, LIGHT: 1.0},
    )
    chosen = select_victims(snap, claim(fraction("1/4")), NOW)
    assert isinstance(chosen, Preemption)
    assert [v.slot for v in chosen.victims] == [0, 1]


def test_mig_frees_an_instance_of_its_profile_only() -> None:
    snap = world(
        card(1).mig(("3g.40gb", 0, True), ("3g.40gb", 4, True)),
        card(2).mig(("1g.10gb", 0, True)),
        sessions=[
            running(1, 1, 0, cards=0.42, minutes_ago=100),
            running(2, 1, 4, cards=0.42, minutes_ago=50),
            running(3, 2, 0, cards=0.14, idle=True),
        ],
        shares={HEAVY: 0.1, LIGHT: 1.0},
    )
    assert select_victims(snap, claim(mig("3g.40gb")), NOW) == Preemption(
        request_id(1), card_id(1), (Victim(session_id(2), card_id(1), 4, HEAVY, "fair_share"),)
    )


def test_waiting_past_the_limit_claims_from_any_group_when_within_its_share() -> None:
    snap = world(
        card(1).carved(QUARTER, 0, 1, 2, 3),
        sessions=[running(n, 1, n, OTHER, priority="low") for n in range(4)],
        shares={OTHER: 2.0, LIGHT: 1.0},
    )
    patient = claim(
        fraction("1/4"), priority="low", max_wait=timedelta(hours=1), waited=timedelta(minutes=30)
    )
    assert select_victims(snap, patient, NOW) == NoPreemption("no_claim")
    starving = claim(
        fraction("1/4"), priority="low", max_wait=timedelta(hours=1), waited=timedelta(hours=2)
    )
    chosen = select_victims(snap, starving, NOW)
    assert isinstance(chosen, Preemption)
    assert chosen.reasons == ("waited_too_long",)


def test_priority_takes_only_lower_priorities() -> None:
    snap = world(
        card(1).carved(QUARTER, 0, 1, 2, 3),
        sessions=[running(n, 1, n, OTHER, priority="high" if n else "normal") for n in range(4)],
        shares={OTHER: 2.0, LIGHT: 1.0},
    )
    chosen = select_victims(snap, claim(fraction("1/4"), priority="high"), NOW)
    assert chosen == Preemption(
        request_id(1), card_id(1), (Victim(session_id(0), card_id(1), 0, OTHER, "priority"),)
    )
    assert select_victims(snap, claim(fraction("1/4")), NOW) == NoPreemption("no_eligible_victims")
    assert select_victims(snap, claim(fraction("1/4"), priority="low"), NOW) == NoPreemption(
        "no_claim"
    )


def test_no_preemption_when_it_fits_or_no_card_of_the_model_exists() -> None:
    snap = world(card(1).carved(QUARTER, 0), sessions=[running(1, 1, 0)])
    assert select_victims(snap, claim(fraction("1/4")), NOW) == NoPreemption("fits_now")
    assert select_victims(snap, claim(exclusive(model="B200")), NOW) == NoPreemption(
        "no_card_of_model"
    )


def test_a_card_held_for_another_request_is_never_chosen() -> None:
    snap = world(
        card(1).carved(QUARTER, 0, 1, 2, 3),
        sessions=[running(n, 1, n) for n in range(4)],
        shares={HEAVY: 0.1, LIGHT: 1.0},
        reserved={card_id(1): request_id(7)},
    )
    assert select_victims(snap, claim(fraction("1/4")), NOW) == NoPreemption("no_eligible_victims")
    assert isinstance(select_victims(snap, claim(fraction("1/4", 7)), NOW), Preemption)


def test_assume_holds_the_card_and_moves_usage() -> None:
    snap = world(
        card(1).carved(QUARTER, 0, 1, 2, 3),
        card(2).carved(QUARTER, 0, 1, 2, 3),
        sessions=[running(n, 1 + n // 4, n % 4) for n in range(8)],
        shares={HEAVY: 1.75, LIGHT: 1.0},
    )
    index = PreemptionIndex(snap, NOW)
    first = claim(fraction("1/4", 1))
    taken = index.select(first)
    assert isinstance(taken, Preemption)
    index.assume(first, taken)
    # HEAVY now holds 1.75 cards, its share: no longer above it, nothing more is taken.
    assert index.select(claim(fraction("1/4", 2), priority="low")) == NoPreemption("no_claim")
    with pytest.raises(ValueError, match="already has a decision"):
        index.assume(first, taken)


def test_a_booked_claim_takes_any_other_groups_session_and_never_its_own() -> None:
    sessions = [
        running(0, 1, 0, HEAVY, priority="high"),
        running(1, 1, 1, LIGHT),
        running(2, 1, 2, OTHER, idle=True),
        running(3, 1, 3, LIGHT),
    ]
    snap = world(card(1).carved(QUARTER, 0, 1, 2, 3), sessions=sessions, shares={LIGHT: 0.0})
    # Without the booking, LIGHT (above its share of nothing) may take no one.
    assert select_victims(snap, claim(fraction("1/4")), NOW) == NoPreemption("no_eligible_victims")
    # With it, whatever their priority, the idle session goes first.
    assert select_victims(snap, claim(fraction("1/4"), booked=True), NOW) == Preemption(
        request_id(1), card_id(1), (Victim(session_id(2), card_id(1), 2, OTHER, "booking"),)
    )
    # A session on capacity its own group booked is no one's to take, a booking's neither.
    kept = world(
        card(1).carved(QUARTER, 0, 1, 2, 3),
        sessions=[*sessions[:2], replace(sessions[2], within_booking=True), sessions[3]],
        shares={LIGHT: 0.0},
    )
    chosen = select_victims(kept, claim(fraction("1/4"), booked=True), NOW)
    assert isinstance(chosen, Preemption)
    assert [v.session_id for v in chosen.victims] == [session_id(0)]
    # A card whole: every other group's session, but LIGHT's own stop it.
    assert select_victims(snap, claim(exclusive(), booked=True), NOW) == NoPreemption(
        "no_eligible_victims"
    )
    only_others = world(card(1).carved(HALF, 0, 1), sessions=[running(0, 1, 0), running(1, 1, 1)])
    chosen = select_victims(only_others, claim(exclusive(), booked=True), NOW)
    assert isinstance(chosen, Preemption)
    assert {v.reason for v in chosen.victims} == {"booking"}


def test_a_booked_claim_keeps_a_sessions_protection_minimum_runtime_and_notice() -> None:
    guarded = [
        running(0, 1, 0, OTHER, preemptible=False, priority="high", idle=True),
        running(1, 1, 1, OTHER, preemptible=False, idle=True),
        running(2, 2, 0, OTHER, min_runtime=timedelta(minutes=90)),
        running(3, 2, 1, OTHER, min_runtime=timedelta(minutes=90)),
    ]
    snap = world(card(1).carved(HALF, 0, 1), card(2).carved(HALF, 0, 1), sessions=guarded)
    # Not preemptible: never a booking's; within its minimum runtime: not yet.
    assert select_victims(snap, claim(fraction("1/2"), booked=True), NOW) == NoPreemption(
        "no_eligible_victims"
    )
    later = NOW + timedelta(minutes=30)
    chosen = select_victims(snap, claim(fraction("1/2"), booked=True), later)
    assert isinstance(chosen, Preemption)
    assert [v.session_id for v in chosen.victims] == [session_id(2)]
    # Ahead of a window, a session is taken only if it has run its minimum runtime by the start.
    for by, fits in ((later - timedelta(seconds=1), False), (later, True)):
        ahead = select_victims(snap, claim(fraction("1/2"), booked=True, by=by), NOW)
        assert isinstance(ahead, Preemption) == fits
    # And only if it can be told its own notice before the start; once the window runs, the
    # booking waits for that notice (see `soonest_pause`).
    told = [
        running(4, 3, 0, OTHER, kept_notice=timedelta(minutes=60)),
        running(5, 3, 1, OTHER, kept_notice=timedelta(minutes=60)),
    ]
    noticed = world(card(3).carved(HALF, 0, 1), sessions=told)
    for by, fits in ((NOW + timedelta(minutes=59), False), (NOW + timedelta(minutes=60), True)):
        ahead = select_victims(noticed, claim(fraction("1/2"), booked=True, by=by), NOW)
        assert isinstance(ahead, Preemption) == fits
    assert isinstance(select_victims(noticed, claim(fraction("1/2"), booked=True), NOW), Preemption)
    assert soonest_pause(told[0], NOW) == NOW + timedelta(minutes=60)
    assert soonest_pause(guarded[2], NOW) == later


def test_slots_taken_ahead_of_a_booking_count_and_its_held_cards_are_its_own() -> None:
    # Three quarters of a card run, one is free: the first slot a booking needs is the free
    # one; the second frees one more on that card, not the whole of another.
    snap = world(
        card(1).carved(QUARTER, 0, 1, 2),
        card(2).carved(HALF, 0, 1),
        sessions=[
            *(running(0, 1, 0), running(1, 1, 1), running(2, 1, 2, minutes_ago=5)),
            *(running(3, 2, 0, cards=0.5), running(4, 2, 1, cards=0.5)),
        ],
    )
    index = PreemptionIndex(snap, NOW)
    assert index.take(fraction("1/4", 1))
    assert not index.take(fraction("1/4", 2))
    second = claim(fraction("1/4", 2), booked=True)
    chosen = index.select(second)
    assert isinstance(chosen, Preemption)
    assert [v.session_id for v in chosen.victims] == [session_id(2)]  # the latest started
    # A card held for a booking is no other request's to free, a booked one's neither.
    booking = uuid.UUID(int=77)
    held = PreemptionSnapshot(
        CapacitySnapshot(snap.capacity.cards, {}, {card_id(1): booking, card_id(2): booking}),
        snap.sessions,
        snap.shares,
    )
    assert select_victims(held, claim(fraction("1/4"), booked=True), NOW) == NoPreemption(
        "no_eligible_victims"
    )
    # Its member takes the free slot there.
    within = claim(replace(fraction("1/4"), booking_id=booking), booked=True)
    assert select_victims(held, within, NOW) == NoPreemption("fits_now")


def test_fair_shares_split_cards_by_weight() -> None:
    assert fair_shares(12, {HEAVY: 1.0, LIGHT: 2.0, OTHER: 0.0}) == {
        HEAVY: 4.0,
        LIGHT: 8.0,
        OTHER: 0.0,
    }
    assert fair_shares(12, {HEAVY: 0.0}) == {HEAVY: 0.0}


# Properties --------------------------------------------------------------------------------

GROUPS = [HEAVY, LIGHT, OTHER]
TIER_SLOTS = {"1/2": 2, "1/4": 4, "exclusive": 1}
PROFILES = {"3g.40gb": 0.42, "1g.10gb": 0.14}


@st.composite
def worlds(draw: st.DrawFn) -> tuple[PreemptionSnapshot, Claim]:
    built: list[CardSnapshot] = []
    sessions: list[RunningSession] = []

    def held(card_n: int, slot: int, cards: float) -> None:
        if draw(st.integers(0, 9)) == 9:
            return  # a slot held by a session that is not running (starting, lost)
        sessions.append(
            running(
                len(sessions),
                card_n,
                slot,
                draw(st.sampled_from(GROUPS)),
                cards=cards,
                minutes_ago=draw(st.integers(0, 5)) * 20,
                priority=draw(st.sampled_from(PRIORITIES)),  # low first: often preemptible
                idle=draw(st.booleans()),
                preemptible=draw(st.integers(0, 7)) < 7,
                min_runtime=timedelta(minutes=draw(st.sampled_from([0, 0, 0, 30, 90]))),
                within_booking=draw(st.integers(0, 7)) == 0,
                kept_notice=timedelta(minutes=draw(st.sampled_from([0, 0, 10, 60]))),
            )
        )

    kind = draw(st.sampled_from(["1/2", "1/4", "exclusive", "mig"]))
    for n in range(draw(st.integers(2, 5))):
        # Mostly cards a request of its kind could use, mostly full: where preemption matters.
        on_mig = draw(st.integers(0, 7))
        if on_mig < 6 if kind == "mig" else on_mig == 7:
            instances = []
            for start in (0, 4):
                profile = draw(st.sampled_from(list(PROFILES)))
                occupied = draw(st.integers(0, 4)) < 4
                instances.append((profile, start, occupied))
                if occupied:
                    held(n, start, PROFILES[profile])
            built.append(card(n).mig(*instances).built)
            continue
        tier = draw(st.sampled_from([*TIER_SLOTS, *TIER_SLOTS, None]))
        if tier is None:
            built.append(card(n).built)
            continue
        limit = TIER_SLOTS[tier]
        used = draw(st.sampled_from([limit, limit, max(limit - 1, 1)]))
        built.append(card(n).carved(f"{A100}:{tier}", *range(used)).built)
        for slot in range(used):
            held(n, slot, 1.0 / limit)
    shares = {g: draw(st.sampled_from([0.0, 0.5, 1.0, 2.0, 4.0])) for g in GROUPS}
    if kind == "exclusive":
        request = exclusive()
    elif kind == "mig":
        request = mig(draw(st.sampled_from(list(PROFILES))))
    else:
        request = fraction(kind)
    booked = draw(st.integers(0, 4)) == 0
    # A booking's claim ahead of its window, or (None) during it.
    ahead = draw(st.sampled_from([None, 0, 30, 60])) if booked else None
    by = None if ahead is None else NOW + timedelta(minutes=ahead)
    wanted = claim(
        request,
        draw(st.sampled_from(GROUPS)),
        priority=draw(st.sampled_from(PRIORITIES[::-1])),
        max_wait=draw(st.sampled_from([None, timedelta(hours=1)])),
        waited=timedelta(minutes=draw(st.sampled_from([10, 120]))),
        booked=booked,
        by=by,
    )
    return PreemptionSnapshot(CapacitySnapshot(tuple(built)), tuple(sessions), shares), wanted


def usage(snap: PreemptionSnapshot) -> dict[uuid.UUID, float]:
    used = dict.fromkeys(GROUPS, 0.0)
    for s in snap.sessions:
        used[s.group_id] += s.cards
    return used


def within_share(snap: PreemptionSnapshot, wanted: Claim) -> bool:
    group = wanted.queued.group_id
    return usage(snap)[group] + wanted.queued.cards <= snap.shares[group] + 1e-9


def above_share(snap: PreemptionSnapshot, group: uuid.UUID) -> bool:
    return usage(snap)[group] > snap.shares[group] + 1e-9


def rank(priority: Priority) -> int:
    return PRIORITIES.index(priority)


def allowed(snap: PreemptionSnapshot, wanted: Claim, s: RunningSession) -> PreemptionReason | None:
    """The rules as the specification states them, one session at a time."""
    if s.within_booking:  # on capacity its own group booked and is running now
        return None
    if not s.preemptible:
        return None
    if wanted.booked:  # a booking takes back what it lends, from any other group
        if s.group_id == wanted.queued.group_id:
            return None
        if wanted.by is None:  # a window running: once its minimum runtime has run
            return "booking" if NOW - s.started_at >= s.min_runtime else None
        # Ahead of a window: told its own notice and its minimum runtime run by the start.
        pause = max(NOW + s.kept_notice, s.started_at + s.min_runtime)
        return "booking" if pause <= wanted.by else None
    if NOW - s.started_at < s.min_runtime:
        return None
    if rank(s.priority) > rank(wanted.priority):
        return None
    within, over = within_share(snap, wanted), above_share(snap, s.group_id)
    other = s.group_id != wanted.queued.group_id
    if other and not within and not over:
        return None
    if other and within and over:
        return "fair_share"
    waited = wanted.max_wait is not None and NOW - wanted.queued.enqueued_at > wanted.max_wait
    if waited:
        return "waited_too_long"
    return "priority" if rank(s.priority) < rank(wanted.priority) else None


def fits_without(
    snap: PreemptionSnapshot, card_n: CardSnapshot, gone: set[int], r: PlacementRequest
) -> bool:
    if card_n.pool == "mig":
        instances = tuple(
            MigInstance(i.profile, i.start, i.occupied and i.start not in gone)
            for i in card_n.mig_instances
        )
        freed = replace(card_n, mig_instances=instances)
    else:
        freed = replace(card_n, allocated_slots=card_n.allocated_slots - gone)
    return PlacementIndex(CapacitySnapshot((freed,))).fit_on(card_n.id, r) is not None


def preference(snap: PreemptionSnapshot, victims: list[RunningSession]) -> tuple[object, ...]:
    used = usage(snap)

    def ratio(g: uuid.UUID) -> float:
        share = snap.shares[g]
        return used[g] / share if share > 0 else (float("inf") if used[g] > 1e-9 else 0.0)

    keys = [
        (not v.idle, rank(v.priority), -ratio(v.group_id), -v.started_at.timestamp(), v.id)
        for v in victims
    ]
    return tuple(sorted(keys, reverse=True))


def valid_sets(
    snap: PreemptionSnapshot, wanted: Claim
) -> list[tuple[CardSnapshot, list[RunningSession]]]:
    """Every set of sessions on one card whose removal fits the request, each allowed."""
    out = []
    for c in snap.capacity.cards:
        if c.model != wanted.request.model:
            continue
        on_card = [s for s in snap.sessions if s.card_id == c.id]
        for size in range(1, len(on_card) + 1):
            for victims in itertools.combinations(on_card, size):
                if all(allowed(snap, wanted, v) for v in victims) and fits_without(
                    snap, c, {v.slot for v in victims}, wanted.request
                ):
                    out.append((c, list(victims)))
    return out


def decided(snap: PreemptionSnapshot, wanted: Claim) -> Preemption | NoPreemption:
    return select_victims(snap, wanted, NOW)


def sessions_of(snap: PreemptionSnapshot, chosen: Preemption) -> list[RunningSession]:
    by_id = {s.id: s for s in snap.sessions}
    return [by_id[v.session_id] for v in chosen.victims]


FAST = settings(max_examples=200, deadline=None)


@FAST
@given(worlds())
def test_a_group_above_its_share_takes_only_from_groups_above_theirs(
    drawn: tuple[PreemptionSnapshot, Claim],
) -> None:
    snap, wanted = drawn
    chosen = decided(snap, wanted)
    if isinstance(chosen, Preemption) and not within_share(snap, wanted) and not wanted.booked:
        assert all(
            above_share(snap, v.group_id) or v.group_id == wanted.queued.group_id
            for v in chosen.victims
        )


@FAST
@given(worlds())
def test_no_victim_has_run_less_than_its_minimum_runtime(
    drawn: tuple[PreemptionSnapshot, Claim],
) -> None:
    snap, wanted = drawn
    chosen = decided(snap, wanted)
    if isinstance(chosen, Preemption):
        # Ahead of a booking's window: by the time the window starts.
        by = wanted.by or NOW
        assert all(by - s.started_at >= s.min_runtime for s in sessions_of(snap, chosen))


@FAST
@given(worlds())
def test_no_victim_is_marked_not_preemptible_or_outranks_an_unbooked_request(
    drawn: tuple[PreemptionSnapshot, Claim],
) -> None:
    snap, wanted = drawn
    chosen = decided(snap, wanted)
    if isinstance(chosen, Preemption):
        for s in sessions_of(snap, chosen):
            assert s.preemptible
            # A booking takes back what it lends, whatever the borrower's priority.
            assert wanted.booked or rank(s.priority) <= rank(wanted.priority)


@FAST
@given(worlds())
def test_a_booked_claim_takes_only_other_groups_sessions_and_says_so(
    drawn: tuple[PreemptionSnapshot, Claim],
) -> None:
    snap, wanted = drawn
    chosen = decided(snap, wanted)
    if isinstance(chosen, Preemption):
        booked = wanted.booked
        assert all((v.reason == "booking") == booked for v in chosen.victims)
        if booked:
            assert all(v.group_id != wanted.queued.group_id for v in chosen.victims)


@FAST
@given(worlds())
def test_the_request_fits_on_its_one_card_once_the_victims_are_gone(
    drawn: tuple[PreemptionSnapshot, Claim],
) -> None:
    snap, wanted = drawn
    chosen = decided(snap, wanted)
    if isinstance(chosen, Preemption):
        (c,) = [c for c in snap.capacity.cards if c.id == chosen.card_id]
        assert {v.card_id for v in chosen.victims} == {c.id}
        assert fits_without(snap, c, {v.slot for v in chosen.victims}, wanted.request)
        for v, s in zip(chosen.victims, sessions_of(snap, chosen), strict=True):
            assert v.reason == allowed(snap, wanted, s)


@FAST
@given(worlds())
def test_the_victims_are_the_fewest_of_any_valid_set_on_their_card(
    drawn: tuple[PreemptionSnapshot, Claim],
) -> None:
    snap, wanted = drawn
    chosen = decided(snap, wanted)
    if isinstance(chosen, Preemption):
        sizes = [len(vs) for c, vs in valid_sets(snap, wanted) if c.id == chosen.card_id]
        assert len(chosen.victims) == min(sizes)


@FAST
@given(worlds())
def test_the_chosen_set_is_the_most_preferred_and_none_is_missed(
    drawn: tuple[PreemptionSnapshot, Claim],
) -> None:
    snap, wanted = drawn
    chosen = decided(snap, wanted)
    candidates = valid_sets(snap, wanted)
    if isinstance(chosen, NoPreemption):
        assert chosen.reason == "fits_now" or candidates == []
        return
    best = min(preference(snap, vs) for _, vs in candidates)
    assert preference(snap, sessions_of(snap, chosen)) == best


@settings(max_examples=60, deadline=None)
@given(worlds(), st.lists(st.sampled_from(GROUPS), min_size=1, max_size=4))
def test_assumed_decisions_never_share_a_card_or_a_victim(
    drawn: tuple[PreemptionSnapshot, Claim], groups: list[uuid.UUID]
) -> None:
    snap, wanted = drawn
    index = PreemptionIndex(snap, NOW)
    cards_taken: set[uuid.UUID] = set()
    victims: set[uuid.UUID] = set()
    for n, group in enumerate(groups):
        request = replace(wanted.request, id=request_id(100 + n))
        each = claim(request, group, priority=wanted.priority, max_wait=timedelta(0))
        chosen = index.select(each)
        if isinstance(chosen, Preemption):
            assert chosen.card_id not in cards_taken
            assert victims.isdisjoint(v.session_id for v in chosen.victims)
            index.assume(each, chosen)
            cards_taken.add(chosen.card_id)
            victims.update(v.session_id for v in chosen.victims)


# Fair share between organizations ----------------------------------------------------------

ORG_A, ORG_B, ORG_C = uuid.UUID(int=601), uuid.UUID(int=602), uuid.UUID(int=603)
B1, B2, C1 = uuid.UUID(int=611), uuid.UUID(int=612), uuid.UUID(int=613)
A_GROUPS = [uuid.UUID(int=620 + n) for n in range(3)]
OTHER_ORGS = {B1: ORG_B, B2: ORG_B, C1: ORG_C}
EXCLUSIVE = f"{A100}:exclusive"


def split_world(
    sessions: list[RunningSession], waiting: set[uuid.UUID], tenants: Tenants
) -> PreemptionSnapshot:
    """One card per session, each session whole on its card: the cards split among the
    organizations running or waiting, then within each."""
    cards = tuple(card(n).carved(EXCLUSIVE, 0).built for n in range(len(sessions)))
    groups = {s.group_id for s in sessions} | waiting
    shares = split_shares(float(len(cards)), groups, tenants)
    return PreemptionSnapshot(
        CapacitySnapshot(cards), tuple(sessions), shares.groups, tenants.org_of, shares.orgs
    )


def test_shares_split_among_organizations_then_within_each() -> None:
    tenants = Tenants({HEAVY: ORG_A, LIGHT: ORG_A, OTHER: ORG_B}, {ORG_B: 3.0}, {LIGHT: 2.0})
    assert split_shares(12, [OTHER, HEAVY, LIGHT], tenants) == Shares(
        {ORG_A: 3.0, ORG_B: 9.0}, {HEAVY: 1.0, LIGHT: 2.0, OTHER: 9.0}
    )
    # More groups of one organization split its share, not the cards.
    assert split_shares(12, [OTHER, HEAVY], tenants).orgs == {ORG_A: 3.0, ORG_B: 9.0}


def test_groups_an_organization_adds_take_no_card_from_another() -> None:
    """A and B run two cards each of four. Were shares split per group, A's two new groups,
    waiting, would each be owed a card and take B's; per organization A holds its share."""
    extra = A_GROUPS[1:]
    tenants = Tenants({**OTHER_ORGS, **dict.fromkeys(A_GROUPS, ORG_A)})
    sessions = [
        running(0, 0, 0, A_GROUPS[0], cards=1.0, minutes_ago=60),
        running(1, 1, 0, A_GROUPS[0], cards=1.0, minutes_ago=60),
        running(2, 2, 0, B1, cards=1.0, minutes_ago=10),
        running(3, 3, 0, B1, cards=1.0, minutes_ago=10),
    ]
    snap = split_world(sessions, set(extra), tenants)
    for n, group in enumerate(extra):
        assert select_victims(snap, claim(exclusive(n), group), NOW) == NoPreemption(
            "no_eligible_victims"
        )
    # B, waiting with a third request, is above its share too: it takes none of A's.
    assert select_victims(snap, claim(exclusive(9), B2), NOW) == NoPreemption("no_eligible_victims")
    # Once A runs three, B (within its share with a second card) takes one of A's back: of
    # the group furthest above its own share within A (the one running two of A's three).
    sessions[3] = running(3, 3, 0, A_GROUPS[1], cards=1.0, minutes_ago=5)
    snap = split_world(sessions, {B2}, tenants)
    assert select_victims(snap, claim(exclusive(9), B2), NOW) == Preemption(
        request_id(9),
        card_id(0),
        (Victim(session_id(0), card_id(0), 0, A_GROUPS[0], "fair_share"),),
    )


def test_within_an_organization_a_group_below_its_share_takes_from_one_above() -> None:
    """A holds its share; within it, the group running nothing takes the card of its
    organization's group above its own share, and no other organization's."""
    tenants = Tenants({**OTHER_ORGS, **dict.fromkeys(A_GROUPS, ORG_A)})
    sessions = [
        running(0, 0, 0, A_GROUPS[0], cards=1.0, minutes_ago=60),
        running(1, 1, 0, A_GROUPS[0], cards=1.0, minutes_ago=60),
        running(2, 2, 0, B1, cards=1.0, minutes_ago=5),
        running(3, 3, 0, B1, cards=1.0, minutes_ago=5),
    ]
    snap = split_world(sessions, {A_GROUPS[1]}, tenants)
    chosen = select_victims(snap, claim(exclusive(), A_GROUPS[1]), NOW)
    assert isinstance(chosen, Preemption)
    assert [(v.group_id, v.reason) for v in chosen.victims] == [(A_GROUPS[0], "fair_share")]


@st.composite
def split_claims(draw: st.DrawFn) -> dict[str, object]:
    """Whole-card sessions of A (its group drawn later), B and C; A's waiting requests; the
    organizations' weights (a super admin's); and claims of B and C."""
    owners = draw(st.lists(st.sampled_from(["A", B1, B2, C1]), min_size=2, max_size=6))
    sessions = [
        (
            owner,
            draw(st.integers(0, 6)) * 10,
            draw(st.sampled_from(PRIORITIES)),
            draw(st.booleans()),
            draw(st.integers(0, 7)) < 7,
            timedelta(minutes=draw(st.sampled_from([0, 0, 30, 90]))),
        )
        for owner in owners
    ]
    claims = [
        claim(
            exclusive(n),
            draw(st.sampled_from([B1, B2, C1])),
            priority=draw(st.sampled_from(PRIORITIES)),
            max_wait=draw(st.sampled_from([None, timedelta(hours=1)])),
            waited=timedelta(minutes=draw(st.sampled_from([10, 120]))),
        )
        for n in range(draw(st.integers(1, 4)))
    ]
    weights = {org: draw(st.sampled_from([0.5, 1.0, 2.0])) for org in (ORG_A, ORG_B, ORG_C)}
    group_weights = {g: draw(st.sampled_from([1.0, 3.0])) for g in OTHER_ORGS}
    return {
        "sessions": sessions,
        "claims": claims,
        "a_waiting": draw(st.integers(0, 3)),
        "weights": weights,
        "group_weights": group_weights,
    }


@settings(max_examples=200, deadline=None)
@given(split_claims(), st.data())
def test_nothing_inside_one_organization_moves_another_organizations_claims(
    drawn: dict[str, object], data: st.DataObject
) -> None:
    """However A splits its running and waiting members into groups and weighs its groups,
    each claim of B and C alone has the same outcome: the same rule, the same card and victim
    where that is not A's, and a session of A where it is (which of A's follows A's groups)."""
    sessions_drawn = drawn["sessions"]
    assert isinstance(sessions_drawn, list)

    def outcomes(seed: int) -> list[object]:
        groups = data.draw(
            st.lists(
                st.sampled_from(A_GROUPS),
                min_size=len(sessions_drawn) + 3,
                max_size=len(sessions_drawn) + 3,
            ),
            label=f"A's groups {seed}",
        )
        a_weights = data.draw(
            st.lists(st.sampled_from([0.001, 1.0, 5.0, 1000.0]), min_size=3, max_size=3),
            label=f"A's weights {seed}",
        )
        tenants = Tenants(
            {**OTHER_ORGS, **dict.fromkeys(A_GROUPS, ORG_A)},
            drawn["weights"],  # type: ignore[arg-type]
            {**drawn["group_weights"], **dict(zip(A_GROUPS, a_weights, strict=True))},  # type: ignore[dict-item]
        )
        sessions = [
            running(
                n,
                n,
                0,
                groups[n] if owner == "A" else owner,
                cards=1.0,
                minutes_ago=ago,
                priority=priority,
                idle=idle,
                preemptible=preemptible,
                min_runtime=min_runtime,
            )
            for n, (owner, ago, priority, idle, preemptible, min_runtime) in enumerate(
                sessions_drawn
            )
        ]
        claims = drawn["claims"]
        assert isinstance(claims, list)
        a_waiting = set(groups[len(sessions) : len(sessions) + int(drawn["a_waiting"])])  # type: ignore[call-overload]
        snap = split_world(sessions, a_waiting | {c.queued.group_id for c in claims}, tenants)
        a_sessions = {s.id for s in sessions if s.group_id in A_GROUPS}
        found: list[object] = []
        for each in claims:
            chosen = select_victims(snap, each, NOW)
            if isinstance(chosen, NoPreemption):
                found.append(chosen.reason)
                continue
            found.append(
                [
                    ("A", v.reason) if v.session_id in a_sessions else (v.session_id, v.reason)
                    for v in chosen.victims
                ]
            )
        return found

    assert outcomes(1) == outcomes(2)
