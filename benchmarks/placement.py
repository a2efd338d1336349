"""Pure placement decisions per second on an inventory of 10,000 cards, against a linear scan.

Builds one snapshot of mixed models and pools (hami-core cards, some already carved and partly
used, and MIG cards with instances), then places a mixed stream of fraction, exclusive and MIG
requests through one `PlacementIndex`, assuming each decision as dequeue does. The baseline,
run beside it on the same snapshot and requests, is a naive linear scan that applies the same
rules to every card for every decision; both must choose the same cards. Prints decisions per
second, the ratio to the goal (10,000/s; below it the run exits 1) and the ratio to the scan.

    .venv/bin/python benchmarks/placement.py [--cards 10000] [--decisions 10000] [--quick]

--quick runs tiny sizes and checks no goal (make bench-smoke).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import uuid
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--decisions", type=int, default=10_000)
    parser.add_argument("--baseline-decisions", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.cards, args.decisions, args.baseline_decisions, args.rounds = 200, 200, 50, 1

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


if __name__ == "__main__":
    main()
