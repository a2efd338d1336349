"""Bookings: does a booking fit beside the others, and what is left to book. Pure: no I/O.

A booking holds an amount of one resource over a window, once or every week until a date. A
resource is what bookings of it compete for: the hami-core cards of a GPU model (a fraction
tier's slots are counted in the cards they fill, `cards_for`), or the instances of one MIG
profile on the model's MIG cards (their layouts are fixed, so each profile is its own
resource). The capacity of a resource is what exists now: usable cards, or instances on them.

The check is a sweep over window edges, not minute by minute: every occurrence of every
booking of the resource that overlaps the new booking's span adds its amount at its start and
takes it back at its end; the new booking fits when, at each of its own occurrences' moments,
the running total plus its amount stays within the capacity. The first moment it does not is
the conflict's `at`. The running totals are summed once, so each occurrence of the new booking
costs a binary search plus the edges inside it.

Windows are half-open, `[starts_at, ends_at)`: a booking ending at 12:00 and one starting at
12:00 never overlap.
"""

from __future__ import annotations

import math
import uuid
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import accumulate, pairwise
from typing import Any

WEEK = timedelta(days=7)
HAMI_CORE = "hami-core"
MIG = "mig"


@dataclass(frozen=True, order=True)
class Resource:
    """What bookings compete for: a model's hami-core cards, or one MIG profile's instances."""

    model: str
    pool: str = HAMI_CORE
    profile: str | None = None  # MIG only


@dataclass(frozen=True, order=True)
class Window:
    """A half-open span of time, `[starts_at, ends_at)`, in aware datetimes."""

    starts_at: datetime
    ends_at: datetime

    def overlaps(self, other: Window) -> bool:
        return self.starts_at < other.ends_at and other.starts_at < self.ends_at

    @property
    def hours(self) -> float:
        return (self.ends_at - self.starts_at).total_seconds() / 3600


@dataclass(frozen=True)
class Booking:
    """`amount` of `resource` over `first` and, with `weekly_until`, over the same window every
    7 days after it whose start is before `weekly_until`. `card_units` is what one unit of the
    amount counts as in whole cards for the weekly quota (1 for cards, a MIG instance's share of
    its card).

    A stored booking's window ends after it starts and, when weekly, lasts at most 7 days, so
    its occurrences never overlap; should they, each occurrence counts on its own."""

    id: uuid.UUID
    resource: Resource
    amount: int
    first: Window
    weekly_until: datetime | None = None
    card_units: float = 1.0


@dataclass(frozen=True)
class Fits:
    pass


@dataclass(frozen=True)
class Conflict:
    """The first moment the booking does not fit: `needed` on top of `booked` by others, with
    `capacity` in all."""

    at: datetime
    needed: int
    booked: int
    capacity: int


Decision = Fits | Conflict


def cards_for(count: int, slots_per_card: int) -> int:
    """Whole cards `count` sessions of a tier fill, `slots_per_card` to a card (1 for whole
    cards): a card carved to a tier holds that tier only."""
    if count < 0 or slots_per_card < 1:
        raise ValueError("a count is never negative and a card holds at least one session")
    return math.ceil(count / slots_per_card)


def _weeks(booking: Booking, within: Window | None) -> range:
    """Which occurrences (0 the first, 1 a week later, ...) the booking has; with `within`, only
    those overlapping it. Occurrence k is `first` moved k weeks on."""
    first, until = booking.first, booking.weekly_until
    # The first occurrence always counts; a later one only if it starts before `weekly_until`.
    count = 1 if until is None else max(1, _ceil_weeks(until - first.starts_at))
    if within is None:
        return range(count)
    # Occurrence k overlaps `within` when it ends after within's start and starts before its end.
    low = max(0, (within.starts_at - first.ends_at) // WEEK + 1)
    high = min(count, _ceil_weeks(within.ends_at - first.starts_at))
    return range(low, high)


def _ceil_weeks(length: timedelta) -> int:
    """The number of whole weeks that `length` reaches into, rounded up."""
    return -(-length // WEEK)


def occurrences(booking: Booking, within: Window | None = None) -> list[Window]:
    """The booking's windows, in order; with `within`, only those overlapping it."""
    first = booking.first
    return [
        Window(first.starts_at + k * WEEK, first.ends_at + k * WEEK)
        for k in _weeks(booking, within)
    ]


def span(booking: Booking) -> Window:
    """From the booking's first start to its last end."""
    last = occurrences(booking)[-1]
    return Window(booking.first.starts_at, last.ends_at)


def _edges(bookings: Iterable[Booking], within: Window) -> list[tuple[datetime, int]]:
    """(moment, change of the booked amount) of every occurrence overlapping `within`, sorted,
    ends before starts at the same moment (windows are half-open)."""
    edges: list[tuple[datetime, int]] = []
    for booking in bookings:
        starts_at, ends_at, amount = booking.first.starts_at, booking.first.ends_at, booking.amount
        for k in _weeks(booking, within):
            moved = k * WEEK
            edges.append((starts_at + moved, amount))
            edges.append((ends_at + moved, -amount))
    edges.sort()  # at equal moments the negative change (an end) sorts first
    return edges


def _held(windows: Sequence[Window]) -> list[tuple[datetime, datetime, int]]:
    """`[start, end)` spans over which the same number (> 0) of `windows` are open, in order."""
    changes = sorted([(w.starts_at, 1) for w in windows] + [(w.ends_at, -1) for w in windows])
    spans: list[tuple[datetime, datetime, int]] = []
    count, i = 0, 0
    while i < len(changes):
        moment = changes[i][0]
        while i < len(changes) and changes[i][0] == moment:
            count += changes[i][1]
            i += 1
        if count > 0 and i < len(changes):
            spans.append((moment, changes[i][0], count))
    return spans


def check(capacity: int, others: Sequence[Booking], new: Booking) -> Decision:
    """Whether `new` fits beside `others` (of any resources: only `new`'s counts) within
    `capacity` at every moment of every occurrence; the first moment it does not, if any, with
    what others book at that moment (and, should `new`'s own occurrences overlap, what its
    other occurrences hold there)."""
    mine = [b for b in others if b.resource == new.resource and b.id != new.id]
    spans = _held(occurrences(new))
    if not spans:
        return Fits()
    edges = _edges(mine, Window(spans[0][0], spans[-1][1]))
    moments = [moment for moment, _ in edges]
    # totals[k]: what others book once the edges up to and including the k-th have passed.
    totals = list(accumulate(change for _, change in edges))

    def booked_at_moment(moment: datetime) -> int:
        passed = bisect_right(moments, moment)
        return totals[passed - 1] if passed else 0

    for starts_at, ends_at, count in spans:
        held = count * new.amount
        booked = booked_at_moment(starts_at)
        if booked + held > capacity:
            return Conflict(starts_at, new.amount, booked + held - new.amount, capacity)
        # Within the span the total only rises where another booking starts.
        i = bisect_right(moments, starts_at)
        while i < len(edges) and moments[i] < ends_at:
            if edges[i][1] > 0 and totals[i] + held > capacity:
                booked = booked_at_moment(moments[i])  # with every edge at that moment
                return Conflict(moments[i], new.amount, booked + held - new.amount, capacity)
            i += 1
    return Fits()


def booked_at(bookings: Iterable[Booking], resource: Resource, at: datetime) -> int:
    """The amount of `resource` booked at the moment `at`."""
    moment = Window(at, at + timedelta(microseconds=1))
    return sum(b.amount * len(_weeks(b, moment)) for b in bookings if b.resource == resource)


@dataclass(frozen=True)
class Free:
    """Over `window`, `booked` of the resource is booked and `free` is left to book."""

    window: Window
    booked: int
    free: int


def free_capacity(
    capacity: int, bookings: Sequence[Booking], resource: Resource, within: Window
) -> list[Free]:
    """What is booked and free of `resource` over `within`, as consecutive steps (a step
    starts wherever the booked amount changes; `free` may be negative where capacity shrank
    under bookings made before)."""
    edges = _edges([b for b in bookings if b.resource == resource], within)
    steps: list[Free] = []
    booked, moment, i = 0, within.starts_at, 0
    while i < len(edges) and edges[i][0] <= within.starts_at:
        booked += edges[i][1]
        i += 1
    while moment < within.ends_at:
        following = edges[i][0] if i < len(edges) else within.ends_at
        following = min(following, within.ends_at)
        if following > moment:
            steps.append(Free(Window(moment, following), booked, capacity - booked))
        moment = following
        while i < len(edges) and edges[i][0] <= moment:
            booked += edges[i][1]
            i += 1
    merged: list[Free] = []
    for step in steps:
        if merged and merged[-1].booked == step.booked:
            last = merged.pop()
            step = Free(Window(last.window.starts_at, step.window.ends_at), step.booked, step.free)
        merged.append(step)
    return merged


# ---- cards not everyone may use ------------------------------------------------------------
#
# Not every booking may use every card of its resource: a node dedicated to a tenant takes
# only its sessions, and a level may need nodes that offer user namespaces or a sandbox. Each
# booking then reaches a set of kinds of card. A new booking fits when, at every moment, the
# bookings can still each be given cards they reach: by Hall's theorem, when for every set of
# kinds S that is the union of the new booking's reach and some others' reaches hanging
# together with it, the bookings whose reach lies within S fit in S's cards. `pools` lists
# those sets; `check` runs on each.

MAX_POOLS = 1024  # the most pools `pools` lists


def pools(mine: frozenset[Any], reaches: Iterable[frozenset[Any]]) -> list[frozenset[Any]]:
    """The sets of kinds of card a booking reaching `mine` shares with the bookings of
    `reaches`: `mine` joined with each combination of other reaches that hangs together with
    it (each reach added meets what is joined so far). These are the unions Hall's condition
    asks about; a reach that meets none of them concerns other bookings only, and joining it
    would only carry their troubles (a card lost under them) into this decision. At most
    MAX_POOLS, smallest first: beyond them (a dozen tenants' reaches all meeting this one) a
    booking may be let through that a full check would refuse."""
    extra = {r for r in reaches if r and not r <= mine}
    found = {mine}
    frontier = [mine]
    while frontier and len(found) < MAX_POOLS:
        pool = frontier.pop(0)
        for reach in sorted(extra, key=_order):
            joined = pool | reach
            if reach & pool and joined not in found and len(found) < MAX_POOLS:
                found.add(joined)
                frontier.append(joined)
    return sorted(found, key=lambda r: (len(r), _order(r)))


def _order(kinds: frozenset[Any]) -> list[str]:
    return sorted(map(repr, kinds))


def bookable(
    shares: Sequence[tuple[int, Sequence[Booking]]],
    resource: Resource,
    within: Window,
    capacity: int,
) -> list[Free]:
    """What is left to book of `resource` over `within` by someone whose cards are `capacity`,
    given each pool they share (its capacity, and the bookings whose reach lies within it): at
    each moment the least any pool has free, and as booked what `capacity` lacks of that."""
    steps = [free_capacity(size, bookings, resource, within) for size, bookings in shares]
    edges = sorted({s.window.starts_at for found in steps for s in found} | {within.ends_at})
    merged: list[Free] = []
    for start, end in pairwise(edges):
        free = min(
            next(s.free for s in found if s.window.starts_at <= start < s.window.ends_at)
            for found in steps
        )
        if merged and merged[-1].free == free:
            last = merged.pop()
            start = last.window.starts_at
        merged.append(Free(Window(start, end), capacity - free, free))
    return merged


def week_of(at: datetime) -> datetime:
    """The Monday 00:00 UTC that starts `at`'s week."""
    day = at.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return day - timedelta(days=day.weekday())


def card_hours_by_week(bookings: Iterable[Booking]) -> dict[datetime, float]:
    """Card-hours booked in each week (Monday 00:00 UTC), a window across a week's end counted
    in each week for its part in it."""
    weeks: dict[datetime, float] = {}
    for booking in bookings:
        for window in occurrences(booking):
            start = window.starts_at
            while start < window.ends_at:
                week = week_of(start)
                end = min(window.ends_at, week + WEEK)
                hours = (end - start).total_seconds() / 3600
                weeks[week] = weeks.get(week, 0.0) + hours * booking.amount * booking.card_units
                start = end
    return weeks


def over_quota(
    existing: Iterable[Booking], new: Booking, max_card_hours_week: float
) -> tuple[datetime, float] | None:
    """The first week in which `new` with `existing` (one organization's) books more than
    `max_card_hours_week` card-hours, with that week's total; None when none does."""
    mine = card_hours_by_week([new])
    theirs = card_hours_by_week(b for b in existing if b.id != new.id)
    for week in sorted(mine):
        total = mine[week] + theirs.get(week, 0.0)
        if total > max_card_hours_week + 1e-9:
            return week, total
    return None


@dataclass(frozen=True)
class Running:
    """A booking whose window runs now: `count` sessions of `tier` for `group`."""

    id: uuid.UUID
    group_id: uuid.UUID
    tier: str
    count: int
    notice: timedelta


@dataclass(frozen=True)
class Waiting:
    """A queued request as bookings see it."""

    id: uuid.UUID
    group_id: uuid.UUID
    tier: str
    enqueued_at: datetime


def within_bookings(
    waiting: Iterable[Waiting],
    running: Iterable[Running],
    held: dict[tuple[uuid.UUID, str], int],
) -> dict[uuid.UUID, Running]:
    """Which waiting requests fall within a booking running now, and the booking each falls
    within. A group's bookings of one tier add up; while the group holds (`held`, by group and
    tier) fewer sessions of the tier than they book, its requests of the tier are within them,
    the longest waiting first. Of two bookings of one tier, the shorter notice applies."""
    room: dict[tuple[uuid.UUID, str], int] = {}
    booking_of: dict[tuple[uuid.UUID, str], Running] = {}
    for b in running:
        key = (b.group_id, b.tier)
        room[key] = room.get(key, 0) + b.count
        if key not in booking_of or b.notice < booking_of[key].notice:
            booking_of[key] = b
    for key in room:
        room[key] -= held.get(key, 0)
    within: dict[uuid.UUID, Running] = {}
    for w in sorted(waiting, key=lambda w: (w.enqueued_at, w.id)):
        key = (w.group_id, w.tier)
        if room.get(key, 0) > 0:
            room[key] -= 1
            within[w.id] = booking_of[key]
    return within


def running_at(bookings: Iterable[Booking], at: datetime) -> list[Booking]:
    """The bookings with a window running at `at`."""
    moment = Window(at, at + timedelta(microseconds=1))
    return [b for b in bookings if occurrences(b, moment)]


def sessions_within(
    sessions: Iterable[tuple[uuid.UUID, uuid.UUID, str, datetime]], running: Iterable[Running]
) -> set[uuid.UUID]:
    """Which running sessions, given as (id, group, tier, started), are on capacity their group
    booked and is running now: per group and tier, the earliest started, up to the count the
    group's bookings of the tier add up to."""
    room: dict[tuple[uuid.UUID, str], int] = {}
    for b in running:
        room[(b.group_id, b.tier)] = room.get((b.group_id, b.tier), 0) + b.count
    within: set[uuid.UUID] = set()
    for session_id, group_id, tier, _ in sorted(sessions, key=lambda s: (s[3], s[0])):
        key = (group_id, tier)
        if room.get(key, 0) > 0:
            room[key] -= 1
            within.add(session_id)
    return within
