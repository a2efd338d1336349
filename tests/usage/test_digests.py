"""Weekly digests: each group that used GPUs last week gets one, to its admins (its
organization's when it has none), with the week's figures, the sessions that idled most and
the members near the end of their credits; never twice, and not before the week is counted."""

from __future__ import annotations

import asyncio
import random
import uuid
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import select

from gshare.credits import repository as credits_repository
from gshare.events.models import Notification
from gshare.usage.digests import DIGEST, last_week
from gshare.usage.tasks import send_digests
from tests.builders import Builder
from tests.sessions.test_metering_faults import running_sessions
from tests.usage.test_reports import Tenants, _hour
from tests.usage.test_rollup_faults import _allocations

MONDAY = date(2026, 11, 2)


def test_the_digest_covers_the_last_whole_week_once_it_has_been_counted() -> None:
    assert last_week(datetime(2026, 11, 9, 0, 30, tzinfo=UTC)) == date(2026, 10, 26)
    assert last_week(datetime(2026, 11, 9, 1, 0, tzinfo=UTC)) == MONDAY
    assert last_week(datetime(2026, 11, 15, 23, 0, tzinfo=UTC)) == MONDAY


async def _digests(build: Builder, user_id: uuid.UUID) -> list[Notification]:
    async with build.sessions() as db:
        query = select(Notification).where(
            Notification.user_id == user_id, Notification.kind == DIGEST
        )
        return list(await db.scalars(query))


async def test_each_group_that_used_gpus_gets_one_digest_with_its_week(build: Builder) -> None:
    t = await Tenants(build).make()
    idle = _hour(t.alice, t.a1, t.org_a, 0.5, "a")
    await build.member(t.carol, t.a1, role="guest")  # near her end too, but A1's guest only
    async with build.sessions() as db, db.begin():
        db.add(idle)
        for who in (t.alice, t.carol):
            wallet = await credits_repository.account_id(db, "user", who.id, build.clock.now())
            await credits_repository.put_alert(db, wallet, 10**9, None, who.id, build.clock.now())
            await credits_repository.mark_alert(db, wallet, build.clock.now(), None)
    now = datetime(2026, 11, 9, 2, tzinfo=UTC)
    # Twice at once, then again later: one digest per group.
    await asyncio.gather(send_digests(build.sessions, now), send_digests(build.sessions, now))
    await send_digests(build.sessions, now + timedelta(hours=3))

    (a1,) = await _digests(build, t.a1_admin.id)
    assert a1.title == "A1's week: 7.0 GPU-hours, 25% idle"
    assert "The week of 2026-11-02: 7.0 GPU-hours, 1.8 of them idle, 14 credits." in a1.body
    assert f"of {t.alice.email} (0.5 idle GPU-hours)" in a1.body
    assert f"Near the end of their credits: {t.alice.email}." in a1.body
    assert a1.data == {"group_id": str(t.a1.id), "week_start": "2026-11-02"}
    # A2 has no admin of its own: its organization's admin hears of it, and not of A1, which
    # has its own.
    a_admin = await _digests(build, t.a_admin.id)
    assert [n.title for n in a_admin] == ["A2's week: 14.0 GPU-hours, 0% idle"]
    assert "Near the end" not in a_admin[0].body
    # B1 has no admin at all, its organization none either: nobody to tell, recorded once.
    assert await _digests(build, t.carol.id) == []
    assert await _digests(build, t.alice.id) == []


async def test_no_digest_before_the_rollup_has_counted_the_whole_week(build: Builder) -> None:

    t = await Tenants(build).make()
    week_end = datetime(2026, 11, 9, tzinfo=UTC)
    started = week_end - timedelta(days=1)
    await _allocations(
        build.sessions,
        await running_sessions(build.sessions, started, random.Random(1), users=1, per_user=1),
    )
    assert await send_digests(build.sessions, week_end + timedelta(hours=2)) == 0
    assert await _digests(build, t.a1_admin.id) == []
