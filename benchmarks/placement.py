"""Pure placement decisions per second on an inventory of 10,000 cards, against a linear scan.

Builds one snapshot of mixed models and pools (hami-core cards, some already carved and partly
used, and MIG cards with instances), then places a mixed stream of fraction, exclusive and MIG
requests through one `PlacementIndex`, assuming each decision as dequeue does. The baseline,
run beside it on the same snapshot and requests, is a naive linear scan that applies the same
rules to every card for every decision; both must choose the same cards. Prints decisions per
second, the ratio to the goal (10,000/s; below it the run exits 1) and the ratio to the scan.

Then the same requests, queued for the members of 50 groups, go through the decision path a
dequeue cycle takes while bookings run: which of 1,000 bookings (one-off and weekly ones of
every tier, for those groups, some running now and the rest still to come, each fitting beside
the others on these cards) run now (`reservations.running_at`), which queued requests fall
within them (`reservations.within_bookings`), marking those `booked`, then `queue.dequeue`
over the whole queue, which builds its placement index and places the booked requests first.
The same queue also goes through `queue.dequeue` alone, unmarked, in the same rounds. Prints
each path's decisions per second (a decision per queued request), the ratio of the path with
bookings to the goal (10,000/s; below it the run exits 1) and to the path without them.

    .venv/bin/python benchmarks/placement.py [--cards 10000] [--decisions 10000]
        [--bookings 1000] [--quick]

--quick runs tiny sizes and checks no goal (make bench-smoke).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _goals import check_goal
from gshare.capacity.placement import (
    CapacitySnapshot,
    CardSnapshot,
    MigInstance,
    Placement,
    PlacementIndex,
    PlacementRequest,
    slot_limit,
)
from gshare.capacity.queue import DequeueResult, FairShareSettings, QueuedRequest, Usage, dequeue
from gshare.capacity.reservations import (
    MIG,
    WEEK,
    Booking,
    Conflict,
    Resource,
    Running,
    Waiting,
    Window,
    cards_for,
    check,
    running_at,
    within_bookings,
)

GOAL = 10_000.0
MODELS = {"A100-80GB": 81920, "H100-80GB": 81920, "H200": 143771, "L40S": 46068}
MIG_PROFILES = {"A100-80GB": "3g.40gb", "H100-80GB": "3g.40gb", "H200": "3g.71gb"}
FRACTIONS = (2, 4, 8)


def inventory(count: int, rnd: random.Random) -> CapacitySnapshot:
    cluster = uuid.UUID(int=0)
    cards = []
    for n in range(count):
        model = rnd.choice(list(MODELS))
        memory = MODELS[model]
        card = CardSnapshot(uuid.UUID(int=n + 1), cluster, f"node-{n // 8}", model, memory, 10)
        if model in MIG_PROFILES and rnd.random() < 0.25:
            profile = MIG_PROFILES[model]
            instances = (
                MigInstance(profile, 0, rnd.random() < 0.5),
                MigInstance(profile, 4, rnd.random() < 0.5),
            )
            card = CardSnapshot(
                card.id, cluster, card.node, model, memory, 10, "mig", mig_instances=instances
            )
        elif rnd.random() < 0.4:
            per_card = rnd.choice(FRACTIONS)
            used = frozenset(range(rnd.randint(1, per_card - 1)))
            card = CardSnapshot(
                card.id,
                cluster,
                card.node,
                model,
                memory,
                10,
                carved_tier=f"{model}:1/{per_card}",
                allocated_slots=used,
            )
        cards.append(card)
    return CapacitySnapshot(tuple(cards))


def requests(count: int, rnd: random.Random) -> list[PlacementRequest]:
    out = []
    for n in range(count):
        model = rnd.choice(list(MODELS))
        memory = MODELS[model]
        rid = uuid.UUID(int=10**9 + n)
        roll = rnd.random()
        if roll < 0.1:
            out.append(PlacementRequest(rid, f"{model}:exclusive", "exclusive", model, memory, 100))
        elif roll < 0.2 and model in MIG_PROFILES:
            profile = MIG_PROFILES[model]
            out.append(
                PlacementRequest(
                    rid,
                    f"{model}:mig-{profile}",
                    "mig",
                    model,
                    memory // 2,
                    42,
                    mig_profile=profile,
                )
            )
        else:
            per_card = rnd.choice(FRACTIONS)
            out.append(
                PlacementRequest(
                    rid,
                    f"{model}:1/{per_card}",
                    "fraction",
                    model,
                    memory // per_card,
                    100 // per_card,
                    per_card,
                )
            )
    return out


def indexed(
    snapshot: CapacitySnapshot, stream: list[PlacementRequest]
) -> tuple[float, float, list[uuid.UUID | None]]:
    """Seconds to build the index, seconds for the decisions, and the cards chosen."""
    started = time.perf_counter()
    index = PlacementIndex(snapshot)
    built = time.perf_counter()
    chosen: list[uuid.UUID | None] = []
    for request in stream:
        result = index.place(request)
        if isinstance(result, Placement):
            index.assume(result)
            chosen.append(result.card_id)
        else:
            chosen.append(None)
    return built - started, time.perf_counter() - built, chosen


def linear_scan(
    snapshot: CapacitySnapshot, stream: list[PlacementRequest]
) -> tuple[float, list[uuid.UUID | None]]:
    """The same rules, by looking at every card for every decision."""
    started = time.perf_counter()
    slots = {c.id: set(c.allocated_slots) for c in snapshot.cards}
    tiers = {c.id: c.carved_tier for c in snapshot.cards}
    free = {
        c.id: {(i.profile, i.start) for i in c.mig_instances if not i.occupied}
        for c in snapshot.cards
    }
    chosen: list[uuid.UUID | None] = []
    for r in stream:
        best: tuple[tuple[int, uuid.UUID, int], uuid.UUID, object] | None = None
        for c in snapshot.cards:
            if not c.usable or c.model != r.model:
                continue
            if r.kind == "mig":
                if c.pool != "mig":
                    continue
                starts = sorted(s for p, s in free[c.id] if p == r.mig_profile)
                if starts and (best is None or (0, c.id, starts[0]) < best[0]):
                    best = ((0, c.id, starts[0]), c.id, (r.mig_profile, starts[0]))
                continue
            used = slots[c.id]
            if c.pool != "hami-core" or len(used) >= slot_limit(c, r):
                continue
            if used and (r.kind == "exclusive" or tiers[c.id] != r.tier):
                continue
            # Fullest carved card first (lower rank), then empty cards by id.
            key = (-len(used), c.id, 0) if used else (1, c.id, 0)
            if best is None or key < best[0]:
                slot = next(s for s in range(len(used) + 1) if s not in used)
                best = (key, c.id, slot)
        if best is None:
            chosen.append(None)
            continue
        _, card_id, taken = best
        if isinstance(taken, tuple):
            free[card_id].discard(taken)
        else:
            slots[card_id].add(taken)  # type: ignore[arg-type]
            tiers[card_id] = r.tier
        chosen.append(card_id)
    return time.perf_counter() - started, chosen


# ---- bookings: the decision path of a dequeue cycle while bookings run ----------------------

NOW = datetime(2026, 3, 4, 10, 30, tzinfo=UTC)  # a Wednesday morning
GROUPS = 50
USERS = 2_000


@dataclass(frozen=True)
class Booked:
    """What the bookings table holds of a booking beyond its arithmetic: whose it is, and what."""

    group_id: uuid.UUID
    tier: str
    count: int
    notice: timedelta


def capacities(snapshot: CapacitySnapshot) -> dict[Resource, int]:
    """What bookings compete for, as it exists now: usable hami-core cards of each model, and
    the instances of each MIG profile."""
    found: dict[Resource, int] = {}
    for card in snapshot.cards:
        if not card.usable:
            continue
        if card.pool == "mig":
            for instance in card.mig_instances:
                key = Resource(card.model, MIG, instance.profile)
                found[key] = found.get(key, 0) + 1
        else:
            found[Resource(card.model)] = found.get(Resource(card.model), 0) + 1
    return found


def booked_tier(rnd: random.Random, *, weekly: bool) -> tuple[str, Resource, int, int]:
    """A tier as bookings name it, its resource, how many sessions, and the amount of the
    resource they hold: classes book many small slices, deadlines a few whole cards."""
    model = rnd.choice(list(MODELS))
    roll = rnd.random()
    if roll < 0.15 and model in MIG_PROFILES:
        profile = MIG_PROFILES[model]
        count = rnd.randint(2, 8)
        return f"{model}:mig-{profile}", Resource(model, MIG, profile), count, count
    if roll < (0.3 if weekly else 0.6):
        count = rnd.randint(1, 8)
        return f"{model}:exclusive", Resource(model), count, count
    per_card = rnd.choice(FRACTIONS)
    count = rnd.randint(10, 40) if weekly else rnd.randint(2, 16)
    return f"{model}:1/{per_card}", Resource(model), count, cards_for(count, per_card)


def bookings(
    count: int, snapshot: CapacitySnapshot, groups: list[uuid.UUID], rnd: random.Random
) -> tuple[list[Booking], dict[uuid.UUID, Booked]]:
    """`count` active and future bookings, each checked beside those made before it (a booking
    that would not fit is drawn again, as the service would refuse it). About six in ten are
    weekly (a class, 1 to 3 hours on a weekday, some started weeks ago), the rest one-off (an
    event or a deadline, 2 hours to 3 days); about one in twelve runs now."""
    capacity = capacities(snapshot)
    made: list[Booking] = []
    rows: dict[uuid.UUID, Booked] = {}
    while len(made) < count:
        weekly = rnd.random() < 0.6
        tier, resource, sessions, amount = booked_tier(rnd, weekly=weekly)
        now_running = rnd.random() < 0.085
        if weekly:
            length = timedelta(hours=rnd.choice((1, 1.5, 2, 3)))
            weeks_ago = rnd.randint(0, 10)
            if now_running:
                into = timedelta(minutes=rnd.randrange(int(length / timedelta(minutes=1))))
                first = NOW - into - weeks_ago * WEEK
            else:
                # A start whose weekly repeats never cover now.
                ahead = timedelta(hours=rnd.randint(1, 7 * 24 - 4)) - length
                first = NOW + max(ahead, timedelta(hours=1)) - weeks_ago * WEEK
            until = first + (weeks_ago + rnd.randint(1, 14)) * WEEK
            if until <= NOW:
                until = NOW + WEEK
        else:
            length = timedelta(hours=rnd.choice((2, 4, 8, 24, 48, 72)))
            if now_running:
                first = NOW - timedelta(minutes=rnd.randrange(int(length / timedelta(minutes=1))))
            else:
                first = NOW + timedelta(hours=rnd.randint(1, 60 * 24))
            until = None
        first = first.replace(second=0, microsecond=0)
        booking = Booking(
            uuid.UUID(int=3 * 10**9 + len(made)),
            resource,
            amount,
            Window(first, first + length),
            until,
        )
        if isinstance(check(capacity.get(resource, 0), made, booking), Conflict):
            continue
        made.append(booking)
        notice = timedelta(minutes=rnd.choice((2, 2, 2, 5, 10)))
        rows[booking.id] = Booked(rnd.choice(groups), tier, sessions, notice)
    return made, rows


def queue_of(
    stream: list[PlacementRequest],
    groups: list[uuid.UUID],
    made: list[Booking],
    rows: dict[uuid.UUID, Booked],
    rnd: random.Random,
) -> tuple[list[QueuedRequest], Usage]:
    """The requests as queued by 2,000 members of the groups over the last four hours, and
    their decayed usage. A request of a tier some group booked and runs now comes from a
    member of that group one time in four (a class asking for its slices)."""
    users = [uuid.UUID(int=6 * 10**9 + n) for n in range(USERS)]
    members: dict[uuid.UUID, list[uuid.UUID]] = {g: [] for g in groups}
    for n, user in enumerate(users):
        members[groups[n % len(groups)]].append(user)
    group_of = {u: g for g, found in members.items() for u in found}
    booking_groups: dict[str, list[uuid.UUID]] = {}
    for booking in running_at(made, NOW):
        booking_groups.setdefault(rows[booking.id].tier, []).append(rows[booking.id].group_id)
    queued = []
    for request in stream:
        user = rnd.choice(users)
        if request.tier in booking_groups and rnd.random() < 0.25:
            user = rnd.choice(members[rnd.choice(booking_groups[request.tier])])
        enqueued = NOW - timedelta(seconds=rnd.randrange(4 * 3600))
        queued.append(QueuedRequest(request, user, group_of[user], enqueued))
    usage = Usage({u: rnd.random() * 2 for u in users}, {g: rnd.random() * 50 for g in groups})
    return queued, usage


def held_now(
    made: list[Booking], rows: dict[uuid.UUID, Booked], rnd: random.Random
) -> dict[tuple[uuid.UUID, str], int]:
    """What the groups with a booking running now hold of its tier (the database counts their
    live allocations): some nothing yet, some part of it, a few all of it."""
    held: dict[tuple[uuid.UUID, str], int] = {}
    for booking in running_at(made, NOW):
        row = rows[booking.id]
        key = (row.group_id, row.tier)
        held[key] = held.get(key, 0) + rnd.choice((0, 0, row.count // 2, row.count))
    return held


@dataclass
class CycleTimes:
    running_s: float
    within_s: float
    dequeue_s: float

    @property
    def total_s(self) -> float:
        return self.running_s + self.within_s + self.dequeue_s


def cycle_with_bookings(
    snapshot: CapacitySnapshot,
    queued: list[QueuedRequest],
    usage: Usage,
    made: list[Booking],
    rows: dict[uuid.UUID, Booked],
    held: dict[tuple[uuid.UUID, str], int],
) -> tuple[CycleTimes, list[QueuedRequest], DequeueResult]:
    """The bookings running now, the queued requests within them marked `booked`, then the
    dequeue: as `admission.dequeue` does once it has read its rows."""
    started = time.perf_counter()
    running = [
        Running(b.id, rows[b.id].group_id, rows[b.id].tier, rows[b.id].count, rows[b.id].notice)
        for b in running_at(made, NOW)
    ]
    found = time.perf_counter()
    within = within_bookings(
        [Waiting(q.id, q.group_id, q.request.tier, q.enqueued_at) for q in queued], running, held
    )
    marked = [replace(q, booked=True) if q.id in within else q for q in queued]
    matched = time.perf_counter()
    result = dequeue(snapshot, marked, NOW, usage, lambda _: True, FairShareSettings())
    done = time.perf_counter()
    return CycleTimes(found - started, matched - found, done - matched), marked, result


def cycle_without_bookings(
    snapshot: CapacitySnapshot, queued: list[QueuedRequest], usage: Usage
) -> tuple[float, DequeueResult]:
    started = time.perf_counter()
    result = dequeue(snapshot, queued, NOW, usage, lambda _: True, FairShareSettings())
    return time.perf_counter() - started, result


def bookings_scenario(
    snapshot: CapacitySnapshot,
    stream: list[PlacementRequest],
    count: int,
    rounds: int,
    *,
    quick: bool,
) -> None:
    rnd = random.Random(8)  # the index's own scenario above keeps its draws
    groups = [uuid.UUID(int=5 * 10**9 + g) for g in range(GROUPS)]
    made_at = time.perf_counter()
    made, rows = bookings(count, snapshot, groups, rnd)
    made_s = time.perf_counter() - made_at
    queued, usage = queue_of(stream, groups, made, rows, rnd)
    held = held_now(made, rows, rnd)

    with_rates: list[float] = []
    without_rates: list[float] = []
    parts: list[CycleTimes] = []
    marked: list[QueuedRequest] = []
    booked_result = plain_result = None
    for _ in range(rounds):
        plain_s, plain_result = cycle_without_bookings(snapshot, queued, usage)
        times, marked, booked_result = cycle_with_bookings(
            snapshot, queued, usage, made, rows, held
        )
        without_rates.append(len(queued) / plain_s)
        with_rates.append(len(queued) / times.total_s)
        parts.append(times)
    assert booked_result is not None
    assert plain_result is not None
    # The booked requests go first: no unbooked request is admitted before a booked one.
    flags = [q.booked for q, _ in booked_result.admitted]
    if flags != sorted(flags, reverse=True):
        raise SystemExit("dequeue admitted an unbooked request before a booked one")

    rate, plain = statistics.median(with_rates), statistics.median(without_rates)
    weekly = sum(1 for b in made if b.weekly_until is not None)
    running = running_at(made, NOW)
    booked = sum(1 for q in marked if q.booked)
    admitted_booked = sum(1 for q, _ in booked_result.admitted if q.booked)
    print(
        f"bookings: {len(made)} ({weekly} weekly, {len(made) - weekly} one-off) for "
        f"{GROUPS} groups, {len(running)} running now; each checked beside the others "
        f"({made_s:.1f} s to draw them)"
    )
    print(
        f"queue: {len(queued)} requests; {booked} within a running booking, "
        f"{admitted_booked} of them placed; {len(booked_result.admitted)} placed in all"
    )
    print(
        "dequeue cycle with bookings, median parts: "
        f"running_at {statistics.median(p.running_s for p in parts) * 1000:.2f} ms, "
        f"within_bookings and marking {statistics.median(p.within_s for p in parts) * 1000:.1f} "
        f"ms, dequeue {statistics.median(p.dequeue_s for p in parts) * 1000:.1f} ms"
    )
    print(f"dequeue cycle without bookings: {plain:,.0f} decisions/s (median of {rounds} rounds)")
    print(f"dequeue cycle with bookings: {rate:,.0f} decisions/s (median of {rounds} rounds)")
    print(f"ratio to the goal of {GOAL:,.0f}/s: {rate / GOAL:.2f}")
    print(f"ratio to the cycle without bookings: {rate / plain:.2f}")
    check_goal(
        rate >= GOAL,
        f"at least {GOAL:,.0f} decisions/s through a dequeue cycle with {len(made)} bookings "
        f"on {len(snapshot.cards)} cards",
        quick=quick,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--decisions", type=int, default=10_000)
    parser.add_argument("--baseline-decisions", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--bookings", type=int, default=1_000)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.cards, args.decisions, args.baseline_decisions, args.rounds = 200, 200, 50, 1
        args.bookings = 50

    rnd = random.Random(7)
    snapshot = inventory(args.cards, rnd)
    stream = requests(args.decisions, rnd)

    builds: list[float] = []
    rates: list[float] = []
    chosen: list[uuid.UUID | None] = []
    for _ in range(args.rounds):
        build_s, decide_s, chosen = indexed(snapshot, stream)
        builds.append(build_s)
        rates.append(len(stream) / decide_s)
    rate = statistics.median(rates)
    placed = sum(1 for c in chosen if c is not None)

    head = stream[: args.baseline_decisions]
    scan_s, scan_chosen = linear_scan(snapshot, head)
    if scan_chosen != chosen[: len(head)]:
        raise SystemExit("the index and the linear scan chose different cards")
    scan_rate = len(head) / scan_s

    no_fit = len(stream) - placed
    print(f"inventory: {args.cards} cards; {len(stream)} decisions, {no_fit} without a fit")
    print(f"index build: {statistics.median(builds) * 1000:.1f} ms, once per snapshot")
    print(f"indexed: {rate:,.0f} decisions/s (median of {args.rounds} rounds)")
    print(f"ratio to the goal of {GOAL:,.0f}/s: {rate / GOAL:.2f}")
    print(f"linear scan: {scan_rate:,.0f} decisions/s over the first {len(head)} decisions")
    print(f"ratio to the linear scan: {rate / scan_rate:.1f}")
    check_goal(
        rate >= GOAL, f"at least {GOAL:,.0f} decisions/s on {args.cards} cards", quick=args.quick
    )
    bookings_scenario(snapshot, stream, args.bookings, args.rounds, quick=args.quick)


if __name__ == "__main__":
    main()
