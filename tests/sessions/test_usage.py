"""A session's use over time: the utilization its cluster reports is kept once per report,
whatever is replayed, repeated or sent out of order; the worker thins it with age; its owner
(and no one else) reads it with the cost so far, and a stopped session shows no current value."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
from sqlalchemy import func, select

from gshare.clusters.callbacks import key_ring_of
from gshare.sessions import repository, service, tasks
from gshare.sessions.models import InteractiveSession, SessionSample
from gshare.sessions.thinning import MAX_POINTS
from tests.builders import Builder
from tests.sessions.world import API, SessionWorld, session_world, settings_of


def _busy(session_id: str, util: float = 70.0, vram: int = 6144) -> dict[str, object]:
    return {"session_id": session_id, "gpu_util_percent": util, "vram_used_mib": vram}


async def _usage(client: httpx.AsyncClient, session_id: str) -> dict[str, Any]:
    response = await client.get(f"{API}/sessions/{session_id}/usage")
    assert response.status_code == 200, response.text
    return dict(response.json())


async def _stored(w: SessionWorld, session_id: str) -> int:
    async with w.build.sessions() as db:
        query = select(func.count()).where(SessionSample.session_id == uuid.UUID(session_id))
        return int(await db.scalar(query) or 0)


async def _post(w: SessionWorld, body: dict[str, Any]) -> httpx.Response:
    """A utilization report exactly as given, sequence included."""
    keys = await key_ring_of(w.build.app).get(datetime.now(UTC))
    token = keys.mint(str(w.cluster_id), w.build.clock.now())
    return await w.build.anonymous().post(
        f"/internal/v1/clusters/{w.cluster_id}/utilization",
        json=body,
        headers={"Authorization": f"Bearer {token}"},
    )


async def test_the_owner_sees_use_and_cost_over_time_and_no_current_value_once_stopped(
    build: Builder,
) -> None:
    w = await session_world(build)
    sid = (await w.running())["id"]
    for util, vram in ((10.0, 2048), (55.5, 8192), (90.0, 4096)):
        build.clock.advance(timedelta(seconds=30))
        assert (await w.utilization([_busy(sid, util, vram)])).status_code == 200
        await tasks.meter(build.sessions, settings_of(build), build.clock.now())

    usage = await _usage(w.members[0], sid)
    assert [p["gpu_util_percent"] for p in usage["points"]] == [10.0, 55.5, 90.0]
    assert [p["vram_used_mib"] for p in usage["points"]] == [2048, 8192, 4096]
    assert usage["vram_limit_mib"] == (await w.read(0, sid))["vram_mib"] == 20480
    assert usage["current"]["gpu_util_percent"] == 90.0
    costs = [Decimal(p["cost"]) for p in usage["cost"]]
    assert costs[0] == 0
    assert costs == sorted(costs)
    assert costs[-1] == Decimal(usage["cost_total"]) > 0
    assert usage["cost_total"] == (await w.read(0, sid))["cost"]

    build.clock.advance(timedelta(seconds=30))
    assert (await w.act(0, sid, "stop")).status_code == 200
    async with build.sessions() as db, db.begin():
        row = await db.get(InteractiveSession, uuid.UUID(sid), with_for_update=True)
        assert row is not None
        await service.removed(db, row, build.clock.now())
    build.clock.advance(timedelta(hours=3))
    ended = await _usage(w.members[0], sid)
    assert ended["current"] is None
    assert len(ended["points"]) == 3
    assert ended["until"] == (await w.read(0, sid))["state_changed_at"]
    assert ended["cost_total"] == (await w.read(0, sid))["cost"]
    assert Decimal(ended["cost_total"]) > Decimal(usage["cost_total"])


async def test_only_who_may_see_the_session_reads_its_usage(build: Builder) -> None:
    w = await session_world(build)
    sid = (await w.running())["id"]
    assert (await w.members[1].get(f"{API}/sessions/{sid}/usage")).status_code == 404
    assert (await build.anonymous().get(f"{API}/sessions/{sid}/usage")).status_code == 401
    missing = await w.members[0].get(f"{API}/sessions/{uuid.uuid4()}/usage")
    assert missing.status_code == 404
    assert (await w.members[0].get(f"{API}/sessions/not-an-id/usage")).status_code == 422
    admin = await build.signed_in(await build.user(super_admin=True))
    assert (await admin.get(f"{API}/sessions/{sid}/usage")).status_code == 200


async def test_replayed_repeated_late_or_huge_reports_add_no_duplicate_points(
    build: Builder,
) -> None:
    w = await session_world(build)
    sid = (await w.running())["id"]
    build.clock.advance(timedelta(seconds=30))
    now_ms = int(build.clock.now().timestamp() * 1000)
    body = {"sequence": now_ms, "source": "dcgm", "samples": [_busy(sid), _busy(sid, 5.0)]}
    assert (await _post(w, body)).json() == {"applied": True}
    assert (await _post(w, body)).json() == {"applied": False}  # the same report again
    older = body | {"sequence": now_ms - 1, "samples": [_busy(sid, 1.0)]}
    assert (await _post(w, older)).json() == {"applied": False}  # overtaken
    build.clock.advance(timedelta(seconds=2))
    sooner = body | {"sequence": now_ms + 1, "samples": [_busy(sid, 2.0)]}
    assert (await _post(w, sooner)).json() == {"applied": True}  # too soon for a new point
    assert await _stored(w, sid) == 1

    build.clock.advance(timedelta(seconds=30))
    strangers = [_busy(str(uuid.uuid4())) for _ in range(4999)]
    huge = body | {"sequence": now_ms + 2, "samples": [*strangers, _busy(sid, 40.0)]}
    assert (await _post(w, huge)).json() == {"applied": True}
    too_big = body | {"sequence": now_ms + 3, "samples": [*strangers, _busy(sid), _busy(sid)]}
    assert (await _post(w, too_big)).status_code == 422
    points = (await _usage(w.members[0], sid))["points"]
    assert [p["gpu_util_percent"] for p in points] == [5.0, 40.0]


async def test_the_worker_thins_a_long_sessions_samples_to_the_bound(build: Builder) -> None:
    w = await session_world(build)
    sid = (await w.running())["id"]
    now = build.clock.now()
    async with build.sessions() as db, db.begin():
        row = await db.get(InteractiveSession, uuid.UUID(sid), with_for_update=True)
        assert row is not None
        row.created_at = now - timedelta(days=10)
        rows = [
            {
                "session_id": row.id,
                "at": now - timedelta(minutes=2 * i),
                "gpu_util_percent": float(i % 100),
                "vram_used_mib": 1024 + i,
                "samples": 1,
            }
            for i in range(10 * 720)
        ]
        for start in range(0, len(rows), 5000):
            await repository.add_samples(db, rows[start : start + 5000])
    before = await _usage(w.members[0], sid)
    assert len(before["points"]) <= MAX_POINTS  # thinned when read, even before the worker

    removed = await tasks.thin_samples(build.sessions, now)
    assert removed == 10 * 720 - await _stored(w, sid)
    assert await _stored(w, sid) <= MAX_POINTS
    after = await _usage(w.members[0], sid)
    assert after["points"] == before["points"]
    assert sum(p["samples"] for p in after["points"]) == 10 * 720
    assert max(p["vram_used_mib"] for p in after["points"]) == 1024 + 10 * 720 - 1
    assert await tasks.thin_samples(build.sessions, now) == 0  # already thin
