"""Ledger operations on the real database: holds, settlement, refills, and the invariant check."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.credits import operations, repository
from gshare.credits.amounts import MICRO
from gshare.credits.ledger import HoldExhausted, InsufficientCredits
from gshare.credits.models import CreditAccount, CreditRefill
from gshare.credits.operations import HoldResolved
from gshare.credits.tasks import refill_month
from gshare.kit.clock import FrozenClock
from gshare.kit.db import run_in_transaction
from gshare.kit.errors import Conflict
from tests.credits.builders import assert_ledger_clean, funded_wallets, grants

RATE = 2 * MICRO  # 2 credits an hour


async def _wallet(
    sessions: async_sessionmaker[AsyncSession], wallet_id: uuid.UUID
) -> CreditAccount:
    async with sessions() as db:
        account = await db.get(CreditAccount, wallet_id)
        assert account is not None
        return account


async def test_a_hold_reserves_captures_extends_and_settles(sessions, clock: FrozenClock) -> None:
    now = clock.now()
    w = await funded_wallets(sessions, now, user_credits=5)
    user = w.users[0]
    async with sessions() as db, db.begin():
        hold = await operations.place_hold(
            db,
            wallet_id=user,
            session_id=uuid.uuid4(),
            rate_per_hour=RATE,
            window_seconds=3600,
            now=now,
        )
    account = await _wallet(sessions, user)
    assert (account.balance, account.held) == (5 * MICRO, 2 * MICRO)
    async with sessions() as db, db.begin():
        await operations.capture(db, hold_id=hold.id, amount=MICRO + 500_000, now=now)
        with pytest.raises(HoldExhausted):
            await operations.capture(db, hold_id=hold.id, amount=MICRO, now=now)
    async with sessions() as db, db.begin():
        await operations.extend_hold(db, hold_id=hold.id, now=now)
        outcome = await operations.settle_hold(db, hold_id=hold.id, used=MICRO, now=now)
    assert (outcome.captured, outcome.released, outcome.uncollected) == (MICRO, 1_500_000, 0)
    account = await _wallet(sessions, user)
    assert (account.balance, account.held) == (2_500_000, 0)
    async with sessions() as db, db.begin():
        with pytest.raises(HoldResolved):
            await operations.release_hold(db, hold_id=hold.id, now=now)
    report = await assert_ledger_clean(sessions)
    assert report.consumed == 2_500_000


async def _announced(
    sessions: async_sessionmaker[AsyncSession], wallet_id: uuid.UUID
) -> list[tuple[int, int]]:
    """The (balance, held) of each `wallet.changed` event of the wallet, in order."""
    async with sessions() as db:
        rows = await db.execute(
            text(
                "SELECT data FROM events WHERE kind = 'wallet.changed' "
                "AND data->>'wallet_id' = :w ORDER BY id"
            ),
            {"w": str(wallet_id)},
        )
        return [
            (round(float(r.data["balance"]) * MICRO), round(float(r.data["held"]) * MICRO))
            for r in rows
        ]


async def test_each_change_a_hold_makes_is_announced_and_each_resolution_recorded_once(
    sessions, clock: FrozenClock
) -> None:
    now = clock.now()
    w = await funded_wallets(sessions, now, user_credits=5)
    user = w.users[0]
    before = await _announced(sessions, user)

    async def place() -> uuid.UUID:
        async with sessions() as db, db.begin():
            hold = await operations.place_hold(
                db,
                wallet_id=user,
                session_id=uuid.uuid4(),
                rate_per_hour=RATE,
                window_seconds=3600,
                now=now,
            )
        return hold.id

    settled = await place()
    async with sessions() as db, db.begin():
        await operations.capture(db, hold_id=settled, amount=MICRO + 500_000, now=now)
    async with sessions() as db, db.begin():
        await operations.extend_hold(db, hold_id=settled, now=now)
    async with sessions() as db, db.begin():
        await operations.settle_hold(db, hold_id=settled, used=MICRO, now=now)
    released = await place()
    async with sessions() as db, db.begin():
        assert await operations.release_hold(db, hold_id=released, now=now) == 2 * MICRO
    account = await _wallet(sessions, user)
    assert (account.balance, account.held) == (2_500_000, 0)
    assert (await _announced(sessions, user))[len(before) :] == [
        (5 * MICRO, 2 * MICRO),  # placed
        (3_500_000, 500_000),  # captured
        (3_500_000, 2_500_000),  # extended
        (2_500_000, 1_500_000),  # settled: the use captured
        (2_500_000, 0),  # settled: the rest released
        (2_500_000, 2 * MICRO),  # placed
        (2_500_000, 0),  # released
    ]
    async with sessions() as db:
        rows = await db.execute(
            text(
                "SELECT r.hold_id, r.kind, r.captured, r.released, h.status, h.reserved, "
                "h.captured AS total FROM credit_hold_resolutions r "
                "JOIN credit_holds h ON h.id = r.hold_id WHERE r.hold_id = ANY(:ids)"
            ),
            {"ids": [settled, released]},
        )
        found = {r.hold_id: tuple(r)[1:] for r in rows}
    assert found == {
        settled: ("settled", MICRO, 1_500_000, "settled", 0, 2_500_000),
        released: ("released", 0, 2 * MICRO, "released", 0, 0),
    }
    await assert_ledger_clean(sessions)


async def test_a_hold_needs_available_credits(sessions, clock: FrozenClock) -> None:
    now = clock.now()
    w = await funded_wallets(sessions, now, user_credits=1)
    async with sessions() as db, db.begin():
        with pytest.raises(InsufficientCredits):
            await operations.place_hold(
                db,
                wallet_id=w.users[0],
                session_id=uuid.uuid4(),
                rate_per_hour=RATE,
                window_seconds=3600,
                now=now,
            )
    async with sessions() as db, db.begin():
        with pytest.raises(Conflict, match="personal wallets"):
            await operations.place_hold(
                db,
                wallet_id=w.group,
                session_id=uuid.uuid4(),
                rate_per_hour=1,
                window_seconds=60,
                now=now,
            )
    await assert_ledger_clean(sessions)


async def test_a_hold_is_resolved_exactly_once_under_racing_settlements(
    sessions, clock: FrozenClock
) -> None:
    now = clock.now()
    w = await funded_wallets(sessions, now, user_credits=10)
    async with sessions() as db, db.begin():
        hold = await operations.place_hold(
            db,
            wallet_id=w.users[0],
            session_id=uuid.uuid4(),
            rate_per_hour=RATE,
            window_seconds=3600,
            now=now,
        )

    async def settle(used: int) -> str:
        try:
            await run_in_transaction(
                sessions,
                lambda s: operations.settle_hold(s, hold_id=hold.id, used=used, now=now),
            )
            return "settled"
        except HoldResolved:
            return "refused"

    async def release() -> str:
        try:
            await run_in_transaction(
                sessions, lambda s: operations.release_hold(s, hold_id=hold.id, now=now)
            )
            return "released"
        except HoldResolved:
            return "refused"

    outcomes = await asyncio.gather(settle(MICRO), settle(MICRO), release(), settle(MICRO))
    assert sorted(outcomes).count("refused") == 3
    report = await assert_ledger_clean(sessions)
    assert report.held == 0
    assert report.consumed in (0, MICRO)


async def test_refill_tops_up_to_the_grant_and_records_shortfall(
    sessions, clock: FrozenClock
) -> None:
    now = clock.now()
    w = await funded_wallets(sessions, now, users=2, org_credits=0, group_credits=0, user_credits=0)
    rich, poor = w.users
    async with sessions() as db, db.begin():
        await operations.set_monthly_grant(
            db, wallet_id=w.org, amount=100 * MICRO, funding_wallet_id=None
        )
        await operations.set_monthly_grant(
            db, wallet_id=w.group, amount=30 * MICRO, funding_wallet_id=w.org
        )
        await operations.set_monthly_grant(
            db, wallet_id=rich, amount=20 * MICRO, funding_wallet_id=w.group
        )
        await operations.set_monthly_grant(
            db, wallet_id=poor, amount=20 * MICRO, funding_wallet_id=w.group
        )
    summary = await refill_month(sessions, "2026-03", now)
    assert summary.refilled == 4
    assert [(await _wallet(sessions, x)).balance // MICRO for x in (w.org, w.group)] == [70, 0]
    balances = sorted([(await _wallet(sessions, x)).balance // MICRO for x in (rich, poor)])
    assert balances == [10, 20]  # the group had 30 for two grants of 20
    assert summary.shortfall == 10 * MICRO
    async with sessions() as db:
        refills = (await db.scalars(select(CreditRefill))).all()
    assert sorted(r.shortfall // MICRO for r in refills) == [0, 0, 0, 10]
    # Next month: a balance at or above its grant is left alone.
    clock.advance(timedelta(days=31))
    again = await refill_month(sessions, "2026-04", clock.now())
    assert again.refilled == 4
    # The org went 70 -> 100 and paid the group 0 -> 30, which paid the poorer user 10 -> 20;
    # the richer user, at its grant already, was left alone.
    balances = [(await _wallet(sessions, x)).balance // MICRO for x in (w.org, w.group, *w.users)]
    assert balances == [70, 20, 20, 20]
    await assert_ledger_clean(sessions)


async def test_two_racing_refill_runs_refill_each_wallet_once(sessions, clock: FrozenClock) -> None:
    now = clock.now()
    w = await funded_wallets(sessions, now, users=3, org_credits=0, group_credits=0, user_credits=0)
    await grants(sessions, w, org=1000, group=300, user=50)
    first, second = await asyncio.gather(
        refill_month(sessions, "2026-03", now), refill_month(sessions, "2026-03", now)
    )
    assert first.refilled + second.refilled == 5
    third = await refill_month(sessions, "2026-03", now)  # a rerun after a restart
    assert third.refilled == 0
    assert (await _wallet(sessions, w.org)).balance == 700 * MICRO
    assert (await _wallet(sessions, w.group)).balance == 150 * MICRO
    report = await assert_ledger_clean(sessions)
    assert report.minted == 1000 * MICRO


async def test_the_check_finds_a_tampered_ledger(sessions, clock: FrozenClock) -> None:
    await funded_wallets(sessions, clock.now())
    await assert_ledger_clean(sessions)
    async with sessions() as db, db.begin():
        await db.execute(
            text("UPDATE credit_accounts SET balance = balance + 1 WHERE kind = 'group'")
        )
    async with sessions() as db:
        from gshare.credits import invariants

        report = await invariants.check(db)
    names = {v.invariant for v in report.violations}
    assert "every cached balance equals the sum of its entries" in names
    assert "everything minted is in a wallet or consumed" in names


async def test_ledger_rows_cannot_be_edited(sessions, clock: FrozenClock) -> None:
    await funded_wallets(sessions, clock.now())
    async with sessions() as db:
        with pytest.raises(Exception, match="cannot be changed"):
            await db.execute(text("UPDATE credit_entries SET amount = amount * 2"))


async def test_accounts_are_created_once_under_concurrency(sessions, clock: FrozenClock) -> None:
    owner = uuid.uuid4()

    async def create() -> uuid.UUID:
        return await run_in_transaction(
            sessions, lambda s: repository.account_id(s, "user", owner, clock.now())
        )

    ids = await asyncio.gather(*(create() for _ in range(6)))
    assert len(set(ids)) == 1


async def test_the_check_sees_an_entry_posted_to_the_wrong_wallet(
    sessions, clock: FrozenClock
) -> None:
    """A transfer from the org to one user whose credit entry landed on another user's wallet:
    sums still balance, but the check names the transfer."""
    from gshare.credits import invariants
    from gshare.credits.models import CreditEntry, CreditTransfer

    now = clock.now()
    w = await funded_wallets(sessions, now, users=2, user_credits=0)
    intended, wrong = w.users
    transfer_id = uuid.uuid4()
    async with sessions() as db, db.begin():
        db.add(
            CreditTransfer(
                id=transfer_id,
                kind="allocation",
                debit_account_id=w.group,
                credit_account_id=intended,
                amount=MICRO,
                created_at=now,
            )
        )
        await db.flush()
        db.add_all(
            [
                CreditEntry(
                    transfer_id=transfer_id, account_id=w.group, amount=-MICRO, created_at=now
                ),
                CreditEntry(
                    transfer_id=transfer_id, account_id=wrong, amount=MICRO, created_at=now
                ),
            ]
        )
    async with sessions() as db:
        report = await invariants.check(db)
    named = {v.invariant: v.detail for v in report.violations}
    assert str(transfer_id) in named["each transfer has one debit and one credit of equal amount"]
