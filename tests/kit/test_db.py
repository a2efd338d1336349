"""Transactions: a real deadlock is retried; a conflict that never clears fails clearly."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text

from gshare.kit.db import Busy, run_in_transaction


async def test_a_deadlock_is_retried_and_both_transactions_finish(sessions) -> None:
    async with sessions() as db, db.begin():
        await db.execute(text("CREATE TABLE counters (id int PRIMARY KEY, n int)"))
        await db.execute(text("INSERT INTO counters VALUES (1, 0), (2, 0)"))
    both_hold_one = asyncio.Barrier(2)
    attempts: list[str] = []

    def crossing(first: int, second: int, name: str):
        async def work(db) -> None:
            attempts.append(name)
            await db.execute(text("UPDATE counters SET n = n + 1 WHERE id = :i"), {"i": first})
            if attempts.count(name) == 1:
                await both_hold_one.wait()  # each holds one row and reaches for the other
            await db.execute(text("UPDATE counters SET n = n + 1 WHERE id = :i"), {"i": second})

        return work

    await asyncio.gather(
        run_in_transaction(sessions, crossing(1, 2, "a")),
        run_in_transaction(sessions, crossing(2, 1, "b")),
    )
    assert len(attempts) == 3  # one of the two was chosen as the deadlock victim and retried
    async with sessions() as db:
        counts = (await db.execute(text("SELECT n FROM counters ORDER BY id"))).scalars()
        assert list(counts) == [2, 2]


async def test_a_conflict_that_never_clears_fails_with_busy(sessions) -> None:
    async def always_conflicting(db) -> None:
        await db.execute(text("SET LOCAL lock_timeout = '1ms'"))
        await db.execute(
            text("DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '40001'; END $$")
        )

    with pytest.raises(Busy):
        await run_in_transaction(sessions, always_conflicting, attempts=3)
