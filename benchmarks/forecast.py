"""Start estimates against what happened: today's median method beside the forecast.

Replays `drain.py`'s backlog (2,000 requests of 1/8, 1/4, 1/2 and exclusive sessions from a
heavy and a light group, arriving at about twice the rate 16 cards serve them) through the real
queue, and a second run of it where session lengths are heavy-tailed (log-normal with the same
means, sigma 1.2). At every tick where requests arrive it records, for each newly arrived
request, the median method's estimated wait (`queue.estimated_wait`: its position among those
waiting for the model, the median length of the tier's last 50 finished sessions, the tier's
slots) and the forecast's p50 and p90 (`forecast.forecast`, on the same snapshot, with the
lengths of the sessions finished so far). At the end it compares with when each started:
- the median absolute error of the estimate relative to the actual wait: |estimate - wait| /
  max(wait, one tick) (goal for the forecast's p50: at most 0.25);
- the p90's coverage: the share of requests that started by their p90 (goal: between 0.85 and
  0.95, neither optimistic nor uselessly wide).

Then the forecast's cost on a 10,000-card snapshot (every card busy with a mix of tiers) with
2,000 waiting requests, beside the median method on the same snapshot (goal: at most 200 ms per
refresh). A missed goal exits 1.

    .venv/bin/python benchmarks/forecast.py [--requests 2000] [--cards 16] [--quick]

--quick runs 200 requests on 4 cards and a 1,000-card snapshot, and checks no goal.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _goals import check_goal
from drain import (
    DRAIN_FAIR,
    MEMORY_MIB,
    MODEL,
    START,
    TICK,
    TIERS,
    TickView,
    backlog_window,
    make_jobs,
    replay,
)
from gshare.capacity.forecast import (
    ForecastSettings,
    History,
    Outcome,
    RunningSession,
    corrected,
    correction,
    draws_for,
    forecast,
)
from gshare.capacity.placement import (
    CapacitySnapshot,
    CardSnapshot,
    PlacementRequest,
    RequestKind,
)
from gshare.capacity.queue import (
    FairShareSettings,
    QueuedRequest,
    Usage,
    estimated_wait,
    priorities,
)

HISTORY = 200  # finished sessions per tier the forecast learns from
MEDIAN_OF = 50  # as the service's median method


@dataclass
class Guess:
    arrival_tick: int
    median_wait: float  # seconds
    p50_wait: float  # corrected by the outcomes so far, as the service shows it
    p90_wait: float
    raw: Outcome  # the simulation's own, before correction; `waited` filled in once started


def _observer(
    guesses: dict[uuid.UUID, Guess], fair: FairShareSettings, draws: int
) -> Callable[[TickView], None]:
    known: set[uuid.UUID] = set()
    outcomes: list[Outcome] = []
    told: set[uuid.UUID] = set()

    def learn(view: TickView) -> None:
        """Outcomes of the requests that started since the last tick, in start order."""
        jobs = [job for slots in view.running.values() for job, _, _ in slots.values()]
        fresh = [
            j
            for j in [*jobs, *view.finished[-len(jobs) - 50 :]]
            if j.started_tick is not None and j.queued.id in guesses and j.queued.id not in told
        ]
        for job in sorted(fresh, key=lambda j: (j.started_tick, j.queued.id)):
            told.add(job.queued.id)
            guess = guesses[job.queued.id]
            assert job.started_tick is not None
            waited = (job.started_tick - guess.arrival_tick) * TICK.total_seconds()
            outcomes.append(Outcome(guess.raw.likely, guess.raw.surely, waited))

    def observe(view: TickView) -> None:
        learn(view)
        new = [q for q in view.queued if q.id not in known]
        if not new:
            return
        known.update(q.id for q in new)
        by_tier: dict[str, list[float]] = {}
        by_owner: dict[tuple[uuid.UUID, str], list[float]] = {}
        for job in reversed(view.finished):
            tier = job.queued.request.tier
            seconds = job.duration_ticks * TICK.total_seconds()
            if len(by_tier.setdefault(tier, [])) < HISTORY:
                by_tier[tier].append(seconds)
            owned = by_owner.setdefault((job.queued.user_id, tier), [])
            if len(owned) < HISTORY:
                owned.append(seconds)
        running = [
            RunningSession(card, tier, job.queued.user_id, START + job.started_tick * TICK)
            for card, slots in view.running.items()
            for job, tier, _ in slots.values()
            if job.started_tick is not None
        ]
        raw = forecast(
            view.snapshot,
            running,
            view.queued,
            view.usage,
            view.now,
            History(by_tier, by_owner),
            fair,
            ForecastSettings(draws=draws, tick=TICK),
        )
        estimates = corrected(raw, correction(outcomes, TICK), view.now, TICK)
        order = priorities(view.queued, view.usage, view.now, fair)
        position = {p.request_id: n for n, p in enumerate(order, 1)}
        for q in new:
            est = estimates[q.id]
            lengths = by_tier.get(q.request.tier, [])[:MEDIAN_OF]
            typical = (
                timedelta(seconds=statistics.median(lengths)) if lengths else timedelta(hours=1)
            )
            per_card = q.request.slots_per_card if q.request.kind == "fraction" else 1
            median = estimated_wait(position[q.id], typical, len(view.snapshot.cards) * per_card)
            guesses[q.id] = Guess(
                view.tick,
                median.total_seconds(),
                _seconds(est.likely, view),
                _seconds(est.surely, view),
                Outcome(_seconds(raw[q.id].likely, view), _seconds(raw[q.id].surely, view), 0),
            )

    return observe


def _seconds(at: datetime | None, view: TickView) -> float:
    return math.inf if at is None else (at - view.now).total_seconds()


def _lognormal(rnd: random.Random, mean: float) -> float:
    sigma = 1.2
    return rnd.lognormvariate(math.log(mean) - sigma**2 / 2, sigma)


def calibration(
    name: str, requests: int, cards: int, heavy_tail: bool, draws: int
) -> dict[str, float]:
    rnd = random.Random(11)
    arrivals = make_jobs(
        requests, backlog_window(requests, cards), rnd, _lognormal if heavy_tail else None
    )
    guesses: dict[uuid.UUID, Guess] = {}
    started = time.perf_counter()
    run = replay(arrivals, cards, DRAIN_FAIR, _observer(guesses, DRAIN_FAIR, draws))
    elapsed = time.perf_counter() - started
    tick = TICK.total_seconds()
    errors: dict[str, list[float]] = {"median": [], "raw": [], "p50": []}
    covered = raw_covered = 0
    for job in run.finished:
        guess = guesses[job.queued.id]
        assert job.started_tick is not None
        actual = (job.started_tick - guess.arrival_tick) * tick
        for method, estimate in (
            ("median", guess.median_wait),
            ("raw", guess.raw.likely),
            ("p50", guess.p50_wait),
        ):
            errors[method].append(abs(estimate - actual) / max(actual, tick))
        covered += actual <= guess.p90_wait
        raw_covered += actual <= guess.raw.surely
    out = {
        "median": statistics.median(errors["median"]),
        "raw": statistics.median(errors["raw"]),
        "p50": statistics.median(errors["p50"]),
        "raw_coverage": raw_covered / len(run.finished),
        "coverage": covered / len(run.finished),
    }
    print(
        f"{name}: {requests} requests on {cards} cards, {len(guesses)} forecasts recorded "
        f"in {elapsed:.1f} s"
    )
    print(
        f"  median absolute error relative to the wait: median method {out['median']:.2f}, "
        f"simulation alone {out['raw']:.2f}, forecast p50 {out['p50']:.2f} (goal at most 0.25)"
    )
    print(
        f"  p90 coverage: simulation alone {out['raw_coverage']:.2f}, "
        f"forecast {out['coverage']:.2f} (goal 0.85 to 0.95)"
    )
    return out


def cost(cards: int, waiting: int, draws: int) -> float:
    """Seconds per forecast on a snapshot of `cards` busy cards and `waiting` requests."""
    rnd = random.Random(5)
    now = START + timedelta(days=3)
    snapshot_cards = []
    running = []
    users = [uuid.UUID(int=100 + n) for n in range(300)]
    lengths_by_tier: dict[str, list[float]] = {}
    for tier, _, _, mean in TIERS:
        key = f"{MODEL}:{tier}"
        lengths_by_tier[key] = [
            rnd.expovariate(1 / mean) * TICK.total_seconds() for _ in range(200)
        ]
    for n in range(cards):
        card_id = uuid.UUID(int=n + 1)
        tier, per_card, _, mean = rnd.choices(TIERS, weights=[t[2] for t in TIERS])[0]
        key = f"{MODEL}:{tier}"
        snapshot_cards.append(
            CardSnapshot(
                card_id,
                uuid.UUID(int=0),
                f"node-{n // 8}",
                MODEL,
                MEMORY_MIB,
                10,
                carved_tier=key,
                allocated_slots=frozenset(range(per_card)),
            )
        )
        for _ in range(per_card):
            elapsed = rnd.expovariate(1 / mean) * TICK.total_seconds()
            running.append(
                RunningSession(card_id, key, rnd.choice(users), now - timedelta(seconds=elapsed))
            )
    queued = []
    for n in range(waiting):
        tier, per_card, _, _ = rnd.choices(TIERS, weights=[t[2] for t in TIERS])[0]
        kind: RequestKind = "exclusive" if tier == "exclusive" else "fraction"
        request = PlacementRequest(
            uuid.UUID(int=10**7 + n),
            f"{MODEL}:{tier}",
            kind,
            MODEL,
            MEMORY_MIB // per_card,
            100 // per_card,
            per_card,
        )
        queued.append(
            QueuedRequest(
                request,
                rnd.choice(users),
                uuid.UUID(int=rnd.randrange(20)),
                now - timedelta(minutes=rnd.randrange(240)),
            )
        )
    snapshot = CapacitySnapshot(tuple(snapshot_cards))
    history = History(lengths_by_tier)
    usage = Usage({u: rnd.random() for u in users}, {})
    fair = FairShareSettings()

    def median_method() -> None:
        order = priorities(queued, usage, now, fair)
        by_tier = Counter[str]()
        for p in order:
            by_tier[p.request_id.hex] += 1  # the position walk the service does
        for tier_key, lengths in lengths_by_tier.items():
            statistics.median(lengths[:MEDIAN_OF])
            assert tier_key

    started = time.perf_counter()
    median_method()
    baseline = time.perf_counter() - started
    runs = 3
    started = time.perf_counter()
    for seed in range(runs):
        estimates = forecast(
            snapshot,
            running,
            queued,
            usage,
            now,
            history,
            fair,
            ForecastSettings(draws=draws, seed=seed),
        )
    seconds = (time.perf_counter() - started) / runs
    beyond = sum(1 for e in estimates.values() if e.surely is None)
    print(
        f"forecast on {cards} cards ({len(running)} sessions) and {waiting} waiting: "
        f"{seconds * 1000:.0f} ms per refresh "
        f"({draws_for(len(running) + 5 * waiting, draws)} draws; {beyond} beyond the horizon), "
        f"median method {baseline * 1000:.1f} ms: ratio {seconds / max(baseline, 1e-9):.0f}"
    )
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--cards", type=int, default=16)
    parser.add_argument("--draws", type=int, default=ForecastSettings().draws)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    big_cards, big_waiting = 10_000, 2_000
    if args.quick:
        args.requests, args.cards, big_cards, big_waiting = 200, 4, 1_000, 200
    results = [
        calibration("exponential lengths", args.requests, args.cards, False, args.draws),
        calibration("heavy-tailed lengths", args.requests, args.cards, True, args.draws),
    ]
    seconds = cost(big_cards, big_waiting, args.draws)
    met = all(r["p50"] <= 0.25 and 0.85 <= r["coverage"] <= 0.95 for r in results)
    check_goal(
        met and seconds <= 0.2,
        "forecast p50 error <= 0.25, p90 coverage 0.85-0.95, <= 200 ms per refresh",
        quick=args.quick,
    )


if __name__ == "__main__":
    main()
