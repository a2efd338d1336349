"""The usage rollup on a real database: what it counts matches the ledger's captures to the
micro-credit and the allocations' times to the second, through pauses, resumes and stops, and
counting again counts nothing twice."""

from __future__ import annotations

import uuid
from datetime import timedelta

from sqlalchemy import func, select

from gshare.capacity.models import AdmissionRequest, Allocation
from gshare.credits.amounts import format_amount
from gshare.credits.models import CreditHold
from gshare.sessions import tasks
from gshare.usage import service
from gshare.usage import tasks as usage_tasks
from gshare.usage.models import UsageDay, UsageHour
from tests.builders import Builder
from tests.sessions.world import session_world, settings_of


async def _report(w, sid: str, util: float, vram: int) -> None:  # type: ignore[no-untyped-def]
    sample = {"session_id": sid, "gpu_util_percent": util, "vram_used_mib": vram}
    assert (await w.utilization([sample])).status_code == 200


async def test_counts_match_the_ledger_and_the_allocations_through_pause_resume_and_stop(
    build: Builder,
) -> None:
    w = await session_world(build)
    settings = settings_of(build)
    sid = (await w.running())["id"]
    # 50 minutes of reports every 30 s: busy, then idle for the last 20.
    for n in range(100):
        build.clock.advance(timedelta(seconds=30))
        await _report(w, sid, 60.0 if n < 60 else 1.0, 4096 + n)
        if n % 10 == 0:
            await tasks.meter(build.sessions, settings, build.clock.now())
            await usage_tasks.roll_up(build.sessions, settings, build.clock.now())
    assert (await w.act(0, sid, "pause")).status_code == 200
    build.clock.advance(timedelta(minutes=30))
    assert (await w.act(0, sid, "resume")).status_code == 200
    await w.report(sid, "Running")
    for _ in range(10):
        build.clock.advance(timedelta(seconds=30))
        await _report(w, sid, 50.0, 8000)
    await tasks.meter(build.sessions, settings, build.clock.now())
    await usage_tasks.roll_up(build.sessions, settings, build.clock.now())
    assert (await w.act(0, sid, "stop")).status_code == 200
    build.clock.advance(service.SETTLE)
    for _ in range(2):  # a second run adds nothing
        await usage_tasks.roll_up(build.sessions, settings, build.clock.now())

    async with build.sessions() as db:
        requests = select(AdmissionRequest.id).where(AdmissionRequest.session_id == uuid.UUID(sid))
        allocations = list(
            await db.scalars(select(Allocation).where(Allocation.request_id.in_(requests)))
        )
        captured = await db.scalar(
            select(func.sum(CreditHold.captured)).where(
                CreditHold.id.in_([a.hold_id for a in allocations])
            )
        )
        hours = list(
            await db.scalars(select(UsageHour).where(UsageHour.session_id == uuid.UUID(sid)))
        )
        days = list(
            await db.scalars(select(UsageDay).where(UsageDay.user_id == allocations[0].user_id))
        )
    assert len(allocations) == 2
    assert all(a.released_at for a in allocations)
    assert captured
    assert sum(h.credits for h in hours) == captured
    assert sum(d.credits for d in days) == captured
    held = sum((a.released_at - a.admitted_at).total_seconds() for a in allocations)  # type: ignore[operator]
    assert round(sum(h.held_seconds for h in hours), 3) == round(held, 3)
    assert round(sum(d.held_seconds for d in days), 3) == round(held, 3)
    share = allocations[0].compute_percent / 100
    assert round(sum(h.gpu_seconds for h in hours), 3) == round(held * share, 3)
    # The 40 idle reports, each standing for 30 s.
    assert round(sum(h.idle_gpu_seconds for h in hours), 3) == round(40 * 30 * share, 3)
    assert round(sum(h.measured_seconds for h in hours), 3) == 110 * 30
    assert max(h.vram_peak_mib or 0 for h in hours) == 8000
    assert {h.vram_limit_mib for h in hours} == {allocations[0].vram_mib}
    assert all(a.rolled_until == a.released_at for a in allocations)
    # The report its owner reads says the same, to the micro-credit.
    day = hours[0].hour.date().isoformat()
    response = await w.members[0].get(
        "/api/v1/usage", params={"since": day, "until": day, "by": "user"}
    )
    assert response.status_code == 200, response.text
    (row,) = response.json()["rows"]
    assert row["key"] == str(allocations[0].user_id)
    assert row["totals"]["credits"] == format_amount(int(captured))
    assert round(row["totals"]["idle_gpu_hours"] * 3600, 3) == round(40 * 30 * share, 3)
