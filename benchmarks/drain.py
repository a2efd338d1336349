"""Draining a backlog through the real queue code: utilization, waits per tier and per group.

2,000 requests (1/8, 1/4, 1/2 and exclusive) from a heavy and a light group arrive over a
window faster than 16 cards can serve them; each runs for a simulated duration. Every simulated
tick ends what finished, samples usage, and runs `dequeue` over a fresh snapshot, carrying its
reservations and usage to the next tick. Prints the mean card utilization while a backlog
exists (goal at least 0.8), the mean wait per tier, the worst exclusive wait over the mean
exclusive wait (goal at most 5) and each group's mean wait (the light group's no worse than the
heavy group's); a missed goal exits 1.

    .venv/bin/python benchmarks/drain.py [--requests 2000] [--cards 16] [--quick]

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
from gshare.capacity.placement import CapacitySnapshot, CardSnapshot, PlacementRequest
from gshare.capacity.preemption import (
    Claim,
    Preemption,
    PreemptionIndex,
    PreemptionSnapshot,
    RunningSession,
    fair_shares,
)
from gshare.capacity.queue import FairShareSettings, QueuedRequest, Usage, dequeue, sample_usage

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


def make_jobs(count: int, window_ticks: int, rnd: random.Random) -> list[tuple[int, Job]]:
    """(arrival tick, job); the heavy group sends three requests in four."""
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
        duration = max(1, round(rnd.expovariate(1 / mean)))
        jobs.append((arrival, Job(queued, duration)))
    jobs.sort(key=lambda pair: (pair[0], pair[1].queued.id))
    return jobs


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
    # Arrivals come at about twice the rate the cards can serve, so a backlog builds.
    mean_cards_ticks = sum(share * mean / per for _, per, share, mean in TIERS)
    window = max(1, round(args.requests * mean_cards_ticks / args.cards / 2))
    arrivals = make_jobs(args.requests, window, rnd)
    fair = FairShareSettings(
        half_life=timedelta(hours=2),
        sampling_interval=TICK,
        wait_bonus_per_hour=1.0,
        starvation_limit=timedelta(hours=3),
    )
    card_ids = [uuid.UUID(int=n + 1) for n in range(args.cards)]
    # card -> slot -> (job, tier share, ends at tick)
    running: dict[uuid.UUID, dict[int, tuple[Job, str, int]]] = {c: {} for c in card_ids}
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
        cards = tuple(
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
        )
        queued = [job.queued for job in waiting.values()]
        result = dequeue(
            CapacitySnapshot(cards, reserved), queued, now, usage, lambda _: True, fair
        )
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
            backlog_utilization.append(in_use / args.cards)
        tick += 1
    elapsed = time.perf_counter() - started

    def wait_hours(job: Job) -> float:
        assert job.started_tick is not None
        return (START + job.started_tick * TICK - job.queued.enqueued_at) / timedelta(hours=1)

    utilization = statistics.fmean(backlog_utilization) if backlog_utilization else 0.0
    print(
        f"{args.requests} requests on {args.cards} cards: {tick} ticks of {TICK}, {elapsed:.1f} s"
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
                queued = replace(
                    session.job.queued,
                    request=replace(
                        session.job.queued.request, id=uuid.UUID(int=2 * 10**9 + requeued)
                    ),
                    enqueued_at=now,
                )
                waiting[queued.id] = Job(queued, left)
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


if __name__ == "__main__":
    main()
