"""Idle reaping, maximum length and reconciliation: GPU utilization reported by the operator
pauses idle sessions after a warning, unless their owner keeps them running; an unreadable
metrics source reaps nothing; silent or vanished sessions are lost and settled."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from gshare.clusters.callbacks import key_ring_of
from gshare.credits.models import CreditHold
from gshare.events.models import Notification
from gshare.sessions import tasks
from tests.builders import Builder
from tests.capacity.builders import apply, set_policy
from tests.credits.builders import assert_ledger_clean
from tests.sessions.world import SessionWorld, session_world, settings_of


async def _reap(build: Builder) -> dict[str, int]:
    return await tasks.reap_once(build.sessions, settings_of(build), build.clock.now())


async def _later(w: SessionWorld, minutes: int, *samples: dict[str, object]) -> dict[str, int]:
    """Time passes with the operator reporting these samples all along (metrics older than a
    few minutes are not acted on); then the reaper runs."""
    for _ in range(minutes):
        w.build.clock.advance(timedelta(minutes=1))
        await w.utilization(list(samples))
    return await _reap(w.build)


async def _kinds(w: SessionWorld, member: int = 0) -> list[str]:
    async with w.build.sessions() as db:
        query = (
            select(Notification.kind)
            .where(Notification.user_id == w.capacity.user_ids[member])
            .order_by(Notification.created_at)
        )
        return list(await db.scalars(query))


async def _idle_world(build: Builder, **policy: object) -> SessionWorld:
    w = await session_world(build)
    values = {"idle_timeout_minutes": 30, "keep_running_limit_minutes": 60} | policy
    await set_policy(build.sessions, build.clock.now(), "group", w.group_id, values)
    return w


def _idle(session_id: str, **extra: object) -> dict[str, object]:
    return {"session_id": session_id, "gpu_util_percent": 0.0, "vram_used_mib": 512} | extra


async def test_an_idle_session_is_warned_then_paused(build: Builder) -> None:
    w = await _idle_world(build)
    sid = (await w.running())["id"]
    reported = await w.utilization([_idle(sid, vram_used_mib=3072)])
    assert reported.status_code == 200, reported.text
    assert (await w.read(0, sid))["idle_since"] is not None
    assert (await _later(w, 19, _idle(sid)))["warned"] == 0
    assert (await _later(w, 1, _idle(sid)))["warned"] == 1  # ten minutes before the timeout
    warned = await w.read(0, sid)
    assert warned["idle_pause_at"] is not None
    assert warned["peak_vram_mib"] == 3072
    assert "session.idle" in await _kinds(w)
    assert (await _later(w, 10, _idle(sid)))["idle"] == 1
    paused = await w.read(0, sid)
    assert paused["state"] == "pausing"
    assert "idle" in paused["state_reason"]
    assert paused["billing"] is False
    assert "session.paused.idle" in await _kinds(w)
    await assert_ledger_clean(build.sessions)


async def test_use_clears_idleness_and_keep_running_defers_the_pause(build: Builder) -> None:
    w = await _idle_world(build)
    sid = (await w.running())["id"]
    await _later(w, 25, _idle(sid))
    await w.utilization([_idle(sid, gpu_util_percent=80.0)])  # busy again
    assert (await w.read(0, sid))["idle_since"] is None
    await _later(w, 21, _idle(sid))
    warned = await w.read(0, sid)
    assert warned["can_keep_running"] is True
    kept = await w.act(0, sid, "keep-running")
    assert kept.status_code == 200, kept.text
    assert kept.json()["can_keep_running"] is False
    again = await w.act(0, sid, "keep-running")
    assert again.status_code == 409
    await _later(w, 30, _idle(sid))
    assert (await w.read(0, sid))["state"] == "running"  # deferred by an hour
    assert (await _later(w, 21, _idle(sid)))["warned"] == 1  # warned again before the pause
    assert (await _later(w, 10, _idle(sid)))["idle"] == 1
    assert (await w.read(0, sid))["state"] == "pausing"


async def test_without_keep_running_in_the_policy_the_owner_cannot_defer(build: Builder) -> None:
    w = await _idle_world(build, keep_running_limit_minutes=0)
    sid = (await w.running())["id"]
    await _later(w, 25, _idle(sid))
    assert (await w.read(0, sid))["idle_pause_at"] is not None
    assert (await w.read(0, sid))["can_keep_running"] is False
    refused = await w.act(0, sid, "keep-running")
    assert refused.status_code == 403


async def test_an_unreadable_or_stale_source_reaps_nothing(build: Builder) -> None:
    w = await _idle_world(build)
    sid = (await w.running())["id"]
    await w.utilization([_idle(sid)])
    bad = await w.utilization([], readable=False, error="connection refused")
    assert bad.status_code == 200
    build.clock.advance(timedelta(hours=2))
    assert await _reap(build) == {"warned": 0, "idle": 0, "max_length": 0}
    assert (await w.read(0, sid))["state"] == "running"


async def test_a_session_without_a_kernel_yet_is_idle_since_it_started(build: Builder) -> None:
    w = await _idle_world(build)
    sid = (await w.running())["id"]
    started = (await w.row(sid)).running_since
    build.clock.advance(timedelta(minutes=5))
    await w.utilization([{"session_id": sid, "has_series": False}])
    assert (await w.row(sid)).idle_since == started


async def test_whole_card_sessions_go_by_the_last_kernel(build: Builder) -> None:
    w = await _idle_world(build)
    sid = (await w.running(0, "exclusive"))["id"]
    build.clock.advance(timedelta(minutes=40))
    busy = {"session_id": sid, "gpu_util_percent": None, "last_kernel_seconds": 5.0}
    await w.utilization([busy])
    assert (await w.row(sid)).idle_since is None
    quiet = busy | {"last_kernel_seconds": 600.0}
    await w.utilization([quiet])
    assert (await w.row(sid)).idle_since == build.clock.now() - timedelta(seconds=600)


async def test_a_session_past_its_maximum_length_is_paused(build: Builder) -> None:
    w = await _idle_world(build, max_session_minutes=120)
    sid = (await w.running())["id"]
    build.clock.advance(timedelta(minutes=119))
    assert (await _reap(build))["max_length"] == 0
    build.clock.advance(timedelta(minutes=1))
    assert (await _reap(build))["max_length"] == 1
    assert (await w.read(0, sid))["state"] == "pausing"
    assert "session.paused.max_length" in await _kinds(w)


async def test_another_clusters_report_changes_nothing(build: Builder) -> None:
    w = await _idle_world(build)
    sid = (await w.running())["id"]
    keys = await key_ring_of(build.app).get(datetime.now(UTC))
    other = keys.mint("00000000-0000-0000-0000-000000000001", build.clock.now())
    response = await build.anonymous().post(
        f"/internal/v1/clusters/{w.cluster_id}/utilization",
        json={"sequence": 5, "source": "dcgm", "samples": [_idle(sid)]},
        headers={"Authorization": f"Bearer {other}"},
    )
    assert response.status_code in (401, 403, 404)
    anonymous = await build.anonymous().post(
        f"/internal/v1/clusters/{w.cluster_id}/utilization",
        json={"sequence": 5, "source": "dcgm", "samples": [_idle(sid)]},
    )
    assert anonymous.status_code == 401
    assert (await w.row(sid)).idle_since is None


async def test_a_silent_session_is_lost_and_settled(build: Builder) -> None:
    w = await session_world(build)
    sid = (await w.running())["id"]
    build.clock.advance(timedelta(minutes=29))
    settings = settings_of(build)
    assert await tasks.reconcile_once(build.sessions, settings, build.clock.now()) == 0
    build.clock.advance(timedelta(minutes=2))
    assert await tasks.reconcile_once(build.sessions, settings, build.clock.now()) == 1
    lost = await w.read(0, sid)
    assert lost["state"] == "lost"
    assert lost["billing"] is False
    assert lost["actions"] == ["resume", "stop"]
    async with build.sessions() as db:
        holds = list(await db.scalars(select(CreditHold)))
    assert [h.status for h in holds] == ["settled"]
    assert holds[0].captured == 2_000_000 * 31 * 60 // 3600
    await assert_ledger_clean(build.sessions)


async def test_a_pod_gone_without_a_pause_is_lost_and_a_failed_one_fails(build: Builder) -> None:
    w = await session_world(build)
    gone = (await w.running(0))["id"]
    failed = (await w.running(1))["id"]
    await w.report(gone, "Pending", "waiting for the pod")
    assert (await w.read(0, gone))["state"] == "lost"
    await w.report(failed, "Failed", "OOMKilled")
    after = await w.read(1, failed)
    assert after["state"] == "failed"
    assert "OOMKilled" in after["state_reason"]
    resumed = await w.act(1, failed, "resume")
    assert resumed.json()["state"] == "starting"
    await assert_ledger_clean(build.sessions)


async def test_a_session_whose_card_went_missing_is_lost(build: Builder) -> None:
    w = await session_world(build, n_cards=1)
    sid = (await w.running(0, "exclusive"))["id"]
    await apply(build.sessions, w.cluster_id, 2, [], build.clock.now())  # the card is gone
    settings = settings_of(build)
    assert await tasks.reconcile_once(build.sessions, settings, build.clock.now()) == 1
    lost = await w.read(0, sid)
    assert lost["state"] == "lost"
    assert "missing" in lost["state_reason"]
    await assert_ledger_clean(build.sessions)


async def test_keep_running_needs_a_warning_first(build: Builder) -> None:
    w = await _idle_world(build)
    sid = (await w.running())["id"]
    refused = await w.act(0, sid, "keep-running")
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "not_idle"


async def test_a_session_that_never_starts_fails_and_is_settled(build: Builder) -> None:
    w = await session_world(build)
    sid = (await w.create())["id"]
    await w.report(sid, "Pending", "Unschedulable: no node has the memory")
    settings = settings_of(build)
    build.clock.advance(timedelta(minutes=14))
    assert await tasks.reconcile_once(build.sessions, settings, build.clock.now()) == 0
    build.clock.advance(timedelta(minutes=2))
    assert await tasks.reconcile_once(build.sessions, settings, build.clock.now()) == 1
    failed = await w.read(0, sid)
    assert failed["state"] == "failed"
    assert "Unschedulable" in failed["state_reason"]
    assert failed["billing"] is False
    await assert_ledger_clean(build.sessions)


async def test_a_stop_its_cluster_never_confirms_ends_after_the_report_timeout(
    build: Builder,
) -> None:
    """A stopping session waits on the cluster to confirm its resource is gone; a cluster that
    stops answering must not keep it (and the cluster's removal) waiting forever."""
    w = await session_world(build)
    sid = (await w.running())["id"]
    stopped = await w.act(0, sid, "stop")
    assert stopped.json()["state"] == "stopping"
    settings = settings_of(build)
    build.clock.advance(timedelta(minutes=settings.session_report_timeout_minutes - 1))
    assert await tasks.reconcile_once(build.sessions, settings, build.clock.now()) == 0
    assert (await w.read(0, sid))["state"] == "stopping"
    build.clock.advance(timedelta(minutes=2))
    assert await tasks.reconcile_once(build.sessions, settings, build.clock.now()) == 1
    ended = await w.read(0, sid)
    assert ended["state"] == "stopped"
    assert "not confirmed the removal" in ended["state_reason"]
    row = await w.row(sid)
    assert row.ended_at is not None
    assert row.applied_generation < row.spec_generation  # the delete is still to be taken over
    await assert_ledger_clean(build.sessions)


async def test_a_replayed_or_older_utilization_report_changes_nothing(build: Builder) -> None:
    w = await _idle_world(build)
    sid = (await w.running())["id"]
    keys = await key_ring_of(build.app).get(datetime.now(UTC))
    token = keys.mint(str(w.cluster_id), build.clock.now())

    async def report(sequence: int, util: float) -> bool:
        response = await build.anonymous().post(
            f"/internal/v1/clusters/{w.cluster_id}/utilization",
            json={
                "sequence": sequence,
                "source": "dcgm",
                "samples": [_idle(sid, gpu_util_percent=util)],
            },
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 200, response.text
        return bool(response.json()["applied"])

    assert await report(10, 90.0) is True
    assert await report(10, 0.0) is False
    assert await report(9, 0.0) is False
    row = await w.row(sid)
    assert row.gpu_util_percent == 90.0
    assert row.idle_since is None


async def test_a_group_with_sessions_not_stopped_cannot_be_deleted(build: Builder) -> None:
    w = await session_world(build)
    sid = (await w.create(0, None))["id"]
    root = await build.signed_in(await build.user("Root", super_admin=True))
    for user_id in w.capacity.user_ids:  # a group must be empty before it is deleted
        left = await root.delete(f"/api/v1/groups/{w.group_id}/members/{user_id}")
        assert left.status_code == 204, left.text
    refused = await root.delete(f"/api/v1/groups/{w.group_id}")
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "has_live_sessions"
    # Its owner leaving the group paused it; paused is not stopped.
    assert (await w.read(0, sid))["state"] == "pausing"
