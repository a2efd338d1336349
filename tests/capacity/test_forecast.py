"""Start forecasts: built scenarios with exact answers, agreement with the real queue turn, and
the self-correction from outcomes."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from gshare.capacity.forecast import (
    MIN_OUTCOMES,
    Correction,
    Estimate,
    ForecastSettings,
    History,
    Outcome,
    RunningSession,
    corrected,
    correction,
    forecast,
)
from gshare.capacity.isolation import Isolation, NodeTraits
from gshare.capacity.placement import CapacitySnapshot, CardSnapshot, MigInstance, PlacementRequest
from gshare.capacity.queue import QueuedRequest, Usage, dequeue
from tests.capacity.test_queue import (
    FAIR,
    HEAVY,
    MIB,
    MODEL,
    NOW,
    asking,
    card,
    cards_strategy,
    cid,
    queue_strategy,
    usage_strategy,
    user,
)

TICK = timedelta(seconds=15)
ONE = ForecastSettings(draws=1, tick=TICK)
EXCLUSIVE = f"{MODEL}:exclusive"
QUARTER = f"{MODEL}:1/4"


def running(card_n: int, tier: str, ran: timedelta, *, by: int = 9, **kw: object) -> RunningSession:
    return RunningSession(cid(card_n), tier, user(by), NOW - ran, **kw)  # type: ignore[arg-type]


def lengths(tier: str, *minutes: int) -> History:
    return History({tier: [m * 60.0 for m in minutes]})


def test_a_request_that_fits_now_is_forecast_to_start_now() -> None:
    q = asking(1, "1/4")
    estimates = forecast(CapacitySnapshot((card(1),)), [], [q], Usage(), NOW, History())
    assert estimates == {q.id: Estimate(NOW, NOW)}


def test_with_one_length_seen_the_queue_plays_out_exactly() -> None:
    """Every session lasts 60 minutes; the one running has run 20: the first waiter starts in
    40 minutes, the second an hour after that."""
    first, second = asking(1, "exclusive"), asking(2, "exclusive", waited=timedelta(minutes=-1))
    estimates = forecast(
        CapacitySnapshot((card(1, EXCLUSIVE, 0),)),
        [running(1, EXCLUSIVE, timedelta(minutes=20))],
        [first, second],
        Usage(),
        NOW,
        lengths(EXCLUSIVE, 60),
        FAIR,
        ONE,
    )
    assert estimates[first.id] == Estimate(NOW + timedelta(minutes=40), NOW + timedelta(minutes=40))
    assert estimates[second.id].likely == NOW + timedelta(minutes=100)


def test_a_session_under_notice_ends_by_its_deadline() -> None:
    q = asking(1, "exclusive")
    deadline = NOW + timedelta(minutes=10)
    estimates = forecast(
        CapacitySnapshot((card(1, EXCLUSIVE, 0),)),
        [running(1, EXCLUSIVE, timedelta(minutes=5), ends_by=deadline)],
        [q],
        Usage(),
        NOW,
        lengths(EXCLUSIVE, 600),
        FAIR,
        ONE,
    )
    assert estimates[q.id].likely == deadline


def test_a_session_longer_than_any_seen_is_still_expected_to_end() -> None:
    q = asking(1, "exclusive")
    estimates = forecast(
        CapacitySnapshot((card(1, EXCLUSIVE, 0),)),
        [running(1, EXCLUSIVE, timedelta(hours=5))],
        [q],
        Usage(),
        NOW,
        lengths(EXCLUSIVE, 60),
    )
    likely, surely = estimates[q.id].likely, estimates[q.id].surely
    assert likely is not None
    assert surely is not None
    assert NOW < likely <= surely


def test_the_owners_own_lengths_count_once_there_are_enough() -> None:
    """The tier's sessions last an hour, but this owner's last 10 minutes: the waiter behind
    the owner's session starts when the owner's would end."""
    q = asking(1, "exclusive")
    owner = user(9)
    history = History({EXCLUSIVE: [3600.0] * 20}, {(owner, EXCLUSIVE): [600.0] * 5})
    estimates = forecast(
        CapacitySnapshot((card(1, EXCLUSIVE, 0),)),
        [running(1, EXCLUSIVE, timedelta(minutes=1))],
        [q],
        Usage(),
        NOW,
        history,
        FAIR,
        ONE,
    )
    assert estimates[q.id].likely == NOW + timedelta(minutes=9)
    fewer = History({EXCLUSIVE: [3600.0] * 20}, {(owner, EXCLUSIVE): [600.0] * 4})
    estimates = forecast(
        CapacitySnapshot((card(1, EXCLUSIVE, 0),)),
        [running(1, EXCLUSIVE, timedelta(minutes=1))],
        [q],
        Usage(),
        NOW,
        fewer,
        FAIR,
        ONE,
    )
    assert estimates[q.id].likely == NOW + timedelta(minutes=59)


def test_a_booked_member_goes_first_and_a_held_card_serves_only_its_booking() -> None:
    booking = uuid.UUID(int=77)
    member = replace(asking(1, "exclusive"), booked=True)
    member = replace(member, request=replace(member.request, booking_id=booking))
    other = asking(2, "exclusive", waited=timedelta(minutes=30))
    snapshot = CapacitySnapshot(
        (card(1, EXCLUSIVE, 0), card(2, EXCLUSIVE, 0)), booked={cid(2): booking}
    )
    estimates = forecast(
        snapshot,
        [running(1, EXCLUSIVE, timedelta(0)), running(2, EXCLUSIVE, timedelta(minutes=50))],
        [member, other],
        Usage(),
        NOW,
        History({EXCLUSIVE: [60.0 * 60]}),
        FAIR,
        ONE,
    )
    # Card 2 frees first (it has run 50 of 60 minutes) and is held for the booking.
    assert estimates[member.id].likely == NOW + timedelta(minutes=10)
    assert estimates[other.id].likely == NOW + timedelta(minutes=60)


def test_a_request_tied_to_a_cluster_waits_for_a_card_there() -> None:
    there = uuid.UUID(int=55)
    q = asking(1, "exclusive")
    q = replace(q, request=replace(q.request, cluster_id=there))
    elsewhere = card(1)
    mine = replace(card(2, EXCLUSIVE, 0), cluster_id=there)
    estimates = forecast(
        CapacitySnapshot((elsewhere, mine)),
        [running(2, EXCLUSIVE, timedelta(minutes=30))],
        [q],
        Usage(),
        NOW,
        lengths(EXCLUSIVE, 60),
        FAIR,
        ONE,
    )
    assert estimates[q.id].likely == NOW + timedelta(minutes=30)


def test_a_dedicated_tenant_waits_for_its_own_card_and_others_never_count_it() -> None:
    tenant = uuid.UUID(int=77)
    own = replace(card(2, EXCLUSIVE, 0), traits=NodeTraits(dedicated_to=tenant))
    shared = replace(card(1, EXCLUSIVE, 0))
    mine = asking(1, "exclusive")
    mine = replace(
        mine, request=replace(mine.request, isolation=Isolation("dedicated", frozenset({tenant})))
    )
    other = asking(2, "exclusive", by=8, waited=timedelta(minutes=5))  # ahead in the queue
    estimates = forecast(
        CapacitySnapshot((shared, own)),
        [
            running(1, EXCLUSIVE, timedelta(minutes=10)),
            running(2, EXCLUSIVE, timedelta(minutes=30)),
        ],
        [mine, other],
        Usage(),
        NOW,
        lengths(EXCLUSIVE, 60),
        FAIR,
        ONE,
    )
    # The tenant waits for its own card (ending in 30 minutes), the other for the shared one
    # (ending in 50), though the tenant's frees first.
    assert estimates[mine.id].likely == NOW + timedelta(minutes=30)
    assert estimates[other.id].likely == NOW + timedelta(minutes=50)


def test_a_mig_request_starts_when_an_instance_of_its_profile_frees() -> None:
    profile = "3g.40gb"
    mig_card = CardSnapshot(
        cid(1),
        cid(0),
        "node-0",
        MODEL,
        MIB,
        1,
        pool="mig",
        mig_instances=(MigInstance(profile, 0, occupied=True), MigInstance("1g.10gb", 4)),
    )
    tier = f"{MODEL}:{profile}"
    q = asking(1)
    q = replace(
        q,
        request=PlacementRequest(q.id, tier, "mig", MODEL, 40960, 42, mig_profile=profile),
    )
    estimates = forecast(
        CapacitySnapshot((mig_card,)),
        [running(1, tier, timedelta(minutes=15), mig_profile=profile)],
        [q],
        Usage(),
        NOW,
        lengths(tier, 45),
        FAIR,
        ONE,
    )
    assert estimates[q.id].likely == NOW + timedelta(minutes=30)


def test_a_starving_exclusive_request_holds_a_card_as_the_queue_does() -> None:
    """Two quarter sessions share card 1, one ending in 10 minutes and one in 40; a stream of
    quarter requests waits behind a starving exclusive one. Without the hold the freed quarter
    slot would go to the next quarter request; with it, card 1 drains and the exclusive request
    starts in 40 minutes, before any quarter request."""
    starving = asking(1, "exclusive", waited=timedelta(hours=2))
    quarters = [asking(n, "1/4", by=n, group=HEAVY) for n in range(2, 6)]
    estimates = forecast(
        CapacitySnapshot((card(1, QUARTER, 0, 1),)),
        [running(1, QUARTER, timedelta(minutes=50)), running(1, QUARTER, timedelta(minutes=20))],
        [starving, *quarters],
        Usage(),
        NOW,
        lengths(QUARTER, 60),
        FAIR,
        ONE,
    )
    assert estimates[starving.id].likely == NOW + timedelta(minutes=40)
    for q in quarters:
        likely = estimates[q.id].likely
        assert likely is not None
        assert likely > NOW + timedelta(minutes=40)


def test_the_p50_is_never_after_the_p90_and_the_same_seed_gives_the_same_forecast() -> None:
    snapshot = CapacitySnapshot(tuple(card(n, QUARTER, 0, 1, 2, 3) for n in range(1, 4)))
    sessions = [
        running(n, QUARTER, timedelta(minutes=7 * n + s)) for n in range(1, 4) for s in range(4)
    ]
    queued = [asking(n, "1/4", by=n % 3, waited=timedelta(minutes=n)) for n in range(12)]
    history = lengths(QUARTER, 5, 20, 30, 45, 60, 90, 240)
    first = forecast(snapshot, sessions, queued, Usage(), NOW, history)
    assert first == forecast(snapshot, sessions, queued, Usage(), NOW, history)
    for e in first.values():
        assert e.likely is not None
        assert e.surely is not None
        assert NOW <= e.likely <= e.surely


@settings(max_examples=150, deadline=None)
@given(cards_strategy(), queue_strategy(), usage_strategy())
def test_what_starts_now_is_what_the_queue_turn_admits(
    cards: list[CardSnapshot], queued: list[QueuedRequest], usage: Usage
) -> None:
    """On the first turn the forecast and `dequeue` start the same requests: the same order,
    the same fits. Each request has its own user and group, so that `dequeue`'s entry
    penalties, which the forecast leaves out within a turn, change no order."""
    queued = [
        replace(q, user_id=uuid.UUID(int=3000 + n), group_id=uuid.UUID(int=4000 + n))
        for n, q in enumerate(queued)
    ]
    snapshot = CapacitySnapshot(tuple(cards))
    admitted = dequeue(snapshot, queued, NOW, usage, lambda _: True, FAIR).admitted
    estimates = forecast(snapshot, [], queued, usage, NOW, History(), FAIR, ONE)
    assert {q.id for q, _ in admitted} == {i for i, e in estimates.items() if e.likely == NOW}


def _outcomes(n: int, likely: float, surely: float, waited: float) -> list[Outcome]:
    return [Outcome(likely, surely, waited) for _ in range(n)]


def test_too_few_outcomes_correct_nothing() -> None:
    assert correction(_outcomes(MIN_OUTCOMES - 1, 100, 200, 900), TICK) == Correction()


def test_a_forecast_that_has_been_twice_too_short_is_doubled() -> None:
    fix = correction(_outcomes(MIN_OUTCOMES, 585, 985, 1185), TICK)
    assert fix == Correction(2.0, 1.2)
    estimate = Estimate(NOW + timedelta(seconds=585), NOW + timedelta(seconds=985))
    start_now = Estimate(NOW, NOW)
    out = corrected({cid(1): estimate, cid(2): start_now}, fix, NOW, TICK)
    assert out[cid(1)] == Estimate(NOW + timedelta(seconds=1185), NOW + timedelta(seconds=1185))
    assert out[cid(2)] == start_now


def test_the_p90_factor_is_the_conformal_quantile_of_the_outcomes() -> None:
    """Twenty outcomes whose waits were 1x to 20x their p90 (plus a tick each side): the
    factor is the ceil(0.9 * 21) = 19th smallest ratio."""
    pad = TICK.total_seconds()
    outcomes = [Outcome(100 - pad, 100 - pad, 100 * k - pad) for k in range(1, 21)]
    assert correction(outcomes, TICK).surely == 19.0


@given(st.floats(0, 10_000), st.floats(0, 10_000), st.floats(0.01, 50), st.floats(0.01, 50))
def test_a_corrected_p50_is_never_after_its_p90(
    likely: float, extra: float, f50: float, f90: float
) -> None:
    e = Estimate(NOW + timedelta(seconds=likely), NOW + timedelta(seconds=likely + extra))
    out = corrected({cid(1): e}, Correction(f50, f90), NOW, TICK)[cid(1)]
    assert out.likely is not None
    assert out.surely is not None
    assert NOW <= out.likely <= out.surely


def test_nothing_waiting_forecasts_nothing() -> None:
    assert forecast(CapacitySnapshot(()), [], [], Usage(), NOW, History()) == {}


def test_a_card_held_for_a_booking_takes_anyone_once_the_hold_ends() -> None:
    booking = uuid.UUID(int=78)
    other = asking(1, "exclusive")
    held_until = NOW + timedelta(minutes=15)
    snapshot = CapacitySnapshot(
        (card(1, EXCLUSIVE, 0), card(2)),
        booked={cid(2): booking},
        booked_until={cid(2): held_until},
    )
    estimates = forecast(
        snapshot,
        [running(1, EXCLUSIVE, timedelta(0))],
        [other],
        Usage(),
        NOW,
        lengths(EXCLUSIVE, 60),
        FAIR,
        ONE,
    )
    assert estimates[other.id].likely == held_until
