"""A session's life through the API on the real database: admitted, running on the operator's
report, metered, paused (card back, billing stopped), resumed on a card again, stopped and
settled; and the refusals along the way."""

from __future__ import annotations

import uuid
from datetime import timedelta

from sqlalchemy import select

from gshare.capacity.models import Allocation
from gshare.credits.amounts import MICRO
from gshare.credits.models import CreditHold
from gshare.events.models import Notification
from gshare.sessions import service, tasks
from gshare.sessions.models import SessionTransition
from tests.builders import Builder
from tests.capacity.builders import Card, add_cluster, apply
from tests.credits.builders import assert_ledger_clean
from tests.sessions.world import API, session_world, settings_of

QUARTER_PER_HOUR = 2 * MICRO  # the 1/4 tier of an 8-credit card


async def _allocations(build: Builder, session_id: str) -> list[Allocation]:
    async with build.sessions() as db:
        holds = (
            await db.scalars(
                select(CreditHold.id).where(CreditHold.session_id == uuid.UUID(session_id))
            )
        ).all()
        rows = await db.scalars(select(Allocation).where(Allocation.hold_id.in_(list(holds))))
        return list(rows)


async def _holds(build: Builder, session_id: str) -> list[CreditHold]:
    async with build.sessions() as db:
        query = (
            select(CreditHold)
            .where(CreditHold.session_id == uuid.UUID(session_id))
            .order_by(CreditHold.created_at)
        )
        return list(await db.scalars(query))


async def _meter(build: Builder) -> int:
    return await tasks.meter(build.sessions, settings_of(build), build.clock.now())


async def test_a_session_lives_pauses_resumes_and_stops_billed_to_the_second(
    build: Builder,
) -> None:
    w = await session_world(build)
    created = await w.create()
    assert created["state"] == "starting"
    assert created["billing"] is True
    assert created["price_per_hour"] == "2"
    assert created["model"] == "NVIDIA-A100-SXM4-80GB"
    assert created["tier_name"] == "1/4"
    assert [v["mount_path"] for v in created["volumes"]] == ["/home/gshare"]
    sid = created["id"]

    assert (await w.report(sid, "Running")).json()["applied"] is True
    running = await w.read(0, sid)
    assert running["state"] == "running"
    assert running["actions"] == ["pause", "stop"]

    build.clock.advance(timedelta(seconds=90))
    assert await _meter(build) == 1
    (hold,) = await _holds(build, sid)
    assert hold.captured == QUARTER_PER_HOUR * 90 // 3600
    # A second tick at the same instant bills nothing more.
    assert await _meter(build) == 0
    assert (await _holds(build, sid))[0].captured == hold.captured

    build.clock.advance(timedelta(seconds=30, milliseconds=700))
    paused = (await w.act(0, sid, "pause")).json()
    assert paused["state"] == "pausing"
    assert paused["billing"] is False
    (first,) = await _holds(build, sid)
    assert first.status == "settled"
    assert first.captured == QUARTER_PER_HOUR * 120 // 3600  # whole seconds only
    assert paused["cost"] == str(first.captured / MICRO).rstrip("0").rstrip(".")
    (allocation,) = await _allocations(build, sid)
    assert allocation.status == "released"
    # The pause is not billed, however long.
    build.clock.advance(timedelta(hours=5))
    assert await _meter(build) == 0
    assert (await w.report(sid, "Paused")).status_code == 200
    assert (await w.read(0, sid))["state"] == "paused"

    resumed = (await w.act(0, sid, "resume")).json()
    assert resumed["state"] == "starting"
    assert resumed["billing"] is True
    row = await w.row(sid)
    assert row.desired_state == "Running"
    await w.report(sid, "Running")
    build.clock.advance(timedelta(seconds=3600))
    stopped = (await w.act(0, sid, "stop")).json()
    assert stopped["state"] == "stopping"
    async with build.sessions() as db, db.begin():
        stored = await db.get(type(row), row.id, with_for_update=True)
        assert stored is not None
        await service.removed(db, stored, build.clock.now())
    final = await w.read(0, sid)
    assert final["state"] == "stopped"
    assert final["actions"] == []
    holds = await _holds(build, sid)
    assert [h.status for h in holds] == ["settled", "settled"]
    assert holds[1].captured == QUARTER_PER_HOUR  # one hour at 2 credits
    assert final["cost"] == "2.066666"  # 120 s + 3600 s at 2 credits an hour
    history = [(t["from_state"], t["to_state"]) for t in final["transitions"]]
    assert history == [
        (None, "queued"),
        ("queued", "starting"),
        ("starting", "running"),
        ("running", "pausing"),
        ("pausing", "paused"),
        ("paused", "resuming"),
        ("resuming", "starting"),
        ("starting", "running"),
        ("running", "stopping"),
        ("stopping", "stopped"),
    ]
    await assert_ledger_clean(build.sessions)


async def test_illegal_transitions_answer_409_with_the_current_state(build: Builder) -> None:
    w = await session_world(build)
    sid = (await w.create())["id"]
    response = await w.act(0, sid, "resume")
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "invalid_transition"
    assert error["state"] == "starting"
    assert (await w.act(0, sid, "stop")).status_code == 200
    again = await w.act(0, sid, "pause")
    assert again.status_code == 409
    assert again.json()["error"]["state"] == "stopping"


async def test_other_users_sessions_do_not_exist_for_them(build: Builder) -> None:
    w = await session_world(build)
    sid = (await w.create(0))["id"]
    for action in ("pause", "resume", "stop", "keep-running", "entry"):
        response = await w.act(1, sid, action)
        assert response.status_code == 404, (action, response.text)
    assert (await w.members[1].get(f"{API}/sessions/{sid}")).status_code == 404
    assert (await w.members[1].delete(f"{API}/sessions/{sid}")).status_code == 404
    listed = (await w.members[1].get(f"{API}/sessions")).json()["items"]
    assert listed == []
    anonymous = build.anonymous()
    assert (await anonymous.get(f"{API}/sessions")).status_code == 401
    assert (await w.read(0, sid))["state"] == "starting"


async def test_more_sessions_than_cards_queue_and_start_as_others_stop(build: Builder) -> None:
    w = await session_world(build, n_cards=1)
    first = await w.create(0, "exclusive")
    second = await w.create(1, "exclusive")
    assert first["state"] == "starting"
    assert second["state"] == "queued"
    assert second["queue_position"] == 1
    assert second["billing"] is False
    assert (await w.act(0, first["id"], "stop")).status_code == 200
    summary = await _dequeue(build)
    assert len(summary.admitted) == 1
    started = await w.read(1, second["id"])
    assert started["state"] == "starting"
    assert started["billing"] is True
    async with build.sessions() as db:
        told = {
            n.kind: n
            for n in await db.scalars(
                select(Notification).where(Notification.user_id == w.capacity.user_ids[1])
            )
        }
    # Kept unread, with when it started, for an owner whose console was closed.
    started_notice = told["session.started"]
    assert started_notice.read_at is None
    now = build.clock.now()
    assert started_notice.data["started_at"] == now.isoformat()
    assert f"A card was free at {now:%H:%M} UTC" in started_notice.body
    await assert_ledger_clean(build.sessions)


async def _dequeue(build: Builder):
    from gshare.capacity import tasks as capacity_tasks

    return await capacity_tasks.dequeue_once(build.sessions, settings_of(build), build.clock.now())


async def test_a_queued_session_paused_or_stopped_leaves_the_queue(build: Builder) -> None:
    w = await session_world(build, n_cards=1)
    await w.create(0, "exclusive")
    waiting = await w.create(1, "exclusive")
    paused = (await w.act(1, waiting["id"], "pause")).json()
    assert paused["state"] == "paused"
    assert paused["queue_position"] is None
    resumed = (await w.act(1, waiting["id"], "resume")).json()
    assert resumed["state"] == "resuming"
    assert resumed["queue_position"] == 1
    stopped = (await w.act(1, waiting["id"], "stop")).json()
    assert stopped["state"] == "stopping"
    async with build.sessions() as db:
        transitions = list(
            await db.scalars(
                select(SessionTransition.to_state)
                .where(SessionTransition.session_id == uuid.UUID(waiting["id"]))
                .order_by(SessionTransition.id)
            )
        )
    assert transitions == ["queued", "paused", "resuming", "stopping"]


async def test_credits_running_out_pause_the_session_and_say_why(build: Builder) -> None:
    # 3 credits: a 2-credit hold window; once it runs low, 1 credit left cannot buy another.
    w = await session_world(build, user_credits=3)
    sid = (await w.running(0, "1/4"))["id"]
    build.clock.advance(timedelta(minutes=30))
    await _meter(build)
    assert (await w.read(0, sid))["state"] == "running"  # 1 credit captured, 1 still held
    build.clock.advance(timedelta(minutes=29))
    await _meter(build)
    after = await w.read(0, sid)
    assert after["state"] == "pausing", after
    assert "wallet" in after["state_reason"]
    holds = await _holds(build, sid)
    assert all(h.status != "open" for h in holds)
    async with build.sessions() as db:
        kinds = set(
            await db.scalars(
                select(Notification.kind).where(Notification.user_id == w.capacity.user_ids[0])
            )
        )
    assert "session.paused.credits" in kinds
    await assert_ledger_clean(build.sessions)


async def test_a_cpu_session_costs_nothing(build: Builder) -> None:
    w = await session_world(build)
    created = await w.create(0, None)
    assert created["state"] == "starting"
    assert created["billing"] is False
    assert created["price_per_hour"] == "0"
    assert created["model"] is None
    await w.report(created["id"], "Running")
    build.clock.advance(timedelta(hours=3))
    assert await _meter(build) == 0
    stopped = (await w.act(0, created["id"], "stop")).json()
    assert stopped["cost"] == "0"


async def test_a_resume_waits_for_the_cluster_that_holds_its_volumes(build: Builder) -> None:
    """Two clusters of one card each: a paused session whose home lives on the first resumes
    only there, even while the second has a free card."""
    w = await session_world(build, n_cards=1)
    async with build.sessions() as db, db.begin():
        second = await add_cluster(db, build.clock.now(), "second")
    await apply(build.sessions, second, 1, [Card("GPU-second-0")], build.clock.now())
    first = await w.running(0, "exclusive")
    home_cluster = first["cluster_id"]
    assert (await w.act(0, first["id"], "pause")).status_code == 200
    # The other member takes the card of the home's cluster.
    taker = await w.create(1, "exclusive")
    if taker["cluster_id"] != home_cluster:
        # It landed on the other cluster: take the home cluster's card too.
        taker = await w.create(1, "exclusive")
    assert taker["cluster_id"] == home_cluster
    answer = await w.act(0, first["id"], "resume")
    assert answer.status_code == 200, answer.text
    resumed = answer.json()
    assert resumed["state"] == "resuming"
    assert resumed["queue_position"] == 1
    assert (await w.act(1, taker["id"], "stop")).status_code == 200
    await _dequeue(build)
    back = await w.read(0, first["id"])
    assert back["state"] == "starting"
    assert back["cluster_id"] == home_cluster
    await assert_ledger_clean(build.sessions)


async def test_deactivating_a_user_pauses_their_sessions_and_frees_their_cards(
    build: Builder,
) -> None:
    """Their console sign-ins end, and so do their sessions' billing and cards: a running one
    pauses, a queued one leaves the queue; volumes stay, and another member's session runs on."""
    w = await session_world(build, n_cards=2)
    mine = await w.create(0, "exclusive")
    assert (await w.report(mine["id"], "Running")).json()["applied"] is True
    neighbour = await w.create(1, "exclusive")
    waiting = await w.create(0, "exclusive")
    assert waiting["state"] == "queued"
    owner = w.capacity.user_ids[0]
    admin = await build.signed_in(await build.user(super_admin=True))
    build.clock.advance(timedelta(minutes=3))
    answer = await admin.patch(f"{API}/users/{owner}", json={"active": False})
    assert answer.status_code == 200, answer.text

    paused = await w.row(mine["id"])
    assert (paused.state, paused.desired_state) == ("pausing", "Paused")
    assert "deactivated" in paused.state_reason
    assert [h.status for h in await _holds(build, mine["id"])] == ["settled"]
    assert (await w.row(waiting["id"])).state == "paused"
    assert (await w.row(neighbour["id"])).state == "starting"
    async with build.sessions() as db:
        kinds = list(
            await db.scalars(select(Notification.kind).where(Notification.user_id == owner))
        )
    assert kinds.count("session.paused.deactivated") == 2
    await assert_ledger_clean(build.sessions)
