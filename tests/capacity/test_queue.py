"""Fair queue order and dequeue: scenarios with whole results and properties."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gshare.capacity.isolation import NodeTraits
from gshare.capacity.placement import (
    CapacitySnapshot,
    CardSnapshot,
    Placement,
    PlacementRequest,
    slot_limit,
)
from gshare.capacity.queue import _KEY_REASONS as KEY_REASONS
from gshare.capacity.queue import (
    Ahead,
    AheadReason,
    FairShareSettings,
    Priority,
    QueuedRequest,
    Tenants,
    Usage,
    ahead_in_words,
    decay_alpha,
    dequeue,
    priorities,
    sample_usage,
    usage_curve,
    usage_of,
    waits_for_words,
    why_ahead,
    with_entry_penalty,
)
from gshare.capacity.queue import _order_key as queue_order_key

MODEL = "A100-80GB"
MIB = 81920
NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
HEAVY, LIGHT = uuid.UUID(int=901), uuid.UUID(int=902)
ORG_A, ORG_B = uuid.UUID(int=801), uuid.UUID(int=802)
FAIR = FairShareSettings(
    half_life=timedelta(hours=1),
    sampling_interval=timedelta(minutes=30),
    wait_bonus_per_hour=1.0,
    starvation_limit=timedelta(hours=1),
)


def cid(n: int) -> uuid.UUID:
    return uuid.UUID(int=n)


def user(n: int) -> uuid.UUID:
    return uuid.UUID(int=500 + n)


def card(n: int, tier: str | None = None, *slots: int, split_count: int = 10) -> CardSnapshot:
    return CardSnapshot(
        cid(n),
        cid(0),
        "node-0",
        MODEL,
        MIB,
        split_count,
        carved_tier=tier,
        allocated_slots=frozenset(slots),
    )


def asking(
    n: int,
    tier: str = "1/4",
    *,
    by: int = 1,
    group: uuid.UUID = LIGHT,
    waited: timedelta = timedelta(0),
    weight: float = 1.0,
) -> QueuedRequest:
    if tier == "exclusive":
        request = PlacementRequest(
            uuid.UUID(int=10_000 + n), f"{MODEL}:exclusive", "exclusive", MODEL, MIB, 100
        )
    else:
        per_card = int(tier.split("/")[1])
        request = PlacementRequest(
            uuid.UUID(int=10_000 + n),
            f"{MODEL}:{tier}",
            "fraction",
            MODEL,
            MIB // per_card,
            100 // per_card,
            per_card,
        )
    return QueuedRequest(request, user(by), group, NOW - waited, weight)


def everyone(_: QueuedRequest) -> bool:
    return True


def admitted_ids(result: object) -> list[uuid.UUID]:
    return [q.id for q, _ in result.admitted]  # type: ignore[attr-defined]


def test_decay_halves_usage_over_one_half_life() -> None:
    assert decay_alpha(timedelta(hours=1), timedelta(hours=1)) == 0.5
    hourly = replace(FAIR, sampling_interval=timedelta(hours=1))
    usage = sample_usage(Usage({user(1): 2.0}, {HEAVY: 2.0}), {}, {HEAVY: 1.0}, hourly)
    assert usage == Usage({user(1): 1.0}, {HEAVY: 1.5})


def test_an_admission_adds_its_entry_penalty_to_user_and_group_at_once() -> None:
    alpha = decay_alpha(FAIR.sampling_interval, FAIR.half_life)
    after = with_entry_penalty(Usage({user(1): 1.0}), asking(1, "1/4", by=1, group=HEAVY), FAIR)
    assert after == Usage({user(1): 1.0 + alpha * 0.25}, {HEAVY: alpha * 0.25})


def test_priority_shows_its_parts() -> None:
    tenants = Tenants({HEAVY: ORG_A, LIGHT: ORG_A}, {ORG_A: 4.0})
    usage = usage_of({user(1): 0.5}, {HEAVY: 5.5, LIGHT: 0.5}, tenants)
    queued = [
        asking(1, by=1, group=HEAVY, waited=timedelta(hours=3), weight=2.0),
        asking(2, by=2, group=LIGHT, waited=timedelta(hours=1)),
    ]
    fair = replace(FAIR, starvation_limit=timedelta(hours=5))
    light, heavy = priorities(queued, usage, NOW, fair)
    # Within the organization LIGHT's request goes first (0.5 against 3.0 - 6.0 / 2), and
    # takes the organization's first turn: the one that counts its longest wait, three hours.
    assert heavy == Priority(
        request_id=uuid.UUID(int=10_001),
        value=3.0 - (0.5 + 5.5) / 2.0,
        waited=timedelta(hours=3),
        wait_bonus=3.0,
        user_usage=0.5,
        group_usage=5.5,
        weight=2.0,
        starving=False,
        org_id=ORG_A,
        org_usage=6.0,
        org_weight=4.0,
        org_value=1.0 - 6.0 / 4.0,
        org_waited=timedelta(hours=1),
    )
    assert (light.value, light.org_value, light.org_waited) == (
        1.0 - 0.5,
        3.0 - 6.0 / 4.0,
        timedelta(hours=3),
    )


def test_the_light_group_goes_before_the_heavy_group() -> None:
    usage = Usage({user(1): 3.0}, {HEAVY: 6.0, LIGHT: 0.25})
    queued = [
        asking(1, "exclusive", by=1, group=HEAVY, waited=timedelta(minutes=20)),
        asking(2, "exclusive", by=2, group=LIGHT, waited=timedelta(minutes=5)),
    ]
    result = dequeue(CapacitySnapshot((card(1),)), queued, NOW, usage, everyone, FAIR)
    assert admitted_ids(result) == [uuid.UUID(int=10_002)]
    assert [p.request_id for p in priorities(queued, usage, NOW, FAIR)] == [
        uuid.UUID(int=10_002),
        uuid.UUID(int=10_001),
    ]


def test_entry_penalty_stops_a_burst_taking_every_card() -> None:
    queued = [
        asking(1, "exclusive", by=1, waited=timedelta(minutes=3)),
        asking(2, "exclusive", by=1, waited=timedelta(minutes=3)),
        asking(3, "exclusive", by=2, group=HEAVY, waited=timedelta(minutes=2)),
    ]
    result = dequeue(CapacitySnapshot((card(1), card(2))), queued, NOW, Usage(), everyone, FAIR)
    assert admitted_ids(result) == [uuid.UUID(int=10_001), uuid.UUID(int=10_003)]
    alpha = decay_alpha(FAIR.sampling_interval, FAIR.half_life)
    assert result.usage.by_user == {user(1): pytest.approx(alpha), user(2): pytest.approx(alpha)}


def test_a_user_who_cannot_afford_the_hold_is_skipped_and_marked() -> None:
    queued = [asking(1, "1/2", by=1, waited=timedelta(minutes=9)), asking(2, "1/2", by=2)]
    poor = {user(1)}
    result = dequeue(
        CapacitySnapshot((card(1, f"{MODEL}:1/2", 0),)),
        queued,
        NOW,
        Usage(),
        lambda q: q.user_id not in poor,
        FAIR,
    )
    assert result.unaffordable == (uuid.UUID(int=10_001),)
    assert [(q.id, p.card_id, p.slot) for q, p in result.admitted] == [
        (uuid.UUID(int=10_002), cid(1), 1)
    ]


def simulate(limit: timedelta, ticks: int) -> int | None:
    """Two cards under a stream of quarter-card requests lasting 3 ticks, and one exclusive
    request; returns the tick the exclusive request starts, if it does."""
    tick = timedelta(minutes=20)
    fair = replace(FAIR, starvation_limit=limit)
    quarter = f"{MODEL}:1/4"
    # (card, slot) -> (tier, tick it ends); both cards start full, ending one slot at a time.
    running = {(cid(n), slot): (quarter, 1 + slot) for n in (1, 2) for slot in range(4)}
    queued = [replace(asking(99_999, "exclusive", by=9), enqueued_at=NOW)]
    reserved: dict[uuid.UUID, uuid.UUID] = {}
    usage = Usage()
    for t in range(ticks):
        now = NOW + t * tick
        running = {k: v for k, v in running.items() if v[1] > t}
        queued += [replace(asking(100 * t + i, by=i), enqueued_at=now) for i in range(3)]
        cards = []
        for n in (1, 2):
            slots = {slot: tier for (c, slot), (tier, _) in running.items() if c == cid(n)}
            cards.append(card(n, next(iter(slots.values()), None), *slots))
        result = dequeue(
            CapacitySnapshot(tuple(cards), reserved), queued, now, usage, everyone, fair
        )
        reserved, usage = dict(result.reserved), result.usage
        done = set()
        for q, p in result.admitted:
            assert p.slot is not None
            running[(p.card_id, p.slot)] = (p.tier, t + 3)
            done.add(q.id)
            if q.request.kind == "exclusive":
                return t
        queued = [q for q in queued if q.id not in done]
    return None


def test_a_starving_exclusive_request_gets_a_card_under_a_stream_of_small_ones() -> None:
    started = simulate(limit=timedelta(hours=1), ticks=40)
    assert started is not None
    # Starving after 3 ticks; its reserved card drains within the 3-tick duration.
    assert started <= 3 + 3 + 1


def test_without_the_starvation_limit_the_stream_keeps_the_exclusive_request_out() -> None:
    assert simulate(limit=timedelta(days=365), ticks=12) is None


# Properties ------------------------------------------------------------------------------

TIERS = ["1/2", "1/4", "1/8", "exclusive"]


@st.composite
def cards_strategy(draw: st.DrawFn) -> list[CardSnapshot]:
    out = []
    for n in range(draw(st.integers(0, 6))):
        split = draw(st.integers(1, 8))
        tier = draw(st.sampled_from(TIERS))
        limit = 1 if tier == "exclusive" else min(split, int(tier.split("/")[1]))
        out.append(
            card(n + 1, f"{MODEL}:{tier}", *range(draw(st.integers(0, limit))), split_count=split)
        )
    return out


@st.composite
def queue_strategy(draw: st.DrawFn) -> list[QueuedRequest]:
    return [
        asking(
            n,
            draw(st.sampled_from(TIERS)),
            by=draw(st.integers(1, 4)),
            group=draw(st.sampled_from([HEAVY, LIGHT])),
            waited=timedelta(minutes=draw(st.integers(0, 200))),
        )
        for n in range(draw(st.integers(0, 20)))
    ]


# No organization given; both groups in one; each in its own.
TENANTS = {
    "one": Tenants(),
    "same": Tenants({HEAVY: ORG_A, LIGHT: ORG_A}),
    "apart": Tenants({HEAVY: ORG_A, LIGHT: ORG_B}, {ORG_B: 2.0}),
}


@st.composite
def usage_strategy(draw: st.DrawFn) -> Usage:
    users = {user(n): draw(st.floats(0, 5)) for n in range(1, 5)}
    groups = {HEAVY: draw(st.floats(0, 5)), LIGHT: draw(st.floats(0, 5))}
    return usage_of(users, groups, TENANTS[draw(st.sampled_from(list(TENANTS)))])


@settings(max_examples=200, deadline=None)
@given(
    cards_strategy(),
    queue_strategy(),
    usage_strategy(),
    st.frozensets(st.integers(1, 4)),
    st.data(),
)
def test_dequeue_never_over_allocates(
    cards: list[CardSnapshot],
    queued: list[QueuedRequest],
    usage: Usage,
    poor: frozenset[int],
    data: st.DataObject,
) -> None:
    held: dict[uuid.UUID, uuid.UUID] = {}
    if cards and queued:
        held = data.draw(
            st.dictionaries(
                st.sampled_from([c.id for c in cards]), st.sampled_from([q.id for q in queued])
            )
        )
        held = {
            card_id: request_id for request_id, card_id in {r: c for c, r in held.items()}.items()
        }
    result = dequeue(
        CapacitySnapshot(tuple(cards), held),
        queued,
        NOW,
        usage,
        lambda q: q.user_id not in {user(n) for n in poor},
        FAIR,
    )
    by_id = {c.id: c for c in cards}
    slots = {c.id: set(c.allocated_slots) for c in cards}
    tiers = {c.id: c.carved_tier for c in cards}
    for q, p in result.admitted:
        assert q.user_id not in {user(n) for n in poor}
        assert isinstance(p, Placement)
        assert p.slot is not None
        assert p.slot not in slots[p.card_id]
        assert not slots[p.card_id] or tiers[p.card_id] == q.request.tier
        slots[p.card_id].add(p.slot)
        tiers[p.card_id] = q.request.tier
        assert len(slots[p.card_id]) <= slot_limit(by_id[p.card_id], q.request)
    for q, p in result.admitted:
        holder = held.get(p.card_id)
        # A hold ends only when its request is admitted or skipped for credits.
        released = holder in admitted_ids(result) or holder in result.unaffordable
        assert holder is None or holder == q.id or released, "placed on a card held for another"
    assert not set(result.reserved.values()) & set(admitted_ids(result))


@settings(max_examples=100, deadline=None)
@given(cards_strategy(), queue_strategy(), usage_strategy(), st.randoms())
def test_dequeue_is_deterministic(
    cards: list[CardSnapshot], queued: list[QueuedRequest], usage: Usage, rnd: object
) -> None:
    shuffled = list(queued)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    first = dequeue(CapacitySnapshot(tuple(cards)), queued, NOW, usage, everyone, FAIR)
    again = dequeue(CapacitySnapshot(tuple(cards)), shuffled, NOW, usage, everyone, FAIR)
    assert first == again


def test_only_max_reserved_cards_are_held_for_starving_requests() -> None:
    quarter = f"{MODEL}:1/4"
    queued = [
        asking(1, "exclusive", by=1, waited=timedelta(hours=3)),
        asking(2, "exclusive", by=2, waited=timedelta(hours=2)),
        asking(3, "1/4", by=3),
    ]
    snap = CapacitySnapshot((card(1, quarter, 0, 1), card(2, quarter, 0)))
    result = dequeue(snap, queued, NOW, Usage(), everyone, FAIR)
    # The most starving request holds the emptiest card; the quarter goes to the other one.
    assert result.reserved == {cid(2): uuid.UUID(int=10_001)}
    assert [(q.id, p.card_id, p.slot) for q, p in result.admitted] == [
        (uuid.UUID(int=10_003), cid(1), 2)
    ]
    two = dequeue(snap, queued, NOW, Usage(), everyone, replace(FAIR, max_reserved_cards=2))
    assert two.reserved == {cid(2): uuid.UUID(int=10_001), cid(1): uuid.UUID(int=10_002)}
    assert two.admitted == ()


# ---- why a request waits: what is ahead of it ----------------------------------------------


def test_what_is_ahead_names_the_first_part_of_the_order_that_puts_each_first() -> None:
    booked = replace(asking(1, group=HEAVY), booked=True)
    starving = asking(2, group=HEAVY, waited=timedelta(hours=2))
    light = asking(3, group=LIGHT, waited=timedelta(minutes=10))
    heavy = asking(4, by=2, group=HEAVY, waited=timedelta(minutes=9))
    later = asking(5, by=3, group=HEAVY, waited=timedelta(minutes=5))
    queued = [later, heavy, light, starving, booked]
    usage = Usage({user(2): 1.0}, {HEAVY: 1.0})
    ordered = priorities(queued, usage, NOW, FAIR)
    assert [p.request_id for p in ordered] == [
        q.id for q in (booked, starving, light, later, heavy)
    ]
    ahead = why_ahead(queued, ordered)
    assert ahead[booked.id] == Ahead(0, 0, {})
    assert ahead[light.id] == Ahead(2, 1, {"booking": 1, "waited_too_long": 1})
    # `later` waited less than `light` but its user used nothing: `light` is ahead by priority.
    assert ahead[later.id] == Ahead(3, 2, {"booking": 1, "waited_too_long": 1, "priority": 1})
    assert ahead[heavy.id] == Ahead(4, 2, {"booking": 1, "waited_too_long": 1, "priority": 2})
    assert ahead_in_words(ahead[booked.id]) == (
        "Nothing is ahead: it starts as soon as a card for it frees."
    )
    assert ahead_in_words(Ahead(1, 1, {"booking": 1})) == (
        "1 request is ahead: it is within its group's booking."
    )
    assert ahead_in_words(ahead[heavy.id]) == (
        "4 requests are ahead, from 2 groups: 1 is within its group's booking; 1 has waited "
        "past the limit; 2 have a higher priority (less recent use, or a longer wait)."
    )


def _first_difference(ahead: tuple[object, ...], mine: tuple[object, ...]) -> AheadReason:
    # Booked, starving, the organization's turn's value, its wait, the organization, the value
    # within it, the enqueue time, the id.
    assert len(KEY_REASONS) == len(ahead)
    return next(KEY_REASONS[i] for i, (a, b) in enumerate(zip(ahead, mine, strict=True)) if a != b)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.booleans(),  # booked
            st.integers(0, 150),  # minutes waited
            st.integers(0, 3),  # user
            st.sampled_from([HEAVY, LIGHT]),
            st.sampled_from([MODEL, "H100-80GB"]),
            # Which kinds of card it may use (its level and tenants: another tenant's
            # dedicated cards, a sandbox node...); None: not told, so every kind.
            st.none() | st.frozensets(st.integers(0, 2)),
        ),
        max_size=25,
    ),
    st.dictionaries(st.integers(0, 3), st.sampled_from([0.0, 0.5, 1.0]), max_size=4),
    st.sampled_from(["one", "same", "apart"]),
)
def test_what_is_ahead_matches_comparing_every_pair(
    drawn: list[tuple[bool, int, int, uuid.UUID, str, frozenset[int] | None]],
    used: dict[int, float],
    orgs: str,
) -> None:
    queued = []
    reach: dict[uuid.UUID, frozenset[int]] = {}
    for n, (booked, minutes, by, group, model, kinds) in enumerate(drawn):
        q = asking(n, by=by, group=group, waited=timedelta(minutes=minutes))
        queued.append(replace(q, booked=booked, request=replace(q.request, model=model)))
        reach[q.id] = frozenset({0, 1, 2}) if kinds is None else kinds
    usage = usage_of({user(u): v for u, v in used.items()}, {HEAVY: 0.5}, TENANTS[orgs])
    ordered = priorities(queued, usage, NOW, FAIR)
    by_id = {q.id: q for q in queued}
    keys = {p.request_id: queue_order_key(p, by_id[p.request_id]) for p in ordered}
    told = all(kinds is None for *_, kinds in drawn)
    found = why_ahead(queued, ordered, None if told else reach)
    for position, p in enumerate(ordered):
        mine = by_id[p.request_id]
        before = [
            by_id[o.request_id]
            for o in ordered[:position]
            if by_id[o.request_id].request.model == mine.request.model
            and reach[o.request_id] & reach[mine.id]
        ]
        reasons: dict[AheadReason, int] = {}
        for other in before:
            reason = _first_difference(keys[other.id], keys[mine.id])
            reasons[reason] = reasons.get(reason, 0) + 1
        assert found[mine.id] == Ahead(len(before), len({o.group_id for o in before}), reasons)


def test_the_usage_curve_folds_use_in_as_sampling_does() -> None:
    """One card from 12:00 to 14:00 and a quarter from 13:00 on: the curve's points equal
    `sample_usage` stepped every sampling interval over the same use."""
    step = FAIR.sampling_interval
    start = NOW
    intervals = [(NOW, NOW + timedelta(hours=2), 1.0), (NOW + timedelta(hours=1), None, 0.25)]
    curve = usage_curve(intervals, start, NOW + timedelta(hours=4), step, FAIR)
    usage = Usage()
    key = uuid.UUID(int=1)
    for n, point in enumerate(curve):
        at = start + n * step
        in_use = (1.0 if at < NOW + timedelta(hours=2) else 0.0) + (
            0.25 if at >= NOW + timedelta(hours=1) else 0.0
        )
        usage = sample_usage(usage, {key: in_use}, {}, FAIR)
        assert point.at == at
        assert point.in_use == in_use
        assert point.usage == pytest.approx(usage.by_user[key])
    assert len(curve) == 9
    assert usage_curve(intervals, NOW, NOW, step, FAIR) == []


def test_what_a_request_waits_for_is_said_in_words() -> None:
    quarter = asking(1, "1/4").request
    assert waits_for_words(quarter, "1/4") == f"a 1/4 slot of a shared {MODEL} card"
    whole = asking(2, "exclusive").request
    assert waits_for_words(whole, "exclusive") == f"a whole {MODEL} card"
    mig = replace(quarter, kind="mig", mig_profile="3g.40gb")
    assert waits_for_words(mig, "3g.40gb") == f"a MIG 3g.40gb instance of an {MODEL} card"
    tied = replace(quarter, cluster_id=uuid.UUID(int=7))
    assert waits_for_words(tied, "1/4").endswith(", on the cluster that holds its volumes")


def test_a_starving_request_never_holds_a_card_it_may_not_use() -> None:
    """The emptiest card is another tenant's dedicated one: a starving request of someone else
    does not hold it (neither owner nor requester could use it then), and a hold made before
    the card was dedicated is let go."""
    starving = asking(1, "exclusive", waited=timedelta(hours=3))
    tenant = uuid.UUID(int=77)
    private = replace(card(2), traits=NodeTraits(dedicated_to=tenant))
    snap = CapacitySnapshot((card(1, f"{MODEL}:1/4", 0), private))
    assert dequeue(snap, [starving], NOW, Usage(), everyone, FAIR).reserved == {cid(1): starving.id}
    held = CapacitySnapshot(snap.cards, {cid(2): starving.id})
    assert dequeue(held, [starving], NOW, Usage(), everyone, FAIR).reserved == {cid(1): starving.id}


# ---- fair share between organizations ------------------------------------------------------

ORG_C = uuid.UUID(int=803)
# Groups of organizations B and C; organization A's are drawn.
B1, B2, C1 = uuid.UUID(int=911), uuid.UUID(int=912), uuid.UUID(int=913)
A_GROUPS = [uuid.UUID(int=920 + n) for n in range(4)]


def test_a_weight_an_organization_sets_on_its_group_does_not_move_it_ahead_of_another() -> None:
    """Its admins set `queue_weight` 1000 on its group: its later request stays behind the
    earlier one of an organization that used as much."""
    tenants = Tenants({HEAVY: ORG_A, LIGHT: ORG_B}, group_weights={HEAVY: 1000.0})
    usage = usage_of({}, {HEAVY: 2.0, LIGHT: 2.0}, tenants)
    earlier = asking(1, "exclusive", by=1, group=LIGHT, waited=timedelta(minutes=30))
    weighted = asking(2, "exclusive", by=2, group=HEAVY, waited=timedelta(minutes=10), weight=1000)
    queued = [weighted, earlier]
    assert [p.request_id for p in priorities(queued, usage, NOW, FAIR)] == [earlier.id, weighted.id]
    result = dequeue(CapacitySnapshot((card(1),)), queued, NOW, usage, everyone, FAIR)
    assert admitted_ids(result) == [earlier.id]


def test_organizations_take_turns_by_their_use_for_their_weight() -> None:
    """A's three requests, B's one: B used less for its weight, so its request takes the first
    turn; A's take the next in A's own order (its light group first), each turn counting the
    next longest of A's waits."""
    tenants = Tenants({HEAVY: ORG_A, LIGHT: ORG_A, B1: ORG_B}, {ORG_B: 2.0})
    usage = usage_of({}, {HEAVY: 3.0, LIGHT: 0.0, B1: 3.0}, tenants)
    queued = [
        asking(1, by=1, group=HEAVY, waited=timedelta(minutes=50)),
        asking(2, by=2, group=HEAVY, waited=timedelta(minutes=40)),
        asking(3, by=3, group=LIGHT, waited=timedelta(minutes=5)),
        asking(4, by=4, group=B1, waited=timedelta(minutes=20)),
    ]
    ordered = priorities(queued, usage, NOW, FAIR)
    assert [p.request_id.int - 10_000 for p in ordered] == [4, 3, 1, 2]
    assert [p.org_waited for p in ordered] == [
        timedelta(minutes=20),
        timedelta(minutes=50),
        timedelta(minutes=40),
        timedelta(minutes=5),
    ]
    assert ordered[0].org_value == pytest.approx(20 / 60 - 3.0 / 2.0)
    assert ordered[1].org_value == pytest.approx(50 / 60 - 3.0)
    ahead = why_ahead(queued, ordered)
    assert ahead[uuid.UUID(int=10_003)] == Ahead(1, 1, {"priority": 1})


@settings(max_examples=150, deadline=None)
@given(cards_strategy(), queue_strategy(), usage_strategy())
def test_dequeue_walks_the_queue_in_the_order_priorities_give(
    cards: list[CardSnapshot], queued: list[QueuedRequest], usage: Usage
) -> None:
    """Nobody can pay, so nothing is admitted and usage never moves: the walk asks about each
    request that fits in `priorities`' order."""
    asked: list[uuid.UUID] = []

    def refuse(q: QueuedRequest) -> bool:
        asked.append(q.id)
        return False

    many = [card(100 + n) for n in range(len(queued))]
    dequeue(CapacitySnapshot((*cards, *many)), queued, NOW, usage, refuse, FAIR)
    assert asked == [p.request_id for p in priorities(queued, usage, NOW, FAIR)]


@st.composite
def others_strategy(draw: st.DrawFn) -> list[QueuedRequest]:
    """Waiting requests of organizations B and C, some booked."""
    return [
        replace(
            asking(
                500 + n,
                draw(st.sampled_from(TIERS)),
                by=draw(st.integers(10, 13)),
                group=draw(st.sampled_from([B1, B2, C1])),
                waited=timedelta(minutes=draw(st.integers(0, 200))),
                weight=draw(st.sampled_from([0.5, 1.0, 3.0])),
            ),
            booked=draw(st.integers(0, 9)) == 0,
        )
        for n in range(draw(st.integers(1, 10)))
    ]


@st.composite
def inside_a(
    draw: st.DrawFn, n: int
) -> tuple[list[uuid.UUID], list[float], dict[uuid.UUID, float]]:
    """What organization A's admins may change: which of its groups each of its `n` requests
    is for, their weights, and so the usage of A's groups (A's own stays the sum before)."""
    groups = [draw(st.sampled_from(A_GROUPS)) for _ in range(n)]
    weights = [draw(st.sampled_from([0.001, 0.5, 1.0, 7.0, 1000.0])) for _ in range(n)]
    used = {g: draw(st.floats(0, 6)) for g in A_GROUPS}
    return groups, weights, used


@settings(max_examples=200, deadline=None)
@given(
    others_strategy(),
    st.lists(
        st.tuples(st.integers(0, 200), st.integers(1, 4), st.sampled_from(TIERS), st.booleans()),
        max_size=8,
    ),
    st.dictionaries(st.integers(1, 13), st.floats(0, 4), max_size=6),
    st.tuples(st.floats(0, 8), st.floats(0, 8), st.floats(0, 8)),
    st.tuples(*(st.sampled_from([0.5, 1.0, 2.0]) for _ in range(3))),
    st.data(),
)
def test_nothing_inside_one_organization_moves_another_organizations_requests(
    others: list[QueuedRequest],
    theirs: list[tuple[int, int, str, bool]],
    users: dict[int, float],
    org_usage: tuple[float, float, float],
    org_weights: tuple[float, float, float],
    data: st.DataObject,
) -> None:
    """However organization A splits its members into groups and weighs them, every request of
    B and C keeps its priority, its place among them, and how many of A's requests are ahead:
    A moves only as a whole, by its use and its `org_weight` (a super admin's)."""

    def order(inside: tuple[list[uuid.UUID], list[float], dict[uuid.UUID, float]]) -> object:
        groups, weights, used = inside
        mine = [
            replace(
                asking(n, tier, by=by, group=groups[n], waited=timedelta(minutes=minutes)),
                weight=weights[n],
                booked=booked,
            )
            for n, (minutes, by, tier, booked) in enumerate(theirs)
        ]
        orgs = {B1: ORG_B, B2: ORG_B, C1: ORG_C, **dict.fromkeys(A_GROUPS, ORG_A)}
        tenants = Tenants(orgs, dict(zip((ORG_A, ORG_B, ORG_C), org_weights, strict=True)))
        group_usage = {B1: 1.0, B2: 0.25, C1: 2.0, **used}
        usage = Usage(
            {user(u): v for u, v in users.items()},
            group_usage,
            dict(zip((ORG_A, ORG_B, ORG_C), org_usage, strict=True)),
            tenants,
        )
        queued = [*mine, *others]
        ordered = priorities(queued, usage, NOW, FAIR)
        ahead = why_ahead(queued, ordered)
        kept = {q.id for q in others}
        # A's requests as one, the others each with their priority and what is ahead of them.
        return [
            (p, ahead[p.request_id].requests, dict(ahead[p.request_id].reasons))
            if p.request_id in kept
            else "A"
            for p in ordered
        ]

    first = order(data.draw(inside_a(len(theirs))))
    assert first == order(data.draw(inside_a(len(theirs))))
