"""Inventory reports: the time per card to apply a cluster's report of 100, 1,000 and 10,000
cards through `service.apply_inventory`, first (every card new) and again unchanged.

    .venv/bin/python benchmarks/inventory.py [--sizes 100,1000,10000] [--rounds 3] [--quick]

Each size gets a fresh connected cluster with 8 cards to a node; a round applies the report
once (inserts every card) and then again with the next sequence and the same cards (reads them
all, writes none but their last-seen time). The time is one transaction's, commit included,
not the report's validation; the median of the rounds is kept. The baseline is the smallest
size, measured in the same run: the goal is a flat cost per card, the largest size's at most
1.5 times the smallest's, checked for the first and the unchanged apply each on its own; a run
that misses it exits 1. --quick runs tiny sizes once and checks no goal (make bench-smoke).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.capacity import service
from gshare.capacity.schemas import InventoryReport
from gshare.clusters.models import Cluster
from gshare.kit.db import make_engine, make_sessionmaker
from gshare.kit.embedded_db import ensure_database, start_embedded
from gshare.kit.schema_version import upgrade

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _goals import check_goal

GOAL = 1.5
MODELS = (("NVIDIA-A100-SXM4-80GB", 81920), ("NVIDIA-H100-80GB-HBM3", 81559))


def report(sequence: int, cards: int) -> InventoryReport:
    nodes: dict[str, list[dict[str, object]]] = {}
    for n in range(cards):
        model, memory = MODELS[(n // 8) % len(MODELS)]
        nodes.setdefault(f"gpu-node-{n // 8:05d}", []).append(
            {
                "uuid": f"GPU-{n:06d}",
                "model": model,
                "memory_mib": memory,
                "cores": 100,
                "split_count": 8,
                "numa": n % 8 // 4,
                "healthy": True,
            }
        )
    return InventoryReport.model_validate(
        {"sequence": sequence, "nodes": [{"name": k, "cards": v} for k, v in nodes.items()]}
    )


async def new_cluster(sessions: async_sessionmaker[AsyncSession]) -> uuid.UUID:
    async with sessions() as db, db.begin():
        cluster = Cluster(
            id=uuid.uuid4(),
            name=f"bench-{uuid.uuid4().hex[:8]}",
            api_server="https://127.0.0.1:1",
            status="connected",
            status_message="",
            inventory_sequence=0,
            created_at=datetime.now(UTC),
        )
        db.add(cluster)
    return cluster.id


async def timed_apply(
    sessions: async_sessionmaker[AsyncSession], cluster_id: uuid.UUID, body: InventoryReport
) -> float:
    started = time.perf_counter()
    async with sessions() as db, db.begin():
        applied = await service.apply_inventory(db, cluster_id, body, datetime.now(UTC))
    elapsed = time.perf_counter() - started
    if not applied:
        raise SystemExit("a report was not applied")
    return elapsed


async def measure(url: str, sizes: list[int], rounds: int) -> dict[int, tuple[float, float]]:
    """Seconds per card, first and unchanged, by size (medians of the rounds)."""
    engine = make_engine(url, pool_size=2)
    sessions = make_sessionmaker(engine)
    await timed_apply(sessions, await new_cluster(sessions), report(1, 8))  # warm up
    firsts: dict[int, list[float]] = {n: [] for n in sizes}
    agains: dict[int, list[float]] = {n: [] for n in sizes}
    for _ in range(rounds):
        for n in sizes:
            first, again = report(1, n), report(2, n)
            cluster_id = await new_cluster(sessions)
            firsts[n].append(await timed_apply(sessions, cluster_id, first) / n)
            agains[n].append(await timed_apply(sessions, cluster_id, again) / n)
    await engine.dispose()
    return {n: (statistics.median(firsts[n]), statistics.median(agains[n])) for n in sizes}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, goals not checked")
    opts = parser.parse_args()
    sizes = sorted(int(s) for s in opts.sizes.split(","))
    if opts.quick:
        sizes, opts.rounds = [16, 160], 1
    pg = start_embedded(Path(tempfile.mkdtemp(prefix="gshare-bench-")) / "pg", delete_on_stop=True)
    try:
        asyncio.run(ensure_database(pg.url(), "gshare"))
        url = pg.url("gshare")
        upgrade(url)
        per_card = asyncio.run(measure(url, sizes, opts.rounds))
    finally:
        pg.stop()
    print(f"apply_inventory, 8 cards a node, median of {opts.rounds} round(s), µs per card:")
    print(f"{'cards':>8} {'first':>10} {'unchanged':>10}")
    for n in sizes:
        first, again = per_card[n]
        print(f"{n:>8} {first * 1e6:>10.1f} {again * 1e6:>10.1f}")
    small, large = sizes[0], sizes[-1]
    first_ratio = per_card[large][0] / per_card[small][0]
    again_ratio = per_card[large][1] / per_card[small][1]
    print(f"per-card cost {large} vs {small} cards: first {first_ratio:.2f}x, ", end="")
    print(f"unchanged {again_ratio:.2f}x (goal <= {GOAL}x, each on its own)")
    check_goal(
        max(first_ratio, again_ratio) <= GOAL,
        f"per-card cost at {large} cards at most {GOAL}x that at {small}, first and unchanged",
        quick=opts.quick,
    )


if __name__ == "__main__":
    main()
