"""Time to check one weekly booking over a semester against 1,000 bookings of the same resource.

The new booking holds two cards every Tuesday 10:00-12:00 UTC for the 16 weeks of a semester.
Beside it are 1,000 bookings of the same cards: most of them one-offs of 1 to 8 hours on any
day of the semester, the rest weekly ones of 1 to 4 hours on a weekday, each lasting some
weeks of it. The capacity is exactly what the busiest moment of the new booking needs, so it
fits and every occurrence is examined to the end: the slowest case of `check`. Prints the
median and the worst of 200 checks (goal: worst at most 20 ms, with its ratio to the goal); a
missed goal exits 1. The baseline, run beside it, looks at every minute of every occurrence
and adds up what each other booking holds then (`booked_at`); both must decide alike, and the
ratio of their times is printed.

    .venv/bin/python benchmarks/reservations.py [--others 1000] [--repetitions 200] [--quick]

--quick runs 50 other bookings and 5 checks and checks no goal (make bench-smoke).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _goals import check_goal
from gshare.capacity.reservations import (
    Booking,
    Conflict,
    Decision,
    Fits,
    Resource,
    Window,
    booked_at,
    check,
    free_capacity,
    occurrences,
)

WORST_GOAL_MS = 20.0
WEEKS = 16
SEMESTER = datetime(2026, 2, 16, tzinfo=UTC)  # a Monday
WEEK = timedelta(days=7)
CARDS = Resource("NVIDIA-A100-SXM4-80GB")
WEEKLY_SHARE = 0.2


def others(count: int, rnd: random.Random) -> list[Booking]:
    found = []
    for n in range(count):
        if rnd.random() < WEEKLY_SHARE:
            first_week = rnd.randrange(6)
            weekday, hour = rnd.randrange(5), rnd.randrange(8, 19)
            starts_at = SEMESTER + first_week * WEEK + timedelta(days=weekday, hours=hour)
            length = timedelta(hours=rnd.randint(1, 4))
            until = SEMESTER + rnd.randint(first_week + 4, WEEKS) * WEEK
        else:
            day, quarter = rnd.randrange(WEEKS * 7), rnd.randrange(7 * 4, 20 * 4)
            starts_at = SEMESTER + timedelta(days=day, minutes=15 * quarter)
            length = timedelta(hours=rnd.randint(1, 8))
            until = None
        found.append(
            Booking(
                uuid.UUID(int=n + 2),
                CARDS,
                rnd.randint(1, 4),
                Window(starts_at, starts_at + length),
                until,
            )
        )
    return found


def naive(capacity: int, bookings: list[Booking], new: Booking) -> Decision:
    """Every minute of every occurrence, what every other booking holds then."""
    mine = [b for b in bookings if b.resource == new.resource and b.id != new.id]
    for window in occurrences(new):
        moment = window.starts_at
        while moment < window.ends_at:
            booked = booked_at(mine, new.resource, moment)
            if booked + new.amount > capacity:
                return Conflict(moment, new.amount, booked, capacity)
            moment += timedelta(minutes=1)
    return Fits()


def timed(capacity: int, bookings: list[Booking], new: Booking, repetitions: int) -> list[float]:
    each = []
    for _ in range(repetitions):
        started = time.perf_counter()
        decision = check(capacity, bookings, new)
        each.append(time.perf_counter() - started)
        if decision != Fits():
            raise SystemExit(f"the booking should fit at capacity {capacity}: {decision}")
    return each


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--others", type=int, default=1_000)
    parser.add_argument("--repetitions", type=int, default=200)
    parser.add_argument("--baseline-repetitions", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.others, args.repetitions, args.baseline_repetitions = 50, 5, 1

    rnd = random.Random(7)
    bookings = others(args.others, rnd)
    first_start = SEMESTER + timedelta(days=1, hours=10)
    new = Booking(
        uuid.UUID(int=1),
        CARDS,
        2,
        Window(first_start, first_start + timedelta(hours=2)),
        first_start + (WEEKS - 1) * WEEK + timedelta(hours=1),
    )
    windows = occurrences(new)
    busiest = max(step.booked for w in windows for step in free_capacity(0, bookings, CARDS, w))
    capacity = busiest + new.amount
    overlapping = sum(1 for b in bookings if any(occurrences(b, w) for w in windows))
    edges = 2 * sum(len(occurrences(b)) for b in bookings)

    each = timed(capacity, bookings, new, args.repetitions)
    median_ms, worst_ms = statistics.median(each) * 1000, max(each) * 1000

    one_less = check(capacity - 1, bookings, new)
    if not isinstance(one_less, Conflict) or naive(capacity - 1, bookings, new) != one_less:
        raise SystemExit(f"one card less should conflict alike both ways: {one_less}")
    baseline: list[float] = []
    for _ in range(args.baseline_repetitions):
        started = time.perf_counter()
        decision = naive(capacity, bookings, new)
        baseline.append(time.perf_counter() - started)
        if decision != Fits():
            raise SystemExit(f"the minute-by-minute check decided otherwise: {decision}")
    baseline_ms = statistics.median(baseline) * 1000

    print(
        f"new booking: {len(windows)} weekly occurrences of 2 cards; {len(bookings)} others "
        f"({sum(b.weekly_until is not None for b in bookings)} weekly, {edges} edges in all), "
        f"{overlapping} overlapping it"
    )
    print(
        f"capacity {capacity} cards: fits; with one card less, conflicts at "
        f"{one_less.at:%a %Y-%m-%d %H:%M} UTC"
    )
    print(f"check: median {median_ms:.2f} ms, worst {worst_ms:.2f} ms of {len(each)} checks")
    ratio = WORST_GOAL_MS / worst_ms
    print(f"ratio of the goal of {WORST_GOAL_MS:.0f} ms to the worst: {ratio:.2f}")
    print(
        f"minute by minute: {baseline_ms:,.0f} ms (median of {len(baseline)}); "
        f"the sweep is {baseline_ms / median_ms:,.0f} times faster"
    )
    check_goal(
        worst_ms <= WORST_GOAL_MS,
        f"no check over {WORST_GOAL_MS:.0f} ms against {len(bookings)} bookings",
        quick=args.quick,
    )


if __name__ == "__main__":
    main()
