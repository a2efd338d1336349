"""Bookings of capacity: examples with whole results, and a property per rule checked against a
brute-force model that looks at every moment where anything starts or ends."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gshare.capacity.reservations import (
    MAX_POOLS,
    MIG,
    Booking,
    Conflict,
    Decision,
    Fits,
    Free,
    Resource,
    Window,
    bookable,
    booked_at,
    card_hours_by_week,
    cards_for,
    check,
    free_capacity,
    occurrences,
    over_quota,
    pools,
    span,
    week_of,
)

WEEK = timedelta(days=7)
MONDAY = datetime(2026, 2, 16, tzinfo=UTC)  # the first day of a semester
A100 = Resource("NVIDIA-A100-SXM4-80GB")
A100_MIG = Resource("NVIDIA-A100-SXM4-80GB", MIG, "3g.40gb")
NEW_ID = uuid.UUID(int=1)


def at(day: int, hour: int, minute: int = 0) -> datetime:
    """`day` days after the semester's first Monday, at `hour`:`minute` UTC."""
    return MONDAY + timedelta(days=day, hours=hour, minutes=minute)


def booking(
    n: int,
    starts_at: datetime,
    ends_at: datetime,
    amount: int = 1,
    *,
    weekly_until: datetime | None = None,
    resource: Resource = A100,
    card_units: float = 1.0,
) -> Booking:
    return Booking(
        uuid.UUID(int=n), resource, amount, Window(starts_at, ends_at), weekly_until, card_units
    )


# ---- examples ------------------------------------------------------------------------------


def test_bookings_back_to_back_at_noon_do_not_overlap() -> None:
    morning = booking(2, at(0, 10), at(0, 12), 2)
    afternoon = booking(NEW_ID.int, at(0, 12), at(0, 14), 2)
    assert not morning.first.overlaps(afternoon.first)
    assert check(2, [morning], afternoon) == Fits()
    # A quarter of an hour earlier, it starts while the morning's two cards are held.
    early = booking(NEW_ID.int, at(0, 11, 45), at(0, 14), 2)
    assert check(2, [morning], early) == Conflict(at(0, 11, 45), 2, 2, 2)
    # The other way round: a booking starting at the end of one occurrence of a weekly booking
    # does not overlap it either.
    later = booking(NEW_ID.int, at(0, 10), at(0, 12), 2, weekly_until=at(0, 10) + 2 * WEEK)
    assert check(2, [booking(3, at(0, 12), at(0, 14), 2)], later) == Fits()


def test_a_handover_at_noon_inside_a_booking_holds_the_same_cards() -> None:
    new = booking(NEW_ID.int, at(0, 10), at(0, 14), 1)
    after = booking(2, at(0, 12), at(0, 13), 2)
    before = booking(3, at(0, 10), at(0, 12), 2)
    assert check(3, [after, before], new) == Fits()
    assert check(2, [after, before], new) == Conflict(at(0, 10), 1, 2, 2)


def test_a_semester_of_tuesdays_conflicts_only_in_week_seven_at_that_occurrence_start() -> None:
    # Tuesdays 10:00-12:00 for 16 weeks: the last start is 15 weeks after the first.
    tuesdays = booking(NEW_ID.int, at(1, 10), at(1, 12), 3, weekly_until=at(1, 11) + 15 * WEEK)
    assert len(occurrences(tuesdays)) == 16
    # Every Tuesday 08:00-10:00, all four cards: back to back with the new booking every week.
    mornings = booking(2, at(1, 8), at(1, 10), 4, weekly_until=at(1, 8) + 20 * WEEK)
    # In week 7 only, two cards from 09:30 to 10:30, across the start of that Tuesday's booking.
    week_seven = booking(3, at(1, 9, 30) + 6 * WEEK, at(1, 10, 30) + 6 * WEEK, 2)
    # Every other week of the semester, one card 11:00-13:00, which fits beside three.
    late = booking(4, at(1, 11), at(1, 13), 1, weekly_until=at(1, 11) + 15 * WEEK)
    assert check(4, [mornings, late], tuesdays) == Fits()
    assert check(4, [mornings, week_seven, late], tuesdays) == Conflict(
        at(1, 10) + 6 * WEEK, 3, 2, 4
    )


def test_a_conflict_inside_an_occurrence_is_at_the_other_booking_start() -> None:
    tuesdays = booking(NEW_ID.int, at(1, 10), at(1, 12), 3, weekly_until=at(1, 10) + 15 * WEEK)
    inside = booking(2, at(1, 11, 15) + 6 * WEEK, at(1, 11, 30) + 6 * WEEK, 2)
    assert check(4, [inside], tuesdays) == Conflict(at(1, 11, 15) + 6 * WEEK, 3, 2, 4)


def test_a_booking_larger_than_the_capacity_conflicts_at_its_first_start() -> None:
    weekly = booking(NEW_ID.int, at(2, 9), at(2, 17), 5, weekly_until=at(2, 9) + 4 * WEEK)
    assert check(4, [], weekly) == Conflict(at(2, 9), 5, 0, 4)
    # What others hold at that moment is reported too.
    held = booking(2, at(2, 8), at(2, 10), 1)
    assert check(4, [held], weekly) == Conflict(at(2, 9), 5, 1, 4)


def test_a_conflict_reports_everything_booked_at_its_moment() -> None:
    new = booking(NEW_ID.int, at(0, 10), at(0, 12), 1)
    two = booking(2, at(0, 11), at(0, 12), 2)
    three = booking(3, at(0, 11), at(0, 13), 3)
    assert check(2, [two, three], new) == Conflict(at(0, 11), 1, 5, 2)


def test_other_resources_and_the_booking_itself_do_not_count() -> None:
    new = booking(NEW_ID.int, at(0, 10), at(0, 12), 2)
    mig = booking(2, at(0, 9), at(0, 13), 7, resource=A100_MIG)
    before_its_edit = booking(NEW_ID.int, at(0, 10), at(0, 12), 2)
    assert check(2, [mig, before_its_edit], new) == Fits()


def test_overlapping_occurrences_of_one_booking_each_count() -> None:
    # Eight days long, every week: the second occurrence starts a day before the first ends.
    long = booking(NEW_ID.int, at(0, 0), at(8, 0), 2, weekly_until=at(7, 0) + WEEK)
    assert check(4, [], long) == Fits()
    assert check(3, [], long) == Conflict(at(7, 0), 2, 2, 3)
    assert booked_at([long], A100, at(7, 12)) == 4
    assert free_capacity(4, [long], A100, Window(at(6, 0), at(9, 0))) == [
        Free(Window(at(6, 0), at(7, 0)), 2, 2),
        Free(Window(at(7, 0), at(8, 0)), 4, 0),
        Free(Window(at(8, 0), at(9, 0)), 2, 2),
    ]


def test_a_weekly_until_at_or_before_the_first_start_books_the_first_window_only() -> None:
    once = booking(2, at(0, 10), at(0, 12), 2, weekly_until=at(0, 10))
    assert occurrences(once) == [once.first]
    # Asked from inside the window, the first occurrence is still there.
    assert occurrences(once, Window(at(0, 11), at(0, 13))) == [once.first]
    new = booking(NEW_ID.int, at(0, 11), at(0, 13), 1)
    assert check(2, [once], new) == Conflict(at(0, 11), 1, 2, 2)


def test_occurrences_stop_before_weekly_until_and_are_filtered_by_overlap() -> None:
    weekly = booking(2, at(3, 14), at(3, 16), weekly_until=at(3, 14) + 2 * WEEK)
    assert occurrences(weekly) == [
        Window(at(3, 14), at(3, 16)),
        Window(at(3, 14) + WEEK, at(3, 16) + WEEK),
    ]
    # A window ending at an occurrence's start, or starting at its end, does not overlap it.
    assert occurrences(weekly, Window(at(3, 16), at(3, 14) + WEEK)) == []
    assert occurrences(weekly, Window(at(3, 15), at(3, 15) + WEEK)) == occurrences(weekly)
    assert span(weekly) == Window(at(3, 14), at(3, 16) + WEEK)


def test_booked_at_sums_what_is_held_at_that_moment() -> None:
    bookings = [
        booking(2, at(0, 10), at(0, 12), 2),
        booking(3, at(0, 12), at(0, 14), 3),
        booking(4, at(0, 11), at(0, 13), 4, resource=A100_MIG),
    ]
    assert booked_at(bookings, A100, at(0, 11, 59)) == 2
    assert booked_at(bookings, A100, at(0, 12)) == 3
    assert booked_at(bookings, A100_MIG, at(0, 12)) == 4
    assert booked_at(bookings, A100, at(0, 14)) == 0


def test_free_capacity_steps_merge_equal_neighbours() -> None:
    bookings = [
        booking(2, at(0, 8), at(0, 12), 2),  # begins before the view
        booking(3, at(0, 12), at(0, 14), 2),  # the same amount straight after: one step
        booking(4, at(0, 14), at(0, 15), 1),
        booking(5, at(0, 14), at(0, 15), 5),  # more than is left: free goes below zero
        booking(6, at(0, 9), at(0, 20), 3, resource=A100_MIG),
    ]
    assert free_capacity(4, bookings, A100, Window(at(0, 9), at(0, 16))) == [
        Free(Window(at(0, 9), at(0, 14)), 2, 2),
        Free(Window(at(0, 14), at(0, 15)), 6, -2),
        Free(Window(at(0, 15), at(0, 16)), 0, 4),
    ]
    assert free_capacity(4, [], A100, Window(at(0, 9), at(0, 16))) == [
        Free(Window(at(0, 9), at(0, 16)), 0, 4)
    ]


def test_card_hours_by_week_splits_a_window_across_monday_midnight_utc() -> None:
    # Sunday 22:00 to Monday 03:00 UTC, written in UTC+2: two hours in one week, three in the next.
    plus_two = timezone(timedelta(hours=2))
    night = booking(
        2,
        at(6, 22).astimezone(plus_two),
        at(7, 3).astimezone(plus_two),
        2,
        card_units=0.5,
    )
    assert card_hours_by_week([night]) == {MONDAY: 2.0, MONDAY + WEEK: 3.0}
    assert week_of(at(7, 1).astimezone(plus_two)) == MONDAY + WEEK


def test_over_quota_reports_the_first_week_over_with_its_total() -> None:
    # Ten card-hours a week for four weeks: Wednesdays 10:00-15:00 on two cards.
    new = booking(NEW_ID.int, at(2, 10), at(2, 15), 2, weekly_until=at(2, 10) + 4 * WEEK)
    busy_week_three = booking(2, at(15, 8), at(15, 20), 2, resource=A100_MIG, card_units=0.5)
    busy_week_two = booking(3, at(8, 0), at(9, 6), 1)  # 30 card-hours
    existing = [busy_week_three, busy_week_two]
    assert over_quota(existing, new, 35.0) == (MONDAY + WEEK, 40.0)
    assert over_quota(existing, new, 40.0) is None
    # The booking as it was before an edit is not counted beside it.
    assert over_quota([booking(NEW_ID.int, at(8, 0), at(9, 6), 1)], new, 10.0) is None


def test_cards_for_rounds_up_to_whole_cards() -> None:
    assert [cards_for(n, 4) for n in (0, 1, 4, 5, 8, 9)] == [0, 1, 1, 2, 2, 3]
    assert cards_for(3, 1) == 3
    with pytest.raises(ValueError):
        cards_for(-1, 4)
    with pytest.raises(ValueError):
        cards_for(1, 0)


# ---- properties against a brute-force model -------------------------------------------------

STEP = timedelta(minutes=15)
ZONES = (UTC, timezone(timedelta(hours=2)), timezone(timedelta(hours=-5)))
RESOURCES = (A100, A100_MIG)


@st.composite
def bookings(draw: st.DrawFn, n: int, near: datetime | None = None) -> Booking:
    """A booking on a 15-minute grid within 3 weeks or, given `near`, starting within 4 hours of
    it some weeks before or after, so that edges often meet. Some weekly windows last longer
    than a week, so their occurrences overlap."""
    if near is None:
        day, slot = draw(st.integers(0, 20)), draw(st.integers(0, 95))
        starts_at = MONDAY + timedelta(days=day) + slot * STEP
    else:
        starts_at = near + draw(st.integers(-16, 16)) * STEP + draw(st.integers(-1, 2)) * WEEK
    steps = draw(st.one_of(st.integers(1, 16), st.sampled_from([96, 672, 700, 1000])))
    starts_at = starts_at.astimezone(draw(st.sampled_from(ZONES)))
    weekly = draw(st.booleans())
    until = starts_at + draw(st.integers(-8, 3 * 672)) * STEP if weekly else None
    return Booking(
        uuid.UUID(int=n),
        draw(st.sampled_from(RESOURCES)),
        draw(st.integers(1, 4)),
        Window(starts_at, starts_at + steps * STEP),
        until,
        draw(st.sampled_from([1.0, 0.5, 0.25])),
    )


@st.composite
def others_and_new(draw: st.DrawFn) -> tuple[list[Booking], Booking]:
    """A new booking, and up to 8 others, most of them starting near it."""
    new = draw(bookings(NEW_ID.int))
    count = draw(st.integers(0, 8))
    near = st.sampled_from([new.first.starts_at, None, new.first.starts_at])
    others = [draw(bookings(n + 2, draw(near))) for n in range(count)]
    return others, new


windows_on_grid = st.builds(
    lambda start, steps: Window(MONDAY + start * STEP, MONDAY + (start + steps) * STEP),
    st.integers(-96, 4 * 672),
    st.integers(0, 2 * 672),
)


def model_windows(b: Booking) -> list[Window]:
    """Occurrence k is the first window moved k weeks; after the first, only while it starts
    before `weekly_until`."""
    found: list[Window] = []
    k = 0
    while True:
        starts_at = b.first.starts_at + k * WEEK
        if k > 0 and (b.weekly_until is None or starts_at >= b.weekly_until):
            return found
        found.append(Window(starts_at, b.first.ends_at + k * WEEK))
        k += 1


def model_booked(bookings: list[Booking], resource: Resource, moment: datetime) -> int:
    return sum(
        b.amount
        for b in bookings
        if b.resource == resource
        for w in model_windows(b)
        if w.starts_at <= moment < w.ends_at
    )


def model_check(capacity: int, others: list[Booking], new: Booking) -> Decision:
    """Every window is half-open, so the amount booked only changes at a window's edge and holds
    until the next one: looking at each edge, in order, sees every moment there is. The first
    edge inside an occurrence of `new` where what is held exceeds the capacity is the conflict."""
    mine = [b for b in others if b.resource == new.resource and b.id != new.id]
    edges = sorted(
        {m for b in [*mine, new] for w in model_windows(b) for m in (w.starts_at, w.ends_at)}
    )
    for moment in edges:
        held = model_booked([new], new.resource, moment)
        booked = model_booked(mine, new.resource, moment)
        if held and booked + held > capacity:
            return Conflict(moment, new.amount, booked + held - new.amount, capacity)
    return Fits()


def model_free(
    capacity: int, bookings: list[Booking], resource: Resource, within: Window
) -> list[Free]:
    edges = sorted(
        {within.starts_at}
        | {
            m
            for b in bookings
            for w in model_windows(b)
            for m in (w.starts_at, w.ends_at)
            if within.starts_at < m < within.ends_at
        }
    )
    steps: list[Free] = []
    for start, end in zip(edges, [*edges[1:], within.ends_at], strict=True):
        if start >= end:
            continue
        booked = model_booked(bookings, resource, start)
        if steps and steps[-1].booked == booked:
            start = steps.pop().window.starts_at
        steps.append(Free(Window(start, end), booked, capacity - booked))
    return steps


def model_card_hours(bookings: list[Booking]) -> dict[datetime, float]:
    weeks: dict[datetime, float] = {}
    for b in bookings:
        for w in model_windows(b):
            monday = week_of(w.starts_at)
            while monday < w.ends_at:
                part = min(w.ends_at, monday + WEEK) - max(w.starts_at, monday)
                if part > timedelta(0):
                    hours = part.total_seconds() / 3600 * b.amount * b.card_units
                    weeks[monday] = weeks.get(monday, 0.0) + hours
                monday += WEEK
    return weeks


@settings(max_examples=300, deadline=None)
@given(others_and_new(), st.integers(-2, 10), st.booleans())
def test_check_finds_the_first_moment_over_capacity(
    drawn: tuple[list[Booking], Booking], spare: int, editing: bool
) -> None:
    others, new = drawn
    capacity = max(0, new.amount + spare)
    if editing:  # the booking as it was before an edit is among the others
        others = [*others, booking(NEW_ID.int, new.first.starts_at, new.first.ends_at, 4)]
    decision = check(capacity, others, new)
    assert decision == model_check(capacity, others, new)
    if isinstance(decision, Conflict):
        assert any(w.starts_at <= decision.at < w.ends_at for w in occurrences(new))


@settings(max_examples=150, deadline=None)
@given(others_and_new(), windows_on_grid, st.integers(0, 10))
def test_free_capacity_matches_what_is_booked_at_every_moment(
    drawn: tuple[list[Booking], Booking], within: Window, capacity: int
) -> None:
    everything = [*drawn[0], drawn[1]]
    for resource in RESOURCES:
        steps = free_capacity(capacity, everything, resource, within)
        assert steps == model_free(capacity, everything, resource, within)
        # Consecutive, covering the whole view, each different from the one before.
        assert [s.window.starts_at for s in steps[1:]] == [s.window.ends_at for s in steps[:-1]]
        for before, after in itertools.pairwise(steps):
            assert before.booked != after.booked


@settings(max_examples=150, deadline=None)
@given(bookings(2), windows_on_grid)
def test_occurrences_repeat_weekly_before_the_end_and_filter_by_overlap(
    b: Booking, within: Window
) -> None:
    every = occurrences(b)
    assert every == model_windows(b)
    assert every[0] == b.first
    for before, after in itertools.pairwise(every):
        assert after.starts_at - before.starts_at == WEEK
        assert b.weekly_until is not None
        assert after.starts_at < b.weekly_until
    assert occurrences(b, within) == [w for w in every if w.overlaps(within)]
    assert span(b) == Window(every[0].starts_at, every[-1].ends_at)


@settings(max_examples=100, deadline=None)
@given(others_and_new(), st.integers(-96, 4 * 672))
def test_booked_at_counts_every_occurrence_holding_the_moment(
    drawn: tuple[list[Booking], Booking], step: int
) -> None:
    everything = [*drawn[0], drawn[1]]
    moment = MONDAY + step * STEP
    for resource in RESOURCES:
        assert booked_at(everything, resource, moment) == model_booked(everything, resource, moment)


@settings(max_examples=100, deadline=None)
@given(others_and_new(), st.floats(0, 400, allow_nan=False))
def test_card_hours_add_up_by_monday_and_the_first_week_over_quota_is_found(
    drawn: tuple[list[Booking], Booking], quota: float
) -> None:
    others, new = drawn
    weeks = card_hours_by_week(others)
    expected = model_card_hours(others)
    assert set(weeks) == set(expected)
    for monday, hours in weeks.items():
        assert monday == week_of(monday)
        assert monday.weekday() == 0
        assert hours == pytest.approx(expected[monday])
    total = sum(w.hours * b.amount * b.card_units for b in others for w in occurrences(b))
    assert sum(weeks.values()) == pytest.approx(total)

    mine, theirs = model_card_hours([new]), model_card_hours(others)
    first_over = next(
        (
            (monday, mine[monday] + theirs.get(monday, 0.0))
            for monday in sorted(mine)
            if mine[monday] + theirs.get(monday, 0.0) > quota + 1e-9
        ),
        None,
    )
    found = over_quota(others, new, quota)
    if first_over is None:
        assert found is None
    else:
        assert found is not None
        assert found[0] == first_over[0]
        assert found[1] == pytest.approx(first_over[1])


def test_requests_within_a_running_booking_are_the_longest_waiting_up_to_the_room_left() -> None:
    from gshare.capacity.reservations import Running, Waiting, within_bookings

    lab, other = uuid.UUID(int=1), uuid.UUID(int=2)
    t0 = datetime(2026, 3, 3, 10, 0, tzinfo=UTC)
    waiting = [
        Waiting(uuid.UUID(int=10 + n), group, tier, t0 + timedelta(minutes=n))
        for n, (group, tier) in enumerate(
            [(lab, "q"), (lab, "q"), (other, "q"), (lab, "x"), (lab, "q"), (lab, "q")]
        )
    ]
    short = Running(uuid.UUID(int=100), lab, "q", 2, timedelta(minutes=2))
    long = Running(uuid.UUID(int=101), lab, "q", 2, timedelta(minutes=10))
    # 4 booked of tier q, 1 held already: the 3 longest waiting of the lab's q requests,
    # with the shorter notice of the two bookings; not another group's, not another tier's.
    found = within_bookings(waiting, [long, short], {(lab, "q"): 1})
    assert found == {uuid.UUID(int=10): short, uuid.UUID(int=11): short, uuid.UUID(int=14): short}
    assert within_bookings(waiting, [short], {(lab, "q"): 2}) == {}
    assert within_bookings(waiting, [], {}) == {}


def test_the_earliest_sessions_of_a_group_and_tier_are_within_its_running_bookings() -> None:
    from gshare.capacity.reservations import Running, sessions_within

    lab, other = uuid.UUID(int=1), uuid.UUID(int=2)
    t0 = datetime(2026, 3, 3, 10, 0, tzinfo=UTC)
    sessions = [
        (uuid.UUID(int=10 + n), group, tier, t0 + timedelta(minutes=m))
        for n, (group, tier, m) in enumerate(
            [(lab, "q", 5), (lab, "q", 1), (lab, "q", 9), (other, "q", 0), (lab, "x", 0)]
        )
    ]
    booked = [Running(uuid.UUID(int=100), lab, "q", 2, timedelta(minutes=2))]
    assert sessions_within(sessions, booked) == {uuid.UUID(int=11), uuid.UUID(int=10)}
    assert sessions_within(sessions, []) == set()


# ---- cards not everyone may use --------------------------------------------------------------

KINDS = ("shared", "hospital", "sandbox")


def test_pools_join_mine_with_the_reaches_that_hang_together_with_it() -> None:
    mine = frozenset({"shared"})
    reaches = [
        mine,
        frozenset({"shared", "hospital"}),
        frozenset({"hospital", "sandbox"}),  # meets mine through the hospital's reach
        frozenset({"course"}),  # meets none: the course's own business
        frozenset(),
    ]
    assert pools(mine, reaches) == [
        frozenset({"shared"}),
        frozenset({"shared", "hospital"}),
        frozenset({"shared", "hospital", "sandbox"}),
    ]
    # A dozen tenants' reaches that all meet mine: the smallest MAX_POOLS unions.
    many = [frozenset({"shared", f"tenant-{n}"}) for n in range(12)]
    found = pools(mine, many)
    assert len(found) == MAX_POOLS
    assert found[0] == mine
    assert all(len(a) <= len(b) for a, b in itertools.pairwise(found))


def test_cards_lost_under_another_tenants_bookings_do_not_refuse_mine() -> None:
    """A dedicated tenant booked both its cards, and one of them broke: its pool is over, but
    a booking of the shared cards, which it cannot use, still fits."""
    window = (at(0, 9), at(0, 11))
    theirs, mine = frozenset({"hospital"}), frozenset({"shared"})
    reach = {uuid.UUID(int=2): theirs}
    sizes = {"hospital": 1, "shared": 4}
    others = [booking(2, *window, 2)]
    for pool in pools(mine, reach.values()):
        within = [b for b in others if reach[b.id] <= pool]
        size = sum(sizes[k] for k in pool)
        assert isinstance(check(size, within, booking(1, *window, 4)), Fits)


def _assignable(demands: list[tuple[int, frozenset[str]]], sizes: dict[str, int]) -> bool:
    """Whether each demand can be met from the kinds it reaches, by trying every split."""
    if not demands:
        return True
    (amount, reach), rest = demands[0], demands[1:]
    kinds = sorted(reach)

    def split(i: int, left: int, free: dict[str, int]) -> bool:
        if left == 0:
            return _assignable(rest, free)
        if i == len(kinds):
            return False
        kind = kinds[i]
        return any(
            split(i + 1, left - take, free | {kind: free[kind] - take})
            for take in range(min(left, free[kind]), -1, -1)
        )

    return split(0, amount, sizes)


@given(
    st.dictionaries(st.sampled_from(KINDS), st.integers(0, 3), min_size=1),
    st.lists(
        st.tuples(st.integers(1, 3), st.frozensets(st.sampled_from(KINDS), min_size=1)),
        max_size=4,
    ),
    st.tuples(st.integers(1, 3), st.frozensets(st.sampled_from(KINDS), min_size=1)),
)
@settings(max_examples=300, deadline=None)
def test_a_booking_fits_the_pools_exactly_when_every_booking_can_be_given_cards(
    sizes: dict[str, int],
    others: list[tuple[int, frozenset[str]]],
    new: tuple[int, frozenset[str]],
) -> None:
    """Bookings of the same window, each reaching some kinds of card: checking the new one in
    every pool (Hall's condition) accepts it exactly when all of them can be given cards."""
    sizes = {k: sizes.get(k, 0) for k in KINDS}
    window = (at(0, 9), at(0, 11))
    if not _assignable(others, sizes):
        return  # refused before: nothing the new booking could change
    rows = [booking(n + 2, *window, amount) for n, (amount, _) in enumerate(others)]
    reach = {b.id: r for b, (_, r) in zip(rows, others, strict=True)}
    mine = new[1]
    fits = all(
        isinstance(
            check(
                sum(sizes[k] for k in pool),
                [b for b in rows if reach[b.id] <= pool],
                booking(1, *window, new[0]),
            ),
            Fits,
        )
        for pool in pools(mine, reach.values())
    )
    assert fits == _assignable([*others, new], sizes)


def test_what_is_bookable_is_the_least_any_shared_pool_has_free() -> None:
    day = Window(at(0, 8), at(0, 12))
    # Four cards of mine; a pool of six I share with someone who books five from 9 to 10.
    theirs = booking(2, at(0, 9), at(0, 10), 5)
    mine = booking(3, at(0, 10), at(0, 11), 1)
    steps = bookable([(4, [mine]), (6, [mine, theirs])], A100, day, 4)
    assert [(s.window.starts_at.hour, s.window.ends_at.hour, s.booked, s.free) for s in steps] == [
        (8, 9, 0, 4),
        (9, 10, 3, 1),
        (10, 11, 1, 3),
        (11, 12, 0, 4),
    ]
