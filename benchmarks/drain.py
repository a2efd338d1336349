"""Draining a backlog through the real queue code: utilization, waits per tier and per group.

2,000 requests (1/8, 1/4, 1/2 and exclusive) from a heavy and a light group arrive over a
window faster than 16 cards can serve them; each runs for a simulated duration. Every simulated
tick ends what finished, samples usage, and runs `dequeue` over a fresh snapshot, carrying its
reservations and usage to the next tick. Prints the mean card utilization while a backlog
exists (goal at least 0.8), the mean wait per tier, the worst exclusive wait over the mean
exclusive wait (goal at most 5) and each group's mean wait (the light group's no worse than the
heavy group's); a missed goal exits 1.

Then a preemption scenario on minute ticks: a heavy group fills every card with long exclusive
sessions and a light group arrives later, without and with preemption (pure `dequeue` and
`PreemptionIndex`). Prints the light group's mean and worst wait (goal with preemption: the
worst at most the notice plus one queue interval) and utilization while a backlog exists (goal
at least 0.8).

Last, a class scenario on the real database (an embedded PostgreSQL, migrated), driven by a
simulated clock: two other groups keep every card busy and a backlog queued (mixed 1/8, 1/4,
1/2 and exclusive sessions); a class group holds a weekly booking, made with the real
`bookings.create`, of 30 quarter-card sessions (8 of the 16 cards) from 10:00 UTC, with the
default 2 minutes' notice; from 10:00, 30 students arrive spread over 5 minutes, each asking
for one quarter-card session (`admission.admit`). The worker's queue loop runs as the worker
runs it, at the default queue interval (15 s): `tasks.dequeue_once` then `tasks.preempt_once`
(the real `admission.dequeue` and `preempting.walk`), again at once when the walk paused a
session (the freed card wakes the loop). Finished sessions are released; a paused session is
asked for again with what it had left. Prints the students' p95 and worst time from arrival to
running (goal: p95 at most the booking's notice plus one queue interval), the utilization of
the cards the class ends up on during the hour before 10:00 (goal at least 0.8: the booked
capacity is lent to the other groups, not held idle), where the students' time went (how long
each waited to claim a card, how many cards were held for claims at once) and what the class
took back: the notices given for it and on how many cards, and the notices its own sessions got
while the booking ran.

    .venv/bin/python benchmarks/drain.py [--requests 2000] [--cards 16] [--quick]

--quick runs tiny sizes (the class scenario on 4 cards with 8 students over less simulated
time) and checks no goal (make bench-smoke).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _goals import check_goal
from _world import connected_cluster, funded_member, priced_model
from gshare.capacity import admission, bookings, service, tasks
from gshare.capacity.models import GpuTier
from gshare.capacity.placement import CapacitySnapshot, CardSnapshot, PlacementRequest
from gshare.capacity.preemption import (
    Claim,
    Preemption,
    PreemptionIndex,
    PreemptionSnapshot,
    RunningSession,
    fair_shares,
)
from gshare.capacity.queue import (
    FairShareSettings,
    QueuedRequest,
    Usage,
    card_share,
    dequeue,
    sample_usage,
)
from gshare.capacity.reservations import cards_for
from gshare.capacity.schemas import BookingIn, InventoryReport
from gshare.credits import operations
from gshare.credits import repository as credits
from gshare.credits.amounts import MICRO
from gshare.identity.authz import Context
from gshare.identity.models import Group, Organization, User
from gshare.identity.permissions import Actor
from gshare.kit.db import make_engine, make_sessionmaker, run_in_transaction
from gshare.kit.embedded_db import ensure_database, start_embedded
from gshare.kit.schema_version import upgrade
from gshare.kit.settings import Settings

MODEL = "A100-80GB"
MEMORY_MIB = 81920
TICK = timedelta(minutes=5)
START = datetime(2026, 1, 1, tzinfo=UTC)
HEAVY, LIGHT = uuid.UUID(int=1), uuid.UUID(int=2)
# (tier, slots per card, share of requests, mean duration in ticks)
TIERS = (("1/8", 8, 0.35, 18), ("1/4", 4, 0.3, 24), ("1/2", 2, 0.2, 24), ("exclusive", 1, 0.15, 24))


@dataclass
class Job:
    queued: QueuedRequest
    duration_ticks: int
    started_tick: int | None = None


def make_jobs(
    count: int,
    window_ticks: int,
    rnd: random.Random,
    length: Callable[[random.Random, float], float] | None = None,
) -> list[tuple[int, Job]]:
    """(arrival tick, job); the heavy group sends three requests in four. `length` draws a
    session's length in ticks from its tier's mean (default: exponential)."""
    jobs = []
    for n in range(count):
        heavy = rnd.random() < 0.75
        group = HEAVY if heavy else LIGHT
        user = uuid.UUID(int=100 + rnd.randrange(6) if heavy else 200 + rnd.randrange(3))
        tier, per_card, _, mean = rnd.choices(TIERS, weights=[t[2] for t in TIERS])[0]
        if tier == "exclusive":
            request = PlacementRequest(
                uuid.UUID(int=10**6 + n), f"{MODEL}:exclusive", "exclusive", MODEL, MEMORY_MIB, 100
            )
        else:
            request = PlacementRequest(
                uuid.UUID(int=10**6 + n),
                f"{MODEL}:{tier}",
                "fraction",
                MODEL,
                MEMORY_MIB // per_card,
                100 // per_card,
                per_card,
            )
        arrival = rnd.randrange(window_ticks)
        queued = QueuedRequest(request, user, group, START + arrival * TICK)
        drawn = length(rnd, mean) if length is not None else rnd.expovariate(1 / mean)
        jobs.append((arrival, Job(queued, max(1, round(drawn)))))
    jobs.sort(key=lambda pair: (pair[0], pair[1].queued.id))
    return jobs


def backlog_window(requests: int, cards: int) -> int:
    """Ticks over which arrivals come at about twice the rate the cards serve them."""
    mean_cards_ticks = sum(share * mean / per for _, per, share, mean in TIERS)
    return max(1, round(requests * mean_cards_ticks / cards / 2))


DRAIN_FAIR = FairShareSettings(
    half_life=timedelta(hours=2),
    sampling_interval=TICK,
    wait_bonus_per_hour=1.0,
    starvation_limit=timedelta(hours=3),
)

# card -> slot -> (job, tier, ends at tick)
Running = dict[uuid.UUID, dict[int, tuple[Job, str, int]]]


@dataclass(frozen=True)
class TickView:
    """What a tick's queue turn is about to see, for a replay's observer."""

    tick: int
    now: datetime
    snapshot: CapacitySnapshot
    queued: list[QueuedRequest]
    usage: Usage
    running: Running
    finished: list[Job]


@dataclass
class Replay:
    finished: list[Job]
    ticks: int
    backlog_utilization: list[float]
    seconds: float


def replay(
    arrivals: list[tuple[int, Job]],
    cards: int,
    fair: FairShareSettings = DRAIN_FAIR,
    observe: Callable[[TickView], None] | None = None,
) -> Replay:
    """Drain the arrivals through the real queue, a tick at a time: end what finished, take
    the tick's arrivals, sample usage, run `dequeue` over a fresh snapshot (after `observe`
    has seen it), carrying reservations and usage to the next tick."""
    card_ids = [uuid.UUID(int=n + 1) for n in range(cards)]
    running: Running = {c: {} for c in card_ids}
    waiting: dict[uuid.UUID, Job] = {}
    reserved: dict[uuid.UUID, uuid.UUID] = {}
    usage = Usage()
    finished: list[Job] = []
    backlog_utilization: list[float] = []
    next_arrival = 0
    tick = 0
    started = time.perf_counter()
    while next_arrival < len(arrivals) or waiting or any(running.values()):
        now = START + tick * TICK
        for slots in running.values():
            for slot in [s for s, (_, _, ends) in slots.items() if ends <= tick]:
                finished.append(slots.pop(slot)[0])
        while next_arrival < len(arrivals) and arrivals[next_arrival][0] <= tick:
            job = arrivals[next_arrival][1]
            waiting[job.queued.id] = job
            next_arrival += 1
        by_user: dict[uuid.UUID, float] = {}
        by_group: dict[uuid.UUID, float] = {}
        for slots in running.values():
            for job, _, _ in slots.values():
                q = job.queued
                by_user[q.user_id] = by_user.get(q.user_id, 0.0) + q.cards
                by_group[q.group_id] = by_group.get(q.group_id, 0.0) + q.cards
        usage = sample_usage(usage, by_user, by_group, fair)
        snapshot = CapacitySnapshot(
            tuple(
                CardSnapshot(
                    c,
                    uuid.UUID(int=0),
                    f"node-{i // 8}",
                    MODEL,
                    MEMORY_MIB,
                    10,
                    carved_tier=next(iter(running[c].values()))[1] if running[c] else None,
                    allocated_slots=frozenset(running[c]),
                )
                for i, c in enumerate(card_ids)
            ),
            reserved,
        )
        queued = [job.queued for job in waiting.values()]
        if observe is not None:
            observe(TickView(tick, now, snapshot, queued, usage, running, finished))
        result = dequeue(snapshot, queued, now, usage, lambda _: True, fair)
        reserved, usage = dict(result.reserved), result.usage
        for q, placement in result.admitted:
            job = waiting.pop(q.id)
            job.started_tick = tick
            assert placement.slot is not None
            running[placement.card_id][placement.slot] = (
                job,
                q.request.tier,
                tick + job.duration_ticks,
            )
        if waiting:
            in_use = sum(
                job.queued.cards for slots in running.values() for job, _, _ in slots.values()
            )
            backlog_utilization.append(in_use / cards)
        tick += 1
    return Replay(finished, tick, backlog_utilization, time.perf_counter() - started)


def wait_hours(job: Job) -> float:
    assert job.started_tick is not None
    return (START + job.started_tick * TICK - job.queued.enqueued_at) / timedelta(hours=1)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--cards", type=int, default=16)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.requests, args.cards = 200, 4

    rnd = random.Random(11)
    arrivals = make_jobs(args.requests, backlog_window(args.requests, args.cards), rnd)
    run = replay(arrivals, args.cards)
    finished, tick = run.finished, run.ticks
    utilization = statistics.fmean(run.backlog_utilization) if run.backlog_utilization else 0.0
    print(
        f"{args.requests} requests on {args.cards} cards: {tick} ticks of {TICK}, "
        f"{run.seconds:.1f} s"
    )
    print(f"mean utilization while a backlog exists: {utilization:.2f} (goal at least 0.8)")
    for tier, *_ in TIERS:
        waits = [wait_hours(j) for j in finished if j.queued.request.tier == f"{MODEL}:{tier}"]
        print(f"mean wait {tier}: {statistics.fmean(waits):.2f} h over {len(waits)} requests")
    exclusive = [wait_hours(j) for j in finished if j.queued.request.kind == "exclusive"]
    spread = max(exclusive) / statistics.fmean(exclusive) if statistics.fmean(exclusive) else 1.0
    print(f"worst exclusive wait over its mean: {spread:.2f} (goal at most 5)")
    group_waits = {}
    for name, group in (("heavy", HEAVY), ("light", LIGHT)):
        group_waits[name] = statistics.fmean(
            wait_hours(j) for j in finished if j.queued.group_id == group
        )
        print(f"mean wait, {name} group: {group_waits[name]:.2f} h")
    met = utilization >= 0.8 and spread <= 5 and group_waits["light"] <= group_waits["heavy"]
    check_goal(
        met,
        "utilization >= 0.8, worst exclusive wait <= 5x its mean, light group waits <= heavy",
        quick=args.quick,
    )
    preemption_scenario(args.cards, quick=args.quick)
    class_scenario(args.cards, quick=args.quick)


# ---- preemption: a light group arriving while a heavy group fills every card ----------------

P_TICK = timedelta(minutes=1)  # the queue's interval in this scenario
NOTICE_TICKS = 10  # preemption_notice_minutes


@dataclass
class Session:
    job: Job
    card: uuid.UUID
    slot: int
    started_tick: int
    ends_tick: int
    deadline: int | None = None  # the tick its notice ends, once given


def _exclusive(n: int, group: uuid.UUID, user: int, at: int) -> QueuedRequest:
    request = PlacementRequest(
        uuid.UUID(int=n), f"{MODEL}:exclusive", "exclusive", MODEL, MEMORY_MIB, 100
    )
    return QueuedRequest(request, uuid.UUID(int=user), group, START + at * P_TICK)


def _exclusive_cards(
    card_ids: list[uuid.UUID], running: dict[uuid.UUID, Session]
) -> tuple[CardSnapshot, ...]:
    """The cards as placement sees them: carved to the exclusive tier while one runs on it."""
    busy = {s.card: s.slot for s in running.values()}
    return tuple(
        CardSnapshot(
            c,
            uuid.UUID(int=0),
            "node-0",
            MODEL,
            MEMORY_MIB,
            10,
            carved_tier=f"{MODEL}:exclusive" if c in busy else None,
            allocated_slots=frozenset([busy[c]]) if c in busy else frozenset(),
        )
        for c in card_ids
    )


def _run_preemption(cards: int, *, preempt: bool, rnd: random.Random) -> dict[str, float]:
    """Minute ticks: at tick 0 the heavy group asks for three times the cards in long exclusive
    sessions; from tick 30 the light group asks for half the cards, one request every 15
    minutes. Returns the light group's waits, utilization while a backlog exists and the
    GPU-seconds spent in notice periods."""
    arrivals: list[tuple[int, Job]] = []
    for n in range(3 * cards):
        duration = max(30, round(rnd.expovariate(1 / 240)))
        arrivals.append((0, Job(_exclusive(n + 1, HEAVY, 100 + n % 6, 0), duration)))
    for n in range(max(1, cards // 2)):
        at = 30 + 15 * n
        arrivals.append((at, Job(_exclusive(10**6 + n, LIGHT, 200 + n % 3, at), 60)))
    card_ids = [uuid.UUID(int=10**9 + n) for n in range(cards)]
    running: dict[uuid.UUID, Session] = {}  # request id -> session
    waiting: dict[uuid.UUID, Job] = {}
    promised: dict[uuid.UUID, uuid.UUID] = {}  # card -> request
    fair = FairShareSettings(sampling_interval=P_TICK, starvation_limit=timedelta(hours=24))
    usage = Usage()
    light_waits: list[float] = []
    utilization: list[float] = []
    notice_seconds = 0.0
    pending = list(arrivals)
    requeued = 0
    tick = 0
    while (pending or waiting or running) and tick < 24 * 60:
        now = START + tick * P_TICK
        for rid in [r for r, s in running.items() if s.ends_tick <= tick]:
            del running[rid]
        while pending and pending[0][0] <= tick:
            job = pending.pop(0)[1]
            waiting[job.queued.id] = job
        if preempt:
            for rid in [
                r for r, s in running.items() if s.deadline is not None and s.deadline <= tick
            ]:
                session = running.pop(rid)
                left = session.ends_tick - tick
                requeued += 1
                again = replace(
                    session.job.queued,
                    request=replace(
                        session.job.queued.request, id=uuid.UUID(int=2 * 10**9 + requeued)
                    ),
                    enqueued_at=now,
                )
                waiting[again.id] = Job(again, left)
        promised = {c: r for c, r in promised.items() if r in waiting}
        cards_now = _exclusive_cards(card_ids, running)
        settings = replace(fair, max_reserved_cards=fair.max_reserved_cards + len(promised))
        queued = [job.queued for job in waiting.values()]
        result = dequeue(
            CapacitySnapshot(cards_now, promised), queued, now, usage, lambda _: True, settings
        )
        usage = result.usage
        for q, placement in result.admitted:
            job = waiting.pop(q.id)
            assert placement.slot is not None
            running[q.id] = Session(
                job, placement.card_id, placement.slot, tick, tick + job.duration_ticks
            )
            if q.group_id == LIGHT:
                light_waits.append((now - q.enqueued_at) / timedelta(minutes=1))
            promised = {c: r for c, r in promised.items() if r != q.id}
        if preempt and waiting:
            snap_cards = _exclusive_cards(card_ids, running)
            sessions = tuple(
                RunningSession(
                    rid, s.card, s.slot, s.job.queued.group_id, 1.0, START + s.started_tick * P_TICK
                )
                for rid, s in running.items()
                if s.deadline is None
            )
            groups = {s.group_id for s in sessions} | {j.queued.group_id for j in waiting.values()}
            shares = fair_shares(float(cards), dict.fromkeys(groups, 1.0))
            index = PreemptionIndex(
                PreemptionSnapshot(CapacitySnapshot(snap_cards, promised), sessions, shares), now
            )
            for job in sorted(waiting.values(), key=lambda j: (j.queued.enqueued_at, j.queued.id)):
                if job.queued.id in promised.values():
                    continue
                claim = Claim(job.queued)
                decision = index.select(claim)
                if isinstance(decision, Preemption):
                    index.assume(claim, decision)
                    promised[decision.card_id] = job.queued.id
                    for victim in decision.victims:
                        running[victim.session_id].deadline = tick + NOTICE_TICKS
                        notice_seconds += NOTICE_TICKS * P_TICK.total_seconds()
        if waiting:
            utilization.append(len({s.card for s in running.values()}) / cards)
        tick += 1
    return {
        "mean": statistics.fmean(light_waits) if light_waits else float("nan"),
        "worst": max(light_waits) if light_waits else float("nan"),
        "utilization": statistics.fmean(utilization) if utilization else 0.0,
        "notice_gpu_seconds": notice_seconds,
    }


def preemption_scenario(cards: int, *, quick: bool) -> None:
    without = _run_preemption(cards, preempt=False, rnd=random.Random(5))
    with_it = _run_preemption(cards, preempt=True, rnd=random.Random(5))
    print(
        f"preemption scenario on {cards} cards "
        f"(queue interval {P_TICK}, notice {NOTICE_TICKS} min):"
    )
    for name, found in (("without preemption", without), ("with preemption", with_it)):
        print(
            f"  {name}: light group mean wait {found['mean']:.1f} min, worst {found['worst']:.1f} "
            f"min; utilization while a backlog exists {found['utilization']:.2f}; "
            f"GPU-seconds in notice periods {found['notice_gpu_seconds']:.0f}"
        )
    limit = NOTICE_TICKS + P_TICK / timedelta(minutes=1)
    met = with_it["worst"] <= limit and with_it["utilization"] >= 0.8
    check_goal(
        met,
        f"with preemption the light group's worst wait <= {limit:.0f} min (notice plus one queue "
        "interval) and utilization while a backlog exists >= 0.8",
        quick=quick,
    )


# ---- a class: booked capacity lent to a busy cluster and taken back, on the real database ----

CLASS_AT = datetime(2026, 3, 3, 10, 0, tzinfo=UTC)  # a Tuesday
CLASS_LENGTH = timedelta(hours=2)
CLASS_TIER = "1/4"
STUDENTS = 30
ARRIVALS_OVER = timedelta(minutes=5)
# Other groups' sessions: (tier, share of requests, mean minutes).
BACKGROUND = (("1/8", 0.35, 45), ("1/4", 0.3, 60), ("1/2", 0.2, 60), ("exclusive", 0.15, 60))
BACKGROUND_LOAD = 2.0  # card-minutes asked for over card-minutes there are, as above
MODEL = "A100-80GB"


@dataclass
class Want:
    """One session someone asks for: who, which tier, for how long, and when it asks."""

    request_id: uuid.UUID
    user_id: uuid.UUID
    group_id: uuid.UUID
    tier: str
    minutes: float
    asks_at: datetime
    student: bool = False
    resumed: bool = False  # asked for again after it was paused


@dataclass
class ClassWorld:
    settings: Settings
    tiers: dict[str, GpuTier]
    class_group: uuid.UUID
    background_groups: list[uuid.UUID]
    students: list[uuid.UUID]
    background_users: dict[uuid.UUID, list[uuid.UUID]]
    root: Actor


async def _class_world(
    sessions: async_sessionmaker[AsyncSession], cards: int, students: int, now: datetime
) -> ClassWorld:
    """One organization with a class group (its students) and two other groups (six members
    each), every member funded; a connected cluster of `cards` A100s reported through the real
    inventory path; the model priced with 1/8, 1/4, 1/2 and exclusive tiers; a super admin."""
    async with sessions() as db, db.begin():
        org = Organization(id=uuid.uuid4(), name="University", created_at=now)
        db.add(org)
        await db.flush()
        org_wallet = await credits.account_id(db, "org", org.id, now)
        await operations.mint(db, wallet_id=org_wallet, amount=10**9 * MICRO, now=now)
        members: dict[uuid.UUID, list[uuid.UUID]] = {}
        for name, count in (("Vision course", students), ("Lab A", 6), ("Lab B", 6)):
            group = Group(id=uuid.uuid4(), org_id=org.id, name=name, created_at=now)
            db.add(group)
            await db.flush()
            group_wallet = await credits.account_id(db, "group", group.id, now)
            await operations.move(
                db,
                from_id=org_wallet,
                to_id=group_wallet,
                amount=10**8 * MICRO,
                kind="allocation",
                now=now,
            )
            members[group.id] = []
            for n in range(count):
                email = f"{name.lower().replace(' ', '-')}-{n}@uni.example.org"
                user_id, _ = await funded_member(
                    db, group.id, group_wallet, email, f"{name} {n}", now
                )
                members[group.id].append(user_id)
        root = User(
            id=uuid.uuid4(),
            email="root@uni.example.org",
            name="Root",
            password_hash="-",
            must_change_password=False,
            is_super_admin=True,
            created_at=now,
            password_changed_at=now,
        )
        db.add(root)
        cluster = connected_cluster("campus", now)
        db.add(cluster)
        made = await priced_model(db, MODEL, MEMORY_MIB, now)
    report = InventoryReport.model_validate(
        {
            "sequence": 1,
            "nodes": [
                {
                    "name": f"gpu-node-{node}",
                    "cards": [
                        {
                            "uuid": f"GPU-{n:05d}",
                            "model": MODEL,
                            "memory_mib": MEMORY_MIB,
                            "cores": 100,
                            "split_count": 8,
                            "numa": 0,
                            "healthy": True,
                        }
                        for n in range(node * 8, min(cards, node * 8 + 8))
                    ],
                }
                for node in range(math.ceil(cards / 8))
            ],
        }
    )
    async with sessions() as db, db.begin():
        assert await service.apply_inventory(db, cluster.id, report, now)
    groups = list(members)
    return ClassWorld(
        Settings(_env_file=None),
        made,
        groups[0],
        groups[1:],
        members[groups[0]],
        {g: members[g] for g in groups[1:]},
        Actor(root.id, root.email, is_super_admin=True),
    )


def _background(
    world: ClassWorld, cards: int, begins: datetime, ends: datetime, rnd: random.Random
) -> list[Want]:
    """The other groups' requests: enough at `begins` to fill every card at once, then a
    steady stream asking for `BACKGROUND_LOAD` times what the cards can serve."""
    per_card = {"1/8": 8, "1/4": 4, "1/2": 2, "exclusive": 1}
    mean_card_minutes = sum(share * mean / per_card[t] for t, share, mean in BACKGROUND)
    rate = BACKGROUND_LOAD * cards / mean_card_minutes  # requests a minute
    wants: list[Want] = []

    def one(at: datetime) -> Want:
        group = rnd.choice(world.background_groups)
        tier, _, mean = rnd.choices(BACKGROUND, weights=[b[1] for b in BACKGROUND])[0]
        minutes = max(5.0, rnd.expovariate(1 / mean))
        user = rnd.choice(world.background_users[group])
        return Want(_id(rnd), user, group, tier, minutes, at)

    filled = 0.0
    while filled < 1.5 * cards:  # a backlog from the first tick
        wants.append(one(begins))
        filled += 1 / per_card[wants[-1].tier]
    at = begins
    while True:
        at += timedelta(seconds=round(rnd.expovariate(rate / 60)))
        if at >= ends:
            return wants
        wants.append(one(at))


@dataclass
class ClassRun:
    student_waits: dict[uuid.UUID, float] = field(default_factory=dict)  # request -> seconds
    student_asked: dict[uuid.UUID, datetime] = field(default_factory=dict)
    student_claimed: dict[uuid.UUID, datetime] = field(default_factory=dict)  # first notice
    students_paused: int = 0  # after they started, for some other group's claim
    class_notices: dict[str, int] = field(default_factory=dict)  # reason -> students' sessions
    background_asked: int = 0
    background_paused_after: int = 0  # other groups' sessions paused from the class's start on
    utilization: dict[uuid.UUID, list[float]] = field(default_factory=dict)  # card -> samples
    class_cards: set[uuid.UUID] = field(default_factory=set)  # once every student runs
    held_for_students: int = 0  # the most cards held at once for students' claims
    held_for_others: int = 0  # ... and, at that moment, for other groups' claims
    notices: dict[str, int] = field(default_factory=dict)  # reason -> sessions given notice
    booking_notice_cards: int = 0
    booking_notices_withdrawn: int = 0
    ticks: int = 0
    loop_runs: int = 0
    wall_s: float = 0.0


_LIVE = text(
    "SELECT request_id, card_id, tier_id, admitted_at FROM gpu_allocations WHERE status = 'live'"
)


async def _run_class(cards: int, students: int, *, before: timedelta, after: timedelta) -> ClassRun:
    pg = start_embedded(Path(tempfile.mkdtemp(prefix="gshare-bench-")) / "pg", delete_on_stop=True)
    try:
        await ensure_database(pg.url(), "gshare")
        url = pg.url("gshare")
        await asyncio.to_thread(upgrade, url)
        engine = make_engine(url, pool_size=2)
        try:
            return await _simulate(make_sessionmaker(engine), cards, students, before, after)
        finally:
            await engine.dispose()
    finally:
        pg.stop()


async def _simulate(
    sessions: async_sessionmaker[AsyncSession],
    cards: int,
    students: int,
    before: timedelta,
    after: timedelta,
) -> ClassRun:
    """From `before` the class to `after` it, on ticks of the worker's queue interval: stop
    what has run its time, sample usage, run the queue loop (again while it pauses sessions),
    note who started and who was paused, then ask for what is asked before the next tick."""
    rnd = random.Random(23)
    begins, ends = CLASS_AT - before, CLASS_AT + after
    world = await _class_world(sessions, cards, students, begins)
    settings = world.settings
    interval = timedelta(seconds=settings.dequeue_interval_seconds)
    tier_ids = {name: t.id for name, t in world.tiers.items()}
    share_of = {
        t.id: card_share(t.kind, t.denominator, t.compute_percent) for t in world.tiers.values()
    }

    # The class books its slices ahead, with the real service.
    async def book(db: AsyncSession) -> bookings.BookingView:
        body = BookingIn(
            group_id=world.class_group,
            tier_id=tier_ids[CLASS_TIER],
            count=students,
            starts_at=CLASS_AT,
            ends_at=CLASS_AT + CLASS_LENGTH,
            weekly_until=CLASS_AT + timedelta(weeks=10),
            title="Vision course, Tuesday lab",
        )
        return await bookings.create(Context(db, world.root, begins), body)

    await run_in_transaction(sessions, book)

    wants = _background(world, cards, begins, ends, rnd)
    run = ClassRun(background_asked=len(wants))
    for user in world.students[:students]:
        at = CLASS_AT + ARRIVALS_OVER * rnd.random()
        wants.append(Want(_id(rnd), user, world.class_group, CLASS_TIER, 120.0, at, student=True))
    wants.sort(key=lambda w: w.asks_at)
    by_request: dict[uuid.UUID, Want] = {}
    live: dict[uuid.UUID, tuple[uuid.UUID, datetime, datetime]] = {}  # -> card, start, end
    ended_by_us: set[uuid.UUID] = set()

    async def ask(want: Want, now: datetime) -> None:
        by_request[want.request_id] = want
        if want.student and not want.resumed:
            run.student_asked[want.request_id] = now
        asked = admission.Ask(want.request_id, want.user_id, want.group_id, tier_ids[want.tier])

        async def work(db: AsyncSession) -> admission.Outcome:
            return await admission.admit(db, asked, now, settings)

        await run_in_transaction(sessions, work)

    async def release(request_id: uuid.UUID, now: datetime) -> None:
        async def work(db: AsyncSession) -> object:
            return await admission.release(db, request_id, now, reason="stopped")

        ended_by_us.add(request_id)
        await run_in_transaction(sessions, work)

    async with sessions() as db:
        card_ids = list(await db.scalars(text("SELECT id FROM gpu_cards")))
    started = time.perf_counter()
    now, next_want = begins, 0
    while now <= ends:
        for request_id in [r for r, (_, _, until) in live.items() if until <= now]:
            await release(request_id, now)
        await tasks.sample_once(sessions, settings, now)
        for _ in range(10):  # a paused session frees a card, which wakes the loop at once
            summary = await tasks.dequeue_once(sessions, settings, now)
            walked = await tasks.preempt_once(sessions, settings, now)
            run.loop_runs += 1
            for request_id in walked.promised:
                if request_id in run.student_asked:
                    run.student_claimed.setdefault(request_id, now)
            if not walked.paused:
                break
        held = [*summary.reserved.values(), *walked.promised]
        for_students = sum(1 for r in held if r in by_request and by_request[r].student)
        if for_students > run.held_for_students:
            run.held_for_students, run.held_for_others = for_students, len(held) - for_students
        # What runs now: who started, who was paused, how full each card is.
        async with sessions() as db:
            rows = list(await db.execute(_LIVE))
        now_live = {r.request_id: r for r in rows}
        for request_id in [r for r in live if r not in now_live]:
            _, since, _ = live.pop(request_id)
            if request_id in ended_by_us:
                continue
            # Paused for another's claim: asked for again with what it had left, as a paused
            # session queues itself to resume.
            want = by_request[request_id]
            if want.student:
                run.students_paused += 1
            elif now >= CLASS_AT:
                run.background_paused_after += 1
            left = want.minutes - (now - since) / timedelta(minutes=1)
            again = replace(
                want, request_id=_id(rnd), minutes=max(left, 1.0), asks_at=now, resumed=True
            )
            await ask(again, now)
        for r in rows:
            if r.request_id in live:
                continue
            want = by_request[r.request_id]
            runs_for = timedelta(minutes=want.minutes)
            # Sessions stop on the queue's ticks, where the loop would be woken by them anyway.
            until = r.admitted_at + math.ceil(runs_for / interval) * interval
            live[r.request_id] = (r.card_id, r.admitted_at, until)
            if r.request_id in run.student_asked:
                waited = r.admitted_at - run.student_asked[r.request_id]
                run.student_waits[r.request_id] = waited.total_seconds()
        if CLASS_AT - timedelta(hours=1) <= now < CLASS_AT:
            used: dict[uuid.UUID, float] = {}
            for r in rows:
                used[r.card_id] = used.get(r.card_id, 0.0) + share_of.get(r.tier_id, 1.0)
            for card_id in card_ids:
                run.utilization.setdefault(card_id, []).append(min(used.get(card_id, 0.0), 1.0))
        if not run.class_cards and len(run.student_waits) == students:
            run.class_cards = {card for r, (card, _, _) in live.items() if by_request[r].student}
        run.ticks += 1
        # The requests asked for before the next tick, each at its own moment.
        following = now + interval
        while next_want < len(wants) and wants[next_want].asks_at < following:
            want = wants[next_want]
            next_want += 1
            await ask(want, max(want.asks_at, now))
        now = following
    run.wall_s = time.perf_counter() - started
    async with sessions() as db:
        found = await db.execute(
            text(
                "SELECT reason, count(*), count(DISTINCT card_id), "
                "count(*) FILTER (WHERE status = 'withdrawn') FROM capacity_notices "
                "WHERE kind = 'preemption' GROUP BY reason"
            )
        )
        for reason, count, on_cards, withdrawn in found:
            run.notices[reason] = int(count)
            if reason == "booking":
                run.booking_notice_cards, run.booking_notices_withdrawn = on_cards, withdrawn
        found = await db.execute(
            text(
                "SELECT reason, count(*) FROM capacity_notices WHERE group_id = :group "
                "GROUP BY reason"
            ),
            {"group": world.class_group},
        )
        run.class_notices = {reason: int(count) for reason, count in found}
    return run


def _id(rnd: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rnd.getrandbits(128), version=4)


def _p95(values: list[float]) -> float:
    """The nearest-rank 95th percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def class_scenario(cards: int, *, quick: bool) -> None:
    students = min(STUDENTS, 2 * cards)  # the booking fits in half the cards
    before = timedelta(minutes=65 if quick else 80)
    after = timedelta(minutes=15 if quick else 30)
    run = asyncio.run(_run_class(cards, students, before=before, after=after))
    interval = timedelta(seconds=Settings(_env_file=None).dequeue_interval_seconds)
    notice = timedelta(minutes=BookingIn.model_fields["notice_minutes"].default)
    limit = (notice + interval).total_seconds()
    print(
        f"class scenario on {cards} cards, on the real database (queue interval {interval}, "
        f"booking notice {notice}); {run.ticks} ticks, {run.loop_runs} runs of the queue loop, "
        f"{run.wall_s:.1f} s:"
    )
    print(
        f"  booking: {students} x {CLASS_TIER} ({cards_for(students, 4)} cards) for the class "
        f"from {CLASS_AT:%H:%M} UTC; other groups asked for {run.background_asked} sessions, "
        f"{BACKGROUND_LOAD:.1f} times what the cards serve"
    )
    waits = list(run.student_waits.values())
    p95 = worst = float("inf")
    if len(waits) == students:
        p95, worst = _p95(waits), max(waits)
        print(
            f"  students: {students} arriving over the first {ARRIVALS_OVER.seconds // 60} min; "
            f"arrival to running p95 {p95:.0f} s, worst {worst:.0f} s, mean "
            f"{statistics.fmean(waits):.0f} s (goal p95 <= {limit:.0f} s)"
        )
    else:
        print(f"  students: {students - len(waits)} of {students} never started")
    claimed = {
        r: (at - run.student_asked[r]).total_seconds() for r, at in run.student_claimed.items()
    }
    if claimed:
        print(
            f"  where the students' time went: {len(claimed)} claimed a card of their own "
            f"(arrival to claim p95 {_p95(list(claimed.values())):.0f} s, worst "
            f"{max(claimed.values()):.0f} s), {students - len(claimed)} started without one; "
            f"at most {run.held_for_students} cards held at once for students' claims, with "
            f"{run.held_for_others} held for other groups' claims"
        )
    booked = [statistics.fmean(run.utilization[c]) for c in run.class_cards if c in run.utilization]
    everything = [statistics.fmean(samples) for samples in run.utilization.values()]
    lent = statistics.fmean(booked) if booked else 0.0
    print(
        f"  utilization in the hour before {CLASS_AT:%H:%M}: {lent:.2f} on the "
        f"{len(run.class_cards)} cards the class runs on (goal >= 0.8), "
        f"{statistics.fmean(everything) if everything else 0.0:.2f} on all {cards}"
    )
    shown = ", ".join(f"{k} {v}" for k, v in sorted(run.notices.items())) or "none"
    print(
        f"  preemption notices: {shown}; the booking's on {run.booking_notice_cards} cards, "
        f"{run.booking_notices_withdrawn} withdrawn before their deadline; other groups' "
        f"sessions paused from {CLASS_AT:%H:%M}: {run.background_paused_after}"
    )
    given = ", ".join(f"{k} {v}" for k, v in sorted(run.class_notices.items())) or "none"
    print(
        f"  students' sessions given notice while the booking runs: {given}; paused: "
        f"{run.students_paused} (each asked for again, within the booking)"
    )
    check_goal(
        p95 <= limit and lent >= 0.8,
        f"students' p95 arrival to running <= {limit:.0f} s (the booking's notice plus one queue "
        "interval) and utilization of the class's cards in the hour before >= 0.8",
        quick=quick,
    )


if __name__ == "__main__":
    main()
