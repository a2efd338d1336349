"""Metering: one worker tick over every running GPU session, against a single SQL statement that
updates the same rows, on the same server in the same run.

    .venv/bin/python benchmarks/metering.py [--sessions 10000] [--users 1000] [--rounds 3] [--quick]

The world is built with the real operations: a group wallet funds `--users` members' wallets,
and each member runs `--sessions / --users` GPU sessions at one of a few hourly rates, each with
a hold placed by `operations.place_hold`, as admission leaves them. A round advances the clock
by a minute and times `tasks.meter`, the worker's tick: batches of 1000 sessions, each in one
transaction that locks the batch's sessions, holds and wallets, reads the wallets' lots,
captures from every hold (a capture transfer with its two entries each, lots drawn, an event
per wallet changed) and records how far each session is metered.
The baseline is the least any tick can do: one statement that writes the same rows given them
precomputed: it moves every session's metered_until and cost, its hold's captured and reserved
and its wallet's balance and held (three UPDATE ... FROM unnest), and inserts each hold's
capture transfer with its two entries. It runs in a
transaction that is rolled back, so the tick after it finds the rows as they were; only the
statement is timed. The figure is the median over the rounds of tick time / baseline time,
with a goal of at most 3; a run that misses it exits 1. --quick meters 200 sessions once and
checks no goal (make bench-smoke).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import insert, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.credits import operations, repository
from gshare.credits.amounts import MICRO
from gshare.identity.models import User
from gshare.kit.db import make_engine, make_sessionmaker
from gshare.kit.embedded_db import ensure_database, start_embedded
from gshare.kit.schema_version import upgrade
from gshare.kit.settings import Settings
from gshare.sessions import metering, tasks
from gshare.sessions.models import InteractiveSession

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _goals import check_goal

GOAL = 3.0
PRICES = [MICRO, 2 * MICRO, 4 * MICRO, 8 * MICRO, 3_333_333]
HOLD_WINDOW_SECONDS = 3600

_DUE = text(
    "SELECT s.id, s.hold_id, h.account_id, s.price_per_hour, s.billed_from, s.metered_until "
    "FROM sessions s JOIN credit_holds h ON h.id = s.hold_id WHERE s.hold_id IS NOT NULL"
)
_BASELINE = text(
    "WITH s AS (UPDATE sessions AS s SET metered_until = v.until, cost = s.cost + v.amount "
    "FROM unnest(CAST(:session_ids AS uuid[]), CAST(:untils AS timestamptz[]), "
    "CAST(:amounts AS bigint[])) AS v(id, until, amount) WHERE s.id = v.id RETURNING 1), "
    "h AS (UPDATE credit_holds AS h SET captured = h.captured + v.amount, "
    "reserved = h.reserved - v.amount "
    "FROM unnest(CAST(:hold_ids AS uuid[]), CAST(:amounts AS bigint[])) AS v(id, amount) "
    "WHERE h.id = v.id RETURNING 1), "
    "w AS (UPDATE credit_accounts AS a SET balance = a.balance - v.amount, "
    "held = a.held - v.amount "
    "FROM unnest(CAST(:wallet_ids AS uuid[]), CAST(:wallet_amounts AS bigint[])) "
    "AS v(id, amount) WHERE a.id = v.id RETURNING 1), "
    # The capture transfer of each session's hold, and its two entries.
    "c AS (SELECT * FROM unnest(CAST(:transfer_ids AS uuid[]), CAST(:hold_ids AS uuid[]), "
    "CAST(:debits AS uuid[]), CAST(:amounts AS bigint[])) AS c(id, hold_id, debit, amount)), "
    "t AS (INSERT INTO credit_transfers "
    "(id, kind, debit_account_id, credit_account_id, amount, hold_id, created_at) "
    "SELECT id, 'capture', debit, :consumption, amount, hold_id, :at FROM c RETURNING id), "
    "e AS (INSERT INTO credit_entries (transfer_id, account_id, amount, balance_after, "
    "created_at) SELECT c.id, c.debit, -c.amount, 0, :at FROM c JOIN t ON t.id = c.id "
    "UNION ALL SELECT c.id, CAST(:consumption AS uuid), c.amount, NULL, :at "
    "FROM c JOIN t ON t.id = c.id RETURNING 1) "
    "SELECT (SELECT count(*) FROM s), (SELECT count(*) FROM h), (SELECT count(*) FROM w), "
    "(SELECT count(*) FROM e)"
)


async def setup(
    sessions: async_sessionmaker[AsyncSession], now: datetime, *, users: int, per_user: int
) -> int:
    """The members, their funded wallets, and their running sessions with holds placed."""
    rng = random.Random(20261201)
    async with sessions() as db, db.begin():
        org = await repository.account_id(db, "org", uuid.uuid4(), now)
        await operations.mint(db, wallet_id=org, amount=10**9 * MICRO, now=now)
        group = await repository.account_id(db, "group", uuid.uuid4(), now)
        await operations.move(
            db, from_id=org, to_id=group, amount=10**8 * MICRO, kind="allocation", now=now
        )
        user_ids = [uuid.uuid4() for _ in range(users)]
        await db.execute(
            insert(User),
            [
                {
                    "id": user_id,
                    "email": f"member-{n}@bench.example.org",
                    "name": f"Member {n}",
                    "password_hash": "-",
                    "must_change_password": False,
                    "created_at": now,
                    "password_changed_at": now,
                }
                for n, user_id in enumerate(user_ids)
            ],
        )
        wallets = await repository.ensure_accounts(db, "user", user_ids, now)
        for wallet in wallets.values():
            await operations.move(
                db, from_id=group, to_id=wallet.id, amount=10**4 * MICRO, kind="allocation", now=now
            )
    # A transaction per member, as admission places one hold per transaction.
    rows = []
    for user_id in user_ids:
        async with sessions() as db, db.begin():
            for _ in range(per_user):
                session_id = uuid.uuid4()
                price = rng.choice(PRICES)
                admitted = now - timedelta(milliseconds=rng.randrange(60_000))
                hold = await operations.place_hold(
                    db,
                    wallet_id=wallets[user_id].id,
                    session_id=session_id,
                    rate_per_hour=price,
                    window_seconds=HOLD_WINDOW_SECONDS,
                    now=admitted,
                    for_group_wallet_id=group,
                )
                rows.append(
                    {
                        "id": session_id,
                        "owner_id": user_id,
                        "session_type": "jupyterlab",
                        "desired_state": "Running",
                        "created_at": admitted,
                        "phase": "Running",
                        "state": "running",
                        "state_changed_at": admitted,
                        "running_since": admitted,
                        "request_id": uuid.uuid4(),
                        "hold_id": hold.id,
                        "price_per_hour": price,
                        "billed_from": admitted,
                        "metered_until": admitted,
                    }
                )
    async with sessions() as db, db.begin():
        await db.execute(insert(InteractiveSession), rows)
        await db.execute(text("ANALYZE"))
    return len(rows)


async def baseline(sessions: async_sessionmaker[AsyncSession], now: datetime) -> float:
    """Seconds the one statement takes to write what a tick at `now` writes to the same rows."""
    async with sessions() as db:
        due = (await db.execute(_DUE)).all()
        consumption = await repository.account_id(db, "consumption", None, now)
        await db.commit()
    amounts, untils = [], []
    per_wallet: dict[uuid.UUID, int] = {}
    for row in due:
        owed = metering.capture(row.price_per_hour, row.billed_from, row.metered_until, now)
        amounts.append(owed.amount)
        untils.append(owed.until)
        per_wallet[row.account_id] = per_wallet.get(row.account_id, 0) + owed.amount
    params = {
        "session_ids": [row.id for row in due],
        "untils": untils,
        "amounts": amounts,
        "hold_ids": [row.hold_id for row in due],
        "wallet_ids": list(per_wallet),
        "wallet_amounts": list(per_wallet.values()),
        "transfer_ids": [uuid.uuid4() for _ in due],
        "debits": [row.account_id for row in due],
        "consumption": consumption,
        "at": now,
    }
    async with sessions() as db:
        await db.execute(text("SELECT 1"))  # the connection, out of the timing
        started = time.perf_counter()
        counts = (await db.execute(_BASELINE, params)).one()
        elapsed = time.perf_counter() - started
        await db.rollback()
    assert tuple(counts) == (len(due), len(due), len(per_wallet), 2 * len(due)), counts
    return elapsed


async def tick(
    sessions: async_sessionmaker[AsyncSession], settings: Settings, now: datetime, expected: int
) -> float:
    started = time.perf_counter()
    metered = await tasks.meter(sessions, settings, now)
    elapsed = time.perf_counter() - started
    assert metered == expected, (metered, expected)
    return elapsed


async def run(url: str, *, users: int, per_user: int, rounds: int) -> list[tuple[float, float]]:
    engine = make_engine(url, pool_size=2)
    sessions = make_sessionmaker(engine)
    settings = Settings(_env_file=None)
    start = datetime.now(UTC)
    count = await setup(sessions, start, users=users, per_user=per_user)
    times = []
    for n in range(1, rounds + 1):
        now = start + timedelta(minutes=n)
        base = await baseline(sessions, now)
        times.append((await tick(sessions, settings, now, count), base))
    await engine.dispose()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--users", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, goals not checked")
    opts = parser.parse_args()
    if opts.quick:
        opts.sessions, opts.users, opts.rounds = 200, 20, 1
    per_user = max(1, opts.sessions // opts.users)
    pg = start_embedded(Path(tempfile.mkdtemp(prefix="gshare-bench-")) / "pg", delete_on_stop=True)
    try:
        asyncio.run(ensure_database(pg.url(), "gshare"))
        url = pg.url("gshare")
        upgrade(url)
        times = asyncio.run(run(url, users=opts.users, per_user=per_user, rounds=opts.rounds))
    finally:
        pg.stop()
    count = opts.users * per_user
    for n, (ours, base) in enumerate(times, 1):
        print(
            f"round {n}: metering tick {ours * 1000:8.1f} ms, "
            f"one statement {base * 1000:8.1f} ms, ratio {ours / base:.2f}"
        )
    ratio = statistics.median(ours / base for ours, base in times)
    tick_ms = statistics.median(ours for ours, _ in times) * 1000
    base_ms = statistics.median(base for _, base in times) * 1000
    print(f"metering tick, {count} sessions of {opts.users} owners: {tick_ms:8.1f} ms")
    print(f"one statement writing the same rows:           {base_ms:8.1f} ms")
    print(f"ratio tick/statement: {ratio:.2f} (goal <= {GOAL:g})")
    check_goal(ratio <= GOAL, f"ratio tick/statement at most {GOAL:g}", quick=opts.quick)


if __name__ == "__main__":
    main()
