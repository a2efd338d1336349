"""Metering under faults: several ticks at once, and a worker killed mid-tick and restarted.
Either way every running session is billed each second it held its card exactly once: what its
holds captured is what it owes from `billed_from` to `metered_until`, to the micro-credit."""

from __future__ import annotations

import asyncio
import random
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.credits import operations
from gshare.credits.amounts import MICRO
from gshare.kit.clock import FrozenClock
from gshare.kit.settings import Settings
from gshare.sessions import metering, tasks
from gshare.sessions.models import InteractiveSession
from tests.credits.builders import assert_ledger_clean, funded_wallets
from tests.killed import Plan, run_with_kills

ROOT = Path(__file__).resolve().parents[2]
# Hourly rates, some of which do not divide into whole seconds, so rounding is exercised.
PRICES = [MICRO, 2 * MICRO, 8 * MICRO, 3_333_333, 777_777]
# A short hold window, so holds run low and are extended every few ticks.
WINDOW_SECONDS = 600


async def running_sessions(
    sessions: async_sessionmaker[AsyncSession],
    now: datetime,
    rng: random.Random,
    *,
    users: int,
    per_user: int,
) -> list[uuid.UUID]:
    """`users` members of a group with `per_user` running GPU sessions each, as admission leaves
    them: a hold placed with the real operation, billed from the admission (a fraction of a
    second apart) at one of PRICES."""
    wallets = await funded_wallets(
        sessions,
        now,
        users=users,
        org_credits=users * 2000,
        group_credits=users * 1000,
        user_credits=1000,
    )
    rows = []
    async with sessions() as db, db.begin():
        owner_of: dict[uuid.UUID, uuid.UUID] = dict(
            (
                await db.execute(
                    text("SELECT id, owner_id FROM credit_accounts WHERE id = ANY(:ids)"),
                    {"ids": wallets.users},
                )
            ).all()
        )
        for wallet_id in wallets.users:
            for _ in range(per_user):
                session_id = uuid.uuid4()
                price = rng.choice(PRICES)
                admitted = now - timedelta(milliseconds=rng.randrange(5000))
                hold = await operations.place_hold(
                    db,
                    wallet_id=wallet_id,
                    session_id=session_id,
                    rate_per_hour=price,
                    window_seconds=WINDOW_SECONDS,
                    now=admitted,
                    for_group_wallet_id=wallets.group,
                )
                rows.append(
                    InteractiveSession(
                        id=session_id,
                        owner_id=owner_of[wallet_id],
                        session_type="jupyterlab",
                        desired_state="Running",
                        created_at=admitted,
                        phase="Running",
                        state="running",
                        state_changed_at=admitted,
                        running_since=admitted,
                        request_id=uuid.uuid4(),
                        hold_id=hold.id,
                        price_per_hour=price,
                        billed_from=admitted,
                        metered_until=admitted,
                    )
                )
        db.add_all(rows)
    return [row.id for row in rows]


@dataclass(frozen=True)
class Billing:
    session_id: uuid.UUID
    price_per_hour: int
    billed_from: datetime
    metered_until: datetime
    cost: int
    state: str
    captured: int  # over all the session's holds
    holds: int


_BILLING = text(
    "SELECT s.id, s.price_per_hour, s.billed_from, s.metered_until, s.cost, s.state, "
    "coalesce(sum(h.captured), 0) AS captured, count(h.id) AS holds FROM sessions s "
    "LEFT JOIN credit_holds h ON h.session_id = s.id WHERE s.id = ANY(:ids) GROUP BY s.id"
)


async def billing(
    sessions: async_sessionmaker[AsyncSession], ids: list[uuid.UUID]
) -> list[Billing]:
    async with sessions() as db:
        return [Billing(*row) for row in (await db.execute(_BILLING, {"ids": ids})).all()]


async def assert_billed_once(
    sessions: async_sessionmaker[AsyncSession],
    ids: list[uuid.UUID],
    *,
    through: datetime | None,
) -> list[Billing]:
    """Every session's holds captured exactly what it owes up to `metered_until`, its cost says
    the same, it still runs, and (given `through`) it is metered to the last whole second
    before `through`."""
    found = await billing(sessions, ids)
    assert sorted(b.session_id for b in found) == sorted(ids)
    wrong = []
    for b in found:
        owed = metering.owed(b.price_per_hour, b.billed_from, b.metered_until)
        behind = through is not None and b.metered_until != metering.metered_point(
            b.billed_from, through
        )
        if b.captured != owed or b.cost != owed or b.state != "running" or b.holds != 1 or behind:
            wrong.append((b, owed))
    assert wrong == [], wrong[:5]
    return found


async def test_concurrent_ticks_bill_every_second_exactly_once(
    sessions: async_sessionmaker[AsyncSession],
    settings: Settings,
    clock: FrozenClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Batches far smaller than the sessions, so concurrent ticks split each instant's work
    # between them and contend for the same wallets.
    monkeypatch.setattr(tasks, "METERING_BATCH", 7)
    rng = random.Random(20261201)
    start = clock.now()
    ids = await running_sessions(sessions, start, rng, users=10, per_user=5)

    async def ticks(*nows: datetime) -> list[int]:
        return list(await asyncio.gather(*(tasks.meter(sessions, settings, n) for n in nows)))

    # Four ticks at one instant: each session is metered by exactly one of them.
    now = start + timedelta(seconds=61, milliseconds=400)
    assert sum(await ticks(now, now, now, now)) == len(ids)
    await assert_billed_once(sessions, ids, through=now)
    assert sum(await ticks(now, now)) == 0

    for _ in range(5):
        # Ticks at different instants, some behind the others: a session is metered forward
        # by whichever gets it first; the later instants finish on the next tick.
        nows = [now + timedelta(seconds=rng.uniform(-5, 120)) for _ in range(4)]
        await ticks(*nows)
        await assert_billed_once(sessions, ids, through=None)
        now = max(nows)
        await tasks.meter(sessions, settings, now)
        await assert_billed_once(sessions, ids, through=now)

    final = await billing(sessions, ids)
    assert all(b.captured > 0 for b in final)
    async with sessions() as db:
        extended = await db.scalar(
            text(
                "SELECT count(*) FROM credit_holds "
                "WHERE reserved + captured > (rate_per_hour * window_seconds + 3599) / 3600"
            )
        )
    assert extended, "no hold was extended: the run did not reach the extension path"
    await assert_ledger_clean(sessions)


TICKS = 40
STEP_SECONDS = 197.3  # under the lead metering keeps in each hold, so no hold runs dry
KILLS = 5


# How many different ticks the sessions were last metered at: more than one after a kill means
# it landed between two batches of one tick.
_TICKS_REACHED = text(
    "SELECT count(DISTINCT round(extract(epoch FROM metered_until - billed_from) / :step)) "
    "FROM sessions WHERE id = ANY(:ids)"
)


async def _split(sessions: async_sessionmaker[AsyncSession], ids: list[uuid.UUID]) -> bool:
    async with sessions() as db:
        return bool(await db.scalar(_TICKS_REACHED, {"ids": ids, "step": STEP_SECONDS}) > 1)


async def test_a_worker_killed_mid_tick_and_restarted_bills_every_second_once(
    sessions: async_sessionmaker[AsyncSession],
    database_url: str,
    clock: FrozenClock,
    tmp_path: Path,
) -> None:
    rng = random.Random(20261202)
    start = clock.now()
    ids = await running_sessions(sessions, start, rng, users=30, per_user=10)
    split_ticks = 0

    async def after_kill() -> None:
        nonlocal split_ticks
        async with sessions() as db:
            positions = await db.scalar(_TICKS_REACHED, {"ids": ids, "step": STEP_SECONDS})
        split_ticks += positions > 1
        await assert_billed_once(sessions, ids, through=None)

    plan = Plan(database_url, tmp_path, start, STEP_SECONDS, TICKS, 40, "meter", KILLS)
    # Aimed kills land as soon as one batch of a tick is committed and the next is not.
    await run_with_kills(plan, rng, partial(_split, sessions, ids), after_kill)

    last = start + timedelta(seconds=TICKS * STEP_SECONDS)
    found = await assert_billed_once(sessions, ids, through=last)
    assert all(b.captured > 0 for b in found)
    # Kills landed between the batches of a tick, not only between ticks.
    assert split_ticks > 0
    await assert_ledger_clean(sessions)
