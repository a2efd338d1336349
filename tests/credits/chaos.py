"""One chaos client for the ledger concurrency test: random operations against the real database.

Run as `python -m tests.credits.chaos URL PLAN_FILE PROGRESS_FILE SEED OPS`. It appends one byte
to PROGRESS_FILE for every operation that finished (committed or refused as expected), so the
parent can count operations across kills. The parent kills some clients with SIGKILL at random
moments, usually in the middle of a transaction.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from gshare.credits import operations, tasks
from gshare.credits.ledger import HoldExhausted, InsufficientCredits
from gshare.credits.operations import HoldResolved
from gshare.kit.db import make_engine, make_sessionmaker, run_in_transaction
from gshare.kit.errors import Conflict, Unprocessable
from gshare.kit.idempotency import StoredResult, fingerprint, run_once

EXPECTED = (InsufficientCredits, HoldExhausted, HoldResolved, Conflict, Unprocessable)
ACTOR = uuid.UUID("00000000-0000-0000-0000-00000000a11c")


async def main(url: str, plan_path: str, progress_path: str, seed: int, ops: int) -> None:
    plan = json.loads(Path(plan_path).read_text())
    org = uuid.UUID(plan["org"])
    groups = {uuid.UUID(g): [uuid.UUID(u) for u in users] for g, users in plan["groups"].items()}
    pairs = [(org, g) for g in groups] + [(g, u) for g, us in groups.items() for u in us]
    users = [u for us in groups.values() for u in us]
    group_of = {u: g for g, us in groups.items() for u in us}
    rng = random.Random(seed)
    engine = make_engine(url, pool_size=2)
    sessions = make_sessionmaker(engine)
    progress = Path(progress_path)

    def now() -> datetime:
        return datetime.now(UTC)

    async def dawdle(db: AsyncSession) -> None:
        # Widen the window in which a kill lands mid-transaction.
        if rng.random() < 0.3:
            await db.execute(text("SELECT pg_sleep(:s)"), {"s": rng.random() * 0.02})

    async def transfer(db: AsyncSession) -> object:
        parent, child = rng.choice(pairs)
        source, target = (parent, child) if rng.random() < 0.6 else (child, parent)
        await dawdle(db)
        return await operations.move(
            db,
            from_id=source,
            to_id=target,
            amount=rng.randint(1, 40_000_000),
            kind="allocation" if source == parent else "return",
            now=now(),
        )

    async def hold(db: AsyncSession) -> object:
        await dawdle(db)
        user = rng.choice(users)
        return await operations.place_hold(
            db,
            wallet_id=user,
            session_id=uuid.uuid4(),
            rate_per_hour=rng.randint(100_000, 5_000_000),
            window_seconds=3600,
            now=now(),
            for_group_wallet_id=group_of[user] if rng.random() < 0.5 else None,
        )

    async def on_open_hold(db: AsyncSession) -> object:
        row = (
            await db.execute(
                text(
                    "SELECT id, reserved FROM credit_holds WHERE status = 'open' "
                    "ORDER BY random() LIMIT 1"
                )
            )
        ).first()
        if row is None:
            return None
        choice = rng.random()
        await dawdle(db)
        if choice < 0.35:
            return await operations.capture(
                db, hold_id=row.id, amount=rng.randint(1, max(1, row.reserved)), now=now()
            )
        if choice < 0.5:
            return await operations.extend_hold(db, hold_id=row.id, now=now())
        if choice < 0.85:
            return await operations.settle_hold(
                db, hold_id=row.id, used=rng.randint(0, row.reserved + 10), now=now()
            )
        return await operations.release_hold(db, hold_id=row.id, now=now())

    async def replay(db: AsyncSession) -> object:
        # Keys are shared by every client: the same key always means the same transfer, so
        # replays must return the stored result; now and then a key is misused on purpose.
        index = rng.randrange(60)
        parent, child = pairs[index % len(pairs)]
        params = {"from": str(parent), "to": str(child), "amount": 1 + index}
        if rng.random() < 0.1:
            params["amount"] += 1
        key = f"chaos-{index}"

        async def work() -> StoredResult:
            await dawdle(db)
            transfer_id = await operations.move(
                db, from_id=parent, to_id=child, amount=1 + index, kind="allocation", now=now()
            )
            return StoredResult(201, str(transfer_id).encode())

        return await run_once(
            db,
            actor_id=ACTOR,
            key=key,
            print_=fingerprint("transfer", params),
            now=now(),
            work=work,
        )

    for _ in range(ops):
        pick = rng.random()
        try:
            if pick < 0.05:
                period = rng.choice(["2026-01", "2026-02", "2026-03"])
                await tasks.refill_month(sessions, period, now())
            else:
                work = (
                    transfer
                    if pick < 0.45
                    else hold
                    if pick < 0.6
                    else (on_open_hold if pick < 0.9 else replay)
                )
                await run_in_transaction(sessions, work)
        except EXPECTED:
            pass
        with progress.open("ab") as out:
            out.write(b".")
    await engine.dispose()


if __name__ == "__main__":
    url, plan_file, progress_file, seed, ops = sys.argv[1:6]
    asyncio.run(main(url, plan_file, progress_file, int(seed), int(ops)))
