"""Migration 0007 fills lots in from the ledger's history, so an existing ledger passes the check
the moment it is upgraded, and it can be rolled back."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from gshare.credits import invariants
from gshare.credits.amounts import MICRO
from gshare.kit.db import make_engine, make_sessionmaker
from gshare.kit.embedded_db import EmbeddedPostgres, drop_database, ensure_database
from gshare.kit.schema_version import downgrade, upgrade

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
_n = itertools.count()


@pytest.fixture
async def url_at_0006(postgres: EmbeddedPostgres) -> AsyncIterator[str]:
    name = f"lots_migration_{next(_n)}"
    await ensure_database(postgres.url(), name)
    url = postgres.url(name)
    await asyncio.to_thread(upgrade, url, "0006")
    yield url
    await drop_database(postgres.url(), name)


async def _account(conn: AsyncConnection, kind: str) -> uuid.UUID:
    account = uuid.uuid4()
    owner = None if kind in ("mint", "consumption") else uuid.uuid4()
    await conn.execute(
        text(
            "INSERT INTO credit_accounts (id, kind, owner_id, balance, held, created_at) "
            "VALUES (:id, :kind, :owner, 0, 0, :at)"
        ),
        {"id": account, "kind": kind, "owner": owner, "at": NOW},
    )
    return account


async def _post(
    conn: AsyncConnection, kind: str, debit: uuid.UUID, credit: uuid.UUID, credits: int
) -> None:
    """A transfer written as the ledger before lots wrote it."""
    amount = credits * MICRO
    after = {}
    for account, change in ((debit, -amount), (credit, amount)):
        after[account] = await conn.scalar(
            text(
                "UPDATE credit_accounts SET balance = balance + :change WHERE id = :id "
                "AND kind NOT IN ('mint', 'consumption') RETURNING balance"
            ),
            {"id": account, "change": change},
        )
    transfer = uuid.uuid4()
    await conn.execute(
        text(
            "INSERT INTO credit_transfers (id, kind, debit_account_id, credit_account_id, "
            "amount, created_at) VALUES (:id, :kind, :debit, :credit, :amount, :at)"
        ),
        {
            "id": transfer,
            "kind": kind,
            "debit": debit,
            "credit": credit,
            "amount": amount,
            "at": NOW,
        },
    )
    for account, change in ((debit, -amount), (credit, amount)):
        await conn.execute(
            text(
                "INSERT INTO credit_entries (transfer_id, account_id, amount, balance_after, "
                "created_at) VALUES (:t, :a, :amount, :after, :at)"
            ),
            {"t": transfer, "a": account, "amount": change, "after": after[account], "at": NOW},
        )


async def test_lots_are_filled_in_from_history_and_the_ledger_checks_clean(
    url_at_0006: str,
) -> None:
    engine = make_engine(url_at_0006, pool_size=1)
    async with engine.begin() as conn:
        mint, used = await _account(conn, "mint"), await _account(conn, "consumption")
        org = await _account(conn, "org")
        g1, g2 = await _account(conn, "group"), await _account(conn, "group")
        user, drained = await _account(conn, "user"), await _account(conn, "user")
        await _post(conn, "mint", mint, org, 100)
        await _post(conn, "allocation", org, g1, 40)
        await _post(conn, "refill", org, g2, 20)
        await _post(conn, "allocation", g1, user, 10)
        await _post(conn, "allocation", g2, user, 5)
        await _post(conn, "return", user, g1, 3)
        await _post(conn, "capture", user, used, 4)
        # Taken back beyond what was given, as the ledger once allowed.
        await _post(conn, "allocation", g1, drained, 5)
        await _post(conn, "allocation", g2, drained, 5)
        await _post(conn, "return", drained, g1, 8)
    await engine.dispose()

    await asyncio.to_thread(upgrade, url_at_0006)
    engine = make_engine(url_at_0006, pool_size=1)
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                text("SELECT account_id, funder_id, amount FROM credit_lots ORDER BY seq")
            )
        ).all()
    lots = {(r.account_id, r.funder_id): r.amount // MICRO for r in rows}
    assert lots == {
        (org, mint): 100 - 40 - 20,
        (g1, org): 40 - 10 - 5 + 3 + 8,
        (g2, org): 20 - 5 - 5,
        # 7 from g1 and 5 from g2; the 4 spent come out of the oldest lot, g1's.
        (user, g1): 3,
        (user, g2): 5,
        # g1's lot is gone (it took back 8 of its 5); the 2 left are g2's.
        (drained, g1): 0,
        (drained, g2): 2,
    }
    sessions = make_sessionmaker(engine)
    async with sessions() as db:
        report = await invariants.check(db)
    assert report.violations == []
    await engine.dispose()

    await asyncio.to_thread(downgrade, url_at_0006, "0006")
    await asyncio.to_thread(upgrade, url_at_0006)
    engine = make_engine(url_at_0006, pool_size=1)
    async with engine.connect() as conn:
        assert await conn.scalar(text("SELECT count(*) FROM credit_lots")) == len(lots)
    await engine.dispose()
