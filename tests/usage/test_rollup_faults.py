"""The usage rollup under `kill -9`: a worker that meters and rolls up, killed at random moments
and in the middle of a batch, then restarted, counts every second and every micro-credit once."""

from __future__ import annotations

import random
import uuid
from datetime import timedelta
from functools import partial
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.capacity.models import AdmissionRequest, Allocation
from gshare.kit.clock import FrozenClock
from gshare.sessions.metering import owed
from gshare.usage.service import SETTLE
from tests.killed import Plan, run_with_kills
from tests.sessions.test_metering_faults import running_sessions

TICKS = 30
STEP_SECONDS = 197.3
KILLS = 4


async def _allocations(
    sessions: async_sessionmaker[AsyncSession], ids: list[uuid.UUID]
) -> list[uuid.UUID]:
    """An admission request and a live GPU allocation for each running session, as admission
    leaves them."""
    async with sessions() as db, db.begin():
        rows = (
            await db.execute(
                text(
                    "SELECT s.id, s.owner_id, s.request_id, s.hold_id, s.price_per_hour, "
                    "s.billed_from, a.owner_id AS group_id FROM sessions s "
                    "JOIN credit_holds h ON h.id = s.hold_id "
                    "JOIN credit_accounts a ON a.id = h.for_group_wallet_id "
                    "WHERE s.id = ANY(:ids)"
                ),
                {"ids": ids},
            )
        ).all()
        allocations = []
        for row in rows:
            request = AdmissionRequest(
                id=row.request_id,
                user_id=row.owner_id,
                group_id=row.group_id,
                model="A100-80GB",
                tier_name="1/4",
                cpu_millicores=1000,
                memory_mib=2048,
                session_id=row.id,
                status="admitted",
                enqueued_at=row.billed_from,
                decided_at=row.billed_from,
            )
            allocation = Allocation(
                id=uuid.uuid4(),
                request_id=row.request_id,
                user_id=row.owner_id,
                group_id=row.group_id,
                model="A100-80GB",
                tier_name="1/4",
                vram_mib=20480,
                compute_percent=25,
                cpu_millicores=1000,
                memory_mib=2048,
                price_per_hour=row.price_per_hour,
                hold_id=row.hold_id,
                status="live",
                admitted_at=row.billed_from,
            )
            db.add(request)
            await db.flush()
            db.add(allocation)
            allocations.append(allocation.id)
    return allocations


_MARKS = text("SELECT count(DISTINCT rolled_until) FROM gpu_allocations WHERE id = ANY(:ids)")


async def _split(sessions: async_sessionmaker[AsyncSession], ids: list[uuid.UUID]) -> bool:
    async with sessions() as db:
        return bool(await db.scalar(_MARKS, {"ids": ids}) > 1)


_COUNTED = text(
    "SELECT a.id, a.admitted_at, a.price_per_hour, a.rolled_until, a.rolled_credits, "
    "h.captured, s.metered_until, "
    "(SELECT sum(held_seconds) FROM usage_hours u WHERE u.allocation_id = a.id) AS held, "
    "(SELECT sum(credits) FROM usage_hours u WHERE u.allocation_id = a.id) AS credits "
    "FROM gpu_allocations a JOIN credit_holds h ON h.id = a.hold_id "
    "JOIN admission_requests r ON r.id = a.request_id JOIN sessions s ON s.id = r.session_id "
    "WHERE a.id = ANY(:ids)"
)
_DAYS_AGREE = text(
    "SELECT (SELECT sum(credits) FROM usage_hours WHERE allocation_id = ANY(:ids)), "
    "(SELECT sum(credits) FROM usage_days), (SELECT sum(credits) FROM usage_months), "
    "(SELECT sum(held_seconds) FROM usage_hours WHERE allocation_id = ANY(:ids)), "
    "(SELECT sum(held_seconds) FROM usage_days)"
)


async def test_a_worker_killed_mid_rollup_and_restarted_counts_everything_once(
    sessions: async_sessionmaker[AsyncSession],
    database_url: str,
    clock: FrozenClock,
    tmp_path: Path,
) -> None:
    rng = random.Random(20261204)
    start = clock.now()
    ids = await _allocations(
        sessions, await running_sessions(sessions, start, rng, users=20, per_user=10)
    )

    async def nothing() -> None:
        pass

    plan = Plan(database_url, tmp_path, start, STEP_SECONDS, TICKS, 25, "meter,rollup", KILLS)
    # Aimed kills land between two batches of the rollup.
    await run_with_kills(plan, rng, partial(_split, sessions, ids), nothing)

    last = start + timedelta(seconds=TICKS * STEP_SECONDS)
    async with sessions() as db:
        counted = (await db.execute(_COUNTED, {"ids": ids})).all()
        hours_credits, days_credits, months_credits, hours_held, days_held = (
            await db.execute(_DAYS_AGREE, {"ids": ids})
        ).one()
    assert len(counted) == len(ids)
    wrong = []
    for row in counted:
        through = min(last - SETTLE, row.metered_until)
        expected_credits = min(owed(row.price_per_hour, row.admitted_at, through), row.captured)
        held = (through - row.admitted_at).total_seconds()
        if (
            row.rolled_until != through
            or row.credits != expected_credits
            or row.rolled_credits != expected_credits
            or abs(row.held - held) > 1e-6
        ):
            wrong.append((row, through, expected_credits, held))
    assert wrong == [], wrong[:3]
    assert hours_credits == days_credits == months_credits > 0
    assert abs(hours_held - days_held) < 1e-3
