"""Preemption and draining on the real database: notice, the promised card, the pause at the
deadline, the queued resume, a victim leaving early, notices withdrawn, drains and their
progress, and what admins see."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select, update

from gshare.capacity import preempting
from gshare.capacity import repository as capacity_repository
from gshare.capacity import tasks as capacity_tasks
from gshare.capacity.models import Notice
from gshare.events.models import Notification
from gshare.identity.models import Group, Membership, Organization
from tests.builders import Builder
from tests.capacity.builders import another_group, set_policy
from tests.credits.builders import assert_ledger_clean
from tests.sessions.world import (
    API,
    SessionWorld,
    admission_loop_turn,
    session_world,
    settings_of,
    signed_in,
)


async def _notices(w: SessionWorld) -> list[Notice]:
    async with w.build.sessions() as db:
        return list(await db.scalars(select(Notice).order_by(Notice.noticed_at, Notice.id)))


async def _kinds(w: SessionWorld, member: int) -> list[str]:
    async with w.build.sessions() as db:
        found = await db.scalars(
            select(Notification.kind)
            .where(Notification.user_id == w.capacity.user_ids[member])
            .order_by(Notification.created_at)
        )
        return list(found)


async def _open_holds(w: SessionWorld) -> int:
    from gshare.credits.models import CreditHold

    async with w.build.sessions() as db:
        found = await db.scalar(
            select(func.count()).select_from(CreditHold).where(CreditHold.status == "open")
        )
    return int(found or 0)


async def _preempting_world(build: Builder) -> tuple[SessionWorld, dict, dict]:
    """One card: member 0's exclusive session runs on it, member 1 (priority high) waits."""
    w = await session_world(build, n_cards=1)
    await set_policy(
        build.sessions, build.clock.now(), "user", w.capacity.user_ids[1], {"priority": "high"}
    )
    victim = await w.running(0, "exclusive")
    waiting = await w.create(1, "exclusive")
    assert waiting["state"] == "queued", waiting
    return w, victim, waiting


async def test_a_higher_priority_request_gives_notice_then_takes_the_card(build: Builder) -> None:
    w, victim, waiting = await _preempting_world(build)
    now = build.clock.now()
    await admission_loop_turn(w.build)
    seen = await w.read(0, victim["id"])
    assert seen["state"] == "running"
    assert seen["notice"]["kind"] == "preemption"
    assert seen["notice"]["reason"] == "priority"
    deadline = now + timedelta(minutes=10)
    assert seen["notice"]["deadline"].startswith(deadline.isoformat()[:19])
    assert (await w.read(1, waiting["id"]))["card_freed_at"] == seen["notice"]["deadline"]
    assert "session.notice.preemption" in await _kinds(w, 0)
    # Walking again gives no second notice and pauses nothing before the deadline.
    build.clock.advance(timedelta(minutes=9))
    await admission_loop_turn(w.build)
    assert len(await _notices(w)) == 1
    assert (await w.read(0, victim["id"]))["state"] == "running"
    assert (await w.read(1, waiting["id"]))["state"] == "queued"
    # At the deadline: paused (billing stopped, volumes kept) and queued to resume.
    build.clock.advance(timedelta(minutes=1))
    await admission_loop_turn(w.build)
    assert (await w.read(0, victim["id"]))["state"] == "resuming"
    assert (await w.read(1, waiting["id"]))["state"] == "starting"
    [notice] = await _notices(w)
    assert notice.status == "paused"
    assert "session.paused.preempted" in await _kinds(w, 0)
    assert await _open_holds(w) == 1  # only the session that took the card is billed
    # When the card frees again, the paused session resumes by itself.
    assert (await w.report(waiting["id"], "Running")).status_code == 200
    assert (await w.act(1, waiting["id"], "stop")).status_code == 200
    await admission_loop_turn(w.build)
    assert (await w.read(0, victim["id"]))["state"] == "starting"
    await assert_ledger_clean(build.sessions)


async def test_a_victim_that_pauses_itself_frees_the_card_at_once(build: Builder) -> None:
    w, victim, waiting = await _preempting_world(build)
    await admission_loop_turn(w.build)
    assert (await w.act(0, victim["id"], "pause")).status_code == 200
    await admission_loop_turn(w.build)
    assert (await w.read(1, waiting["id"]))["state"] == "starting"
    [notice] = await _notices(w)
    assert notice.status == "freed"
    assert (await w.read(0, victim["id"]))["state"] == "pausing"
    await assert_ledger_clean(build.sessions)


async def test_a_notice_is_withdrawn_when_the_request_leaves_the_queue(build: Builder) -> None:
    w, victim, waiting = await _preempting_world(build)
    await admission_loop_turn(w.build)
    assert (await w.act(1, waiting["id"], "stop")).status_code == 200
    await admission_loop_turn(w.build)
    [notice] = await _notices(w)
    assert notice.status == "withdrawn"
    seen = await w.read(0, victim["id"])
    assert seen["state"] == "running"
    assert seen["notice"] is None
    assert "session.notice.withdrawn" in await _kinds(w, 0)
    build.clock.advance(timedelta(hours=1))
    await admission_loop_turn(w.build)
    assert (await w.read(0, victim["id"]))["state"] == "running"


async def test_minimum_runtime_and_unpreemptible_sessions_are_never_given_notice(
    build: Builder,
) -> None:
    w, victim, waiting = await _preempting_world(build)
    owner = w.capacity.user_ids[0]
    await set_policy(build.sessions, build.clock.now(), "user", owner, {"min_runtime_minutes": 30})
    await admission_loop_turn(w.build)
    assert await _notices(w) == []
    build.clock.advance(timedelta(minutes=31))
    await set_policy(build.sessions, build.clock.now(), "user", owner, {"preemptible": False})
    await admission_loop_turn(w.build)
    assert await _notices(w) == []
    await set_policy(build.sessions, build.clock.now(), "user", owner, {})
    await admission_loop_turn(w.build)
    assert [n.status for n in await _notices(w)] == ["pending"]
    assert (await w.read(1, waiting["id"]))["card_freed_at"] is not None
    assert (await w.read(0, victim["id"]))["notice"] is not None


@pytest.mark.parametrize(
    "protection", [{"preemptible": False}, {"min_runtime_minutes": 600}], ids=["pinned", "runtime"]
)
async def test_a_session_protected_after_its_notice_keeps_running(
    build: Builder, protection: dict[str, object]
) -> None:
    """The super admin protects a session already given notice: the notice is withdrawn at
    the next walk, the session is told and runs on past the old deadline."""
    w, victim, waiting = await _preempting_world(build)
    await admission_loop_turn(w.build)
    assert (await w.read(0, victim["id"]))["notice"]["kind"] == "preemption"
    root = await build.signed_in(await build.user("Root", super_admin=True))
    path = f"{API}/policies/users/{w.capacity.user_ids[0]}"
    assert (await root.put(path, json={"values": protection})).status_code == 200
    await admission_loop_turn(w.build)
    [notice] = await _notices(w)
    assert notice.status == "withdrawn"
    assert (await w.read(0, victim["id"]))["notice"] is None
    build.clock.advance(timedelta(minutes=30))
    await admission_loop_turn(w.build)
    assert (await w.read(0, victim["id"]))["state"] == "running"
    assert (await w.read(1, waiting["id"]))["state"] == "queued"
    await assert_ledger_clean(build.sessions)


async def test_a_request_whose_owner_left_the_group_gives_no_notice(build: Builder) -> None:
    """A guest's membership runs out while their request waits: before the reconcile tick
    notices, the walk already gives no one notice for it (the dequeue refuses it)."""
    w, victim, waiting = await _preempting_world(build)
    async with build.sessions() as db, db.begin():
        await db.execute(
            update(Membership)
            .where(Membership.user_id == w.capacity.user_ids[1])
            .values(role="guest", expires_at=build.clock.now() - timedelta(minutes=1))
        )
    # The notice walk alone, as a worker may run it before its next dequeue.
    await capacity_tasks.preempt_once(build.sessions, settings_of(build), build.clock.now())
    assert await _notices(w) == []
    assert (await w.read(0, victim["id"]))["state"] == "running"
    await admission_loop_turn(w.build)
    assert await _notices(w) == []
    assert (await w.row(waiting["id"])).state == "failed"


async def test_the_notice_length_is_the_victims_policy(build: Builder) -> None:
    w, victim, _ = await _preempting_world(build)
    owner = w.capacity.user_ids[0]
    await set_policy(
        build.sessions, build.clock.now(), "user", owner, {"preemption_notice_minutes": 0}
    )
    await admission_loop_turn(w.build)
    # No notice time: paused on the next walk.
    await admission_loop_turn(w.build)
    assert (await w.read(0, victim["id"]))["state"] == "resuming"


# ---- drains --------------------------------------------------------------------------------


async def _super_client(build: Builder) -> httpx.AsyncClient:
    root = await build.user(super_admin=True)
    return await build.signed_in(root)


async def _org_admin_client(w: SessionWorld) -> tuple[Organization, httpx.AsyncClient]:
    """The organization of the world's group, and a signed-in admin of it."""
    async with w.build.sessions() as db:
        group = await db.get(Group, w.group_id)
        assert group is not None
        org = await db.get(Organization, group.org_id)
        assert org is not None
    admin = await w.build.user()
    await w.build.org_admin(admin, org)
    return org, await w.build.signed_in(admin)


async def _drain(
    root: httpx.AsyncClient, w: SessionWorld, ahead: timedelta, reason: str, **target: str
) -> dict[str, Any]:
    """The super admin drains the world's cluster (or, with `card_id`, one card of it)."""
    scope = "card" if "card_id" in target else "cluster"
    made = await root.post(
        f"{API}/drains",
        json={
            "scope": scope,
            "cluster_id": str(w.cluster_id),
            "deadline": (w.build.clock.now() + ahead).isoformat(),
            "reason": reason,
            **target,
        },
    )
    assert made.status_code == 201, made.text
    return dict(made.json())


async def test_draining_a_card_pauses_its_sessions_at_the_deadline_and_ending_it_brings_it_back(
    build: Builder,
) -> None:
    w = await session_world(build, n_cards=1)
    root = await _super_client(build)
    victim = await w.running(0, "1/2")
    cards = (await root.get(f"{API}/clusters/{w.cluster_id}/cards")).json()["items"]
    drain = await _drain(
        root, w, timedelta(minutes=30), "Replacing the fan.", card_id=cards[0]["id"]
    )
    assert drain["sessions_left"] == 1
    assert drain["cards"] == 1
    # The card takes no new session while it drains.
    later = await w.create(1, "1/2")
    assert later["state"] == "queued"
    await admission_loop_turn(w.build)
    seen = await w.read(0, victim["id"])
    assert seen["notice"]["kind"] == "drain"
    assert "Replacing the fan." in seen["notice"]["message"]
    [card] = (await root.get(f"{API}/clusters/{w.cluster_id}/cards")).json()["items"]
    assert card["drain"]["id"] == drain["id"]
    assert card["occupants"][0]["notice_deadline"] is not None
    listed = (await root.get(f"{API}/drains")).json()["items"]
    assert [d["next_deadline"] is not None for d in listed] == [True]
    build.clock.advance(timedelta(minutes=30))
    await admission_loop_turn(w.build)
    assert (await w.read(0, victim["id"]))["state"] == "resuming"
    assert (await w.read(1, later["id"]))["state"] == "queued"
    ended = await root.post(f"{API}/drains/{drain['id']}/end")
    assert ended.status_code == 200
    assert ended.json()["status"] == "ended"
    assert (await root.post(f"{API}/drains/{drain['id']}/end")).status_code == 409
    await admission_loop_turn(w.build)
    states = {(await w.read(0, victim["id"]))["state"], (await w.read(1, later["id"]))["state"]}
    assert states == {"starting"}
    await assert_ledger_clean(build.sessions)


async def test_cancelling_a_drain_withdraws_its_notices(build: Builder) -> None:
    w = await session_world(build, n_cards=1)
    root = await _super_client(build)
    victim = await w.running(0, "1/2")
    made = await _drain(root, w, timedelta(minutes=5), "Upgrading the nodes")
    await admission_loop_turn(w.build)
    assert (await w.read(0, victim["id"]))["notice"] is not None
    assert (await root.post(f"{API}/drains/{made['id']}/cancel")).status_code == 200
    await admission_loop_turn(w.build)
    build.clock.advance(timedelta(minutes=10))
    await admission_loop_turn(w.build)
    seen = await w.read(0, victim["id"])
    assert seen["state"] == "running"
    assert seen["notice"] is None


async def test_bad_drains_are_refused_with_reasons(build: Builder) -> None:
    w = await session_world(build, n_cards=1)
    root = await _super_client(build)
    now = build.clock.now()
    good = {
        "scope": "node",
        "cluster_id": str(w.cluster_id),
        "node": "nowhere",
        "deadline": (now + timedelta(hours=1)).isoformat(),
        "reason": "maintenance",
    }
    cases = [
        ({**good}, 404, "node_not_found"),
        ({**good, "cluster_id": str(uuid.uuid4())}, 404, "cluster_not_found"),
        ({**good, "deadline": (now + timedelta(days=31)).isoformat()}, 422, "invalid_deadline"),
        ({**good, "deadline": (now - timedelta(hours=1)).isoformat()}, 422, "invalid_deadline"),
        ({**good, "deadline": "9999-12-31T23:59:59+00:00"}, 422, None),
        ({**good, "scope": "card"}, 422, "invalid_drain"),
        ({**good, "scope": "card", "node": None, "card_id": str(uuid.uuid4())}, 404, None),
        ({**good, "scope": "cluster"}, 422, "invalid_drain"),
        ({**good, "reason": ""}, 422, None),
        ({**good, "reason": "a\x00b"}, 422, None),
        ({**good, "reason": "a\u202eb"}, 422, None),
        ({**good, "reason": "x" * 501}, 422, None),
        ({**good, "scope": "rack"}, 422, None),
    ]
    for body, status, code in cases:
        answer = await root.post(f"{API}/drains", json=body)
        assert answer.status_code == status, (body, answer.text)
        if code is not None:
            assert answer.json()["error"]["code"] == code, answer.text
    assert (await root.get(f"{API}/drains")).json()["items"] == []
    # Nobody else may drain, nor end one.
    member = w.members[0]
    assert (await member.post(f"{API}/drains", json=good)).status_code == 403


async def test_admins_see_pending_preemptions_and_counts_per_group(build: Builder) -> None:
    w, victim, _waiting = await _preempting_world(build)
    await admission_loop_turn(w.build)
    root = await _super_client(build)
    page = (await root.get(f"{API}/notices")).json()
    [item] = page["items"]
    assert item["session_id"] == victim["id"]
    assert item["request_id"] is not None
    assert page["counts"] == [{"group_id": str(w.group_id), "preempted": 1, "preempting": 1}]
    queue = (await root.get(f"{API}/queue?scope=all")).json()["items"]
    [queued] = [q for q in queue if q["status"] == "queued"]
    assert queued["card_freed_at"] == item["deadline"]
    # A member is not an admin.
    assert (await w.members[0].get(f"{API}/notices")).status_code == 403


async def test_a_card_error_during_a_long_drain_brings_the_pause_nearer(build: Builder) -> None:
    w = await session_world(build, n_cards=1)
    root = await _super_client(build)
    victim = await w.running(0, "1/2")
    await _drain(root, w, timedelta(days=2), "Moving the rack")
    await admission_loop_turn(w.build)
    assert (await w.read(0, victim["id"]))["notice"]["reason"] == "drain"
    [card] = (await root.get(f"{API}/clusters/{w.cluster_id}/cards")).json()["items"]
    async with build.sessions() as db, db.begin():
        started = await preempting.drain_card_for_error(
            db, uuid.UUID(card["id"]), w.cluster_id, "XID 79", build.clock.now()
        )
    assert started
    await admission_loop_turn(w.build)
    notice = (await w.read(0, victim["id"]))["notice"]
    assert notice["reason"] == "xid"
    assert notice["deadline"].startswith(
        (build.clock.now() + preempting.XID_NOTICE).isoformat()[:19]
    )
    build.clock.advance(preempting.XID_NOTICE)
    await admission_loop_turn(w.build)
    assert (await w.read(0, victim["id"]))["state"] == "resuming"


async def test_only_a_super_admin_sets_the_keys_that_decide_between_tenants(
    build: Builder,
) -> None:
    """An organization's admin may not raise its groups' priority or shield their sessions;
    replacing or clearing the group's policy keeps what a super admin set there."""
    w = await session_world(build, n_cards=1)
    root = await _super_client(build)
    _, org_admin = await _org_admin_client(w)
    path = f"{API}/policies/groups/{w.group_id}"
    for values in ({"priority": "high"}, {"preemptible": False}, {"min_runtime_minutes": 60}):
        refused = await org_admin.put(path, json={"values": values})
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["code"] == "policy_key_reserved"
    assert (await root.put(path, json={"values": {"priority": "low"}})).status_code == 200
    kept = await org_admin.put(path, json={"values": {"queue_weight": 2}})
    assert kept.status_code == 200, kept.text
    assert (await org_admin.delete(path)).status_code == 204
    async with build.sessions() as db:
        row = await capacity_repository.policy(db, "group", w.group_id)
        assert row is not None
        assert row.values == {"priority": "low"}


# ---- bookings ------------------------------------------------------------------------------


async def _booked_world(build: Builder, *, notice: int = 2) -> tuple[SessionWorld, Group]:
    """One card. Member 1 is also in a second group, which booked the card (one exclusive
    session) from now for two hours with `notice` minutes' notice; member 0's group did not."""
    w = await session_world(build, n_cards=1)
    async with build.sessions() as db:
        first = await db.get(Group, w.capacity.group_id)
        assert first is not None
        org = await db.get(Organization, first.org_id)
        assert org is not None
    lab = await build.group(org, "Deadline lab")
    async with build.sessions() as db:
        from gshare.identity.models import User

        member = await db.get(User, w.capacity.user_ids[1])
        assert member is not None
    await build.member(member, lab)
    root = await build.signed_in(await build.user("Root", super_admin=True))
    now = build.clock.now()
    booked = await root.post(
        f"{API}/bookings",
        json={
            "group_id": str(lab.id),
            "tier_id": w.tier("exclusive"),
            "count": 1,
            "starts_at": now.isoformat(),
            "ends_at": (now + timedelta(hours=2)).isoformat(),
            "title": "Paper deadline",
            "notice_minutes": notice,
        },
    )
    assert booked.status_code == 201, booked.text
    return w, lab


async def test_a_member_takes_back_lent_booked_capacity_after_the_bookings_notice(
    build: Builder,
) -> None:
    w, lab = await _booked_world(build, notice=2)
    # The booked card is lent while the lab does not use it; the borrower's policy sets no
    # notice of its own, so the booking's is the notice.
    borrower = await w.running(0, "exclusive")
    waiting = await w.create(1, "exclusive", group_id=str(lab.id))
    assert waiting["state"] == "queued", waiting
    now = build.clock.now()
    await admission_loop_turn(w.build)
    seen = await w.read(0, borrower["id"])
    assert seen["notice"]["reason"] == "booking"
    assert seen["notice"]["deadline"].startswith((now + timedelta(minutes=2)).isoformat()[:19])
    build.clock.advance(timedelta(minutes=2))
    await admission_loop_turn(w.build)
    assert (await w.read(0, borrower["id"]))["state"] == "resuming"
    assert (await w.read(1, waiting["id"]))["state"] == "starting"
    await assert_ledger_clean(build.sessions)


async def test_a_booking_never_pauses_a_session_the_super_admin_made_not_preemptible(
    build: Builder,
) -> None:
    w, lab = await _booked_world(build, notice=0)
    terms: dict[str, object] = {
        "preemptible": False,
        "priority": "high",
        "min_runtime_minutes": 600,
        "preemption_notice_minutes": 60,
    }
    await set_policy(build.sessions, build.clock.now(), "user", w.capacity.user_ids[0], terms)
    borrower = await w.running(0, "exclusive")
    waiting = await w.create(1, "exclusive", group_id=str(lab.id))
    for _ in range(3):
        await admission_loop_turn(w.build)
        build.clock.advance(timedelta(minutes=1))
    assert await _notices(w) == []
    assert (await w.read(0, borrower["id"]))["state"] == "running"
    assert (await w.read(1, waiting["id"]))["state"] == "queued"


async def test_a_booking_waits_for_the_borrowers_minimum_runtime_and_own_notice(
    build: Builder,
) -> None:
    w, lab = await _booked_world(build, notice=2)
    terms: dict[str, object] = {"min_runtime_minutes": 30, "preemption_notice_minutes": 60}
    await set_policy(build.sessions, build.clock.now(), "user", w.capacity.user_ids[0], terms)
    borrower = await w.running(0, "exclusive")
    waiting = await w.create(1, "exclusive", group_id=str(lab.id))
    await admission_loop_turn(w.build)
    assert await _notices(w) == []
    build.clock.advance(timedelta(minutes=30))
    now = build.clock.now()
    await admission_loop_turn(w.build)
    notice = (await w.read(0, borrower["id"]))["notice"]
    assert notice["reason"] == "booking"
    # The longer of the two notices: the borrower's own, not the booking's two minutes.
    assert notice["deadline"].startswith((now + timedelta(minutes=60)).isoformat()[:19])
    build.clock.advance(timedelta(minutes=59))
    await admission_loop_turn(w.build)
    assert (await w.read(0, borrower["id"]))["state"] == "running"
    build.clock.advance(timedelta(minutes=1))
    await admission_loop_turn(w.build)
    assert (await w.read(0, borrower["id"]))["state"] == "resuming"
    assert (await w.read(1, waiting["id"]))["state"] == "starting"


async def test_beyond_the_booked_count_a_member_waits_like_anyone(build: Builder) -> None:
    w, lab = await _booked_world(build)
    # The lab's one booked session runs; a second one of the lab is not within the booking.
    first = await w.running(1, "exclusive", group_id=str(lab.id))
    waiting = await w.create(1, "exclusive", group_id=str(lab.id))
    assert waiting["state"] == "queued"
    await admission_loop_turn(w.build)
    assert (await w.read(1, first["id"]))["notice"] is None
    assert await _notices(w) == []


async def test_a_booked_member_goes_ahead_of_the_fair_queue(build: Builder) -> None:
    w, lab = await _booked_world(build)
    # The lab's member borrows nothing; member 0 holds the card and queued first for another.
    running = await w.running(1, "exclusive")  # member 1, in the first group: not booked
    earlier = await w.create(0, "exclusive")
    build.clock.advance(timedelta(seconds=30))
    booked = await w.create(1, "exclusive", group_id=str(lab.id))
    assert (earlier["state"], booked["state"]) == ("queued", "queued")
    # Its owner is told why the other, though it came later, is ahead; the queue says the same.
    ahead = (await w.read(0, earlier["id"]))["ahead"]
    assert ahead["requests"] == 1
    assert ahead["groups"] == 1
    assert ahead["reasons"] == {"booking": 1, "waited_too_long": 0, "priority": 0, "earlier": 0}
    assert ahead["in_words"] == "1 request is ahead: it is within its group's booking."
    assert (await w.read(1, booked["id"]))["ahead"]["requests"] == 0
    mine = (await w.members[0].get(f"{API}/queue")).json()["items"]
    assert [item["ahead"] for item in mine if item["status"] == "queued"] == [ahead]
    # The booked request claims the card from the session in the other group at once...
    await admission_loop_turn(w.build)
    [notice] = await _notices(w)
    assert notice.request_id is not None
    assert notice.reason == "booking"
    # ...and when it frees, the booked request starts though the other waited longer.
    assert (await w.act(1, running["id"], "stop")).status_code == 200
    await admission_loop_turn(w.build)
    assert (await w.read(1, booked["id"]))["state"] == "starting"
    assert (await w.read(0, earlier["id"]))["state"] == "queued"


async def test_a_session_within_its_groups_booking_is_no_other_claims_to_take(
    build: Builder,
) -> None:
    w, lab = await _booked_world(build)
    # Member 1 outranks everyone, but the lab's session runs on what the lab booked.
    await set_policy(
        build.sessions, build.clock.now(), "user", w.capacity.user_ids[1], {"priority": "high"}
    )
    booked = await w.running(1, "exclusive", group_id=str(lab.id))
    waiting = await w.create(1, "exclusive")
    assert waiting["state"] == "queued"
    await admission_loop_turn(w.build)
    build.clock.advance(timedelta(minutes=30))
    await admission_loop_turn(w.build)
    assert (await w.read(1, booked["id"]))["notice"] is None
    assert (await w.read(1, booked["id"]))["state"] == "running"
    assert await _notices(w) == []


async def test_cancelling_the_booking_withdraws_its_notices(build: Builder) -> None:
    w, lab = await _booked_world(build, notice=5)
    borrower = await w.running(0, "exclusive")
    waiting = await w.create(1, "exclusive", group_id=str(lab.id))
    await admission_loop_turn(w.build)
    assert (await w.read(0, borrower["id"]))["notice"]["reason"] == "booking"
    root = await build.signed_in(await build.user("Root 2", super_admin=True))
    [booking] = (await root.get(f"{API}/bookings")).json()["items"]
    assert (await root.post(f"{API}/bookings/{booking['id']}/cancel")).status_code == 200
    await admission_loop_turn(w.build)
    [notice] = await _notices(w)
    assert notice.status == "withdrawn"
    build.clock.advance(timedelta(minutes=10))
    await admission_loop_turn(w.build)
    assert (await w.read(0, borrower["id"]))["state"] == "running"
    assert (await w.read(1, waiting["id"]))["state"] == "queued"


# ---- ahead of a booking's window -----------------------------------------------------------


async def _book_ahead(
    w: SessionWorld, lab: Group, *, tier: str, count: int, starts_in: timedelta, notice: int
) -> dict[str, Any]:
    root = await w.build.signed_in(await w.build.user("Booker", super_admin=True))
    starts = w.build.clock.now() + starts_in
    booked = await root.post(
        f"{API}/bookings",
        json={
            "group_id": str(lab.id),
            "tier_id": w.tier(tier),
            "count": count,
            "starts_at": starts.isoformat(),
            "ends_at": (starts + timedelta(hours=2)).isoformat(),
            "title": "Tuesday lab",
            "notice_minutes": notice,
        },
    )
    assert booked.status_code == 201, booked.text
    return dict(booked.json())


async def _lab(w: SessionWorld, name: str = "Class lab", member: int = 1) -> Group:
    """A second group of the organization, with `member` in it too."""
    from gshare.identity.models import User

    async with w.build.sessions() as db:
        first = await db.get(Group, w.capacity.group_id)
        assert first is not None
        org = await db.get(Organization, first.org_id)
        user = await db.get(User, w.capacity.user_ids[member])
        assert org is not None
        assert user is not None
    lab = await w.build.group(org, name)
    await w.build.member(user, lab)
    return lab


async def _holds(w: SessionWorld) -> dict[uuid.UUID, uuid.UUID]:
    """The cards held for a booking's members now (card -> booking)."""
    async with w.build.sessions() as db:
        _, holds = await capacity_repository.queue_facts(db, None, w.build.clock.now())
    return holds.booked


async def _borrowed_then_booked(
    build: Builder, *, starts_in: timedelta, notice: int
) -> tuple[SessionWorld, Group, dict, dict]:
    """One card, member 0's exclusive session on it; then the lab books the card (one exclusive
    session) from `starts_in` on, with `notice` minutes' notice."""
    w = await session_world(build, n_cards=1)
    lab = await _lab(w)
    borrower = await w.running(0, "exclusive")
    booking = await _book_ahead(
        w, lab, tier="exclusive", count=1, starts_in=starts_in, notice=notice
    )
    return w, lab, borrower, booking


async def test_sessions_in_a_bookings_way_are_told_ahead_and_paused_at_its_start(
    build: Builder,
) -> None:
    w, lab, borrower, booking = await _borrowed_then_booked(
        build, starts_in=timedelta(minutes=10), notice=5
    )
    starts = build.clock.now() + timedelta(minutes=10)
    # Outside the booking's notice nothing is said.
    await admission_loop_turn(build)
    assert (await w.read(0, borrower["id"]))["notice"] is None
    # Within it, the borrower is told to be gone by the start, and why.
    build.clock.advance(timedelta(minutes=6))
    await admission_loop_turn(build)
    notice = (await w.read(0, borrower["id"]))["notice"]
    assert notice["reason"] == "booking_start"
    assert notice["message"] == "Another group's booking of its card starts then."
    assert notice["deadline"].startswith(starts.isoformat()[:19])
    [row] = await _notices(w)
    assert (row.booking_id, row.request_id, row.for_group_id) == (
        uuid.UUID(booking["id"]),
        None,
        lab.id,
    )
    async with build.sessions() as db:
        told = await db.scalar(
            select(Notification.body)
            .where(
                Notification.user_id == w.capacity.user_ids[0],
                Notification.kind == "session.notice.preemption",
            )
            .limit(1)
        )
    assert told is not None
    assert "booking of its card starts then" in told
    assert "Tuesday lab" not in told  # another group's title is its own
    # A walk within the period gives no second notice.
    await admission_loop_turn(build)
    assert len(await _notices(w)) == 1
    # At the start it is paused, and the booked card is free for the class.
    build.clock.advance(timedelta(minutes=4))
    await admission_loop_turn(build)
    assert (await w.read(0, borrower["id"]))["state"] in ("resuming", "paused")
    [row] = await _notices(w)
    assert row.status == "paused"
    # The paused borrower waits to resume, yet the card is held for the class: a member asking
    # now takes it on the queue's next turn (the worker's, woken by the request).
    await admission_loop_turn(build)
    resuming = await w.read(0, borrower["id"])
    assert resuming["state"] == "resuming"
    # It is told why: the card is held for another group's booking, until the notice passes.
    held = resuming["held_for_booking"]
    assert held["cards"] == 1
    assert held["until"].startswith((starts + timedelta(minutes=5)).isoformat()[:19])
    member = await w.create(1, "exclusive", group_id=str(lab.id))
    await admission_loop_turn(build)
    assert (await w.read(1, member["id"]))["state"] == "starting"
    assert (await w.read(0, borrower["id"]))["state"] == "resuming"
    # Once the booking's notice has passed again after the start, what is unused is lent.
    assert (await w.act(1, member["id"], "stop")).status_code == 200
    build.clock.advance(timedelta(minutes=5))
    await admission_loop_turn(build)
    assert (await w.read(0, borrower["id"]))["state"] == "starting"
    await assert_ledger_clean(build.sessions)


async def test_a_session_started_just_before_a_booking_is_told_at_once_how_long_it_may_run(
    build: Builder,
) -> None:
    w = await session_world(build, n_cards=1)
    lab = await _lab(w)
    await _book_ahead(w, lab, tier="exclusive", count=1, starts_in=timedelta(minutes=3), notice=5)
    late = await w.running(0, "exclusive")  # the card is free until the class: lent
    await admission_loop_turn(build)
    notice = (await w.read(0, late["id"]))["notice"]
    assert notice is not None
    starts = build.clock.now() + timedelta(minutes=3)
    assert notice["deadline"].startswith(starts.isoformat()[:19])


async def test_ahead_of_a_window_a_protected_session_or_a_longer_notice_is_not_cut_short(
    build: Builder,
) -> None:
    w, _, borrower, _ = await _borrowed_then_booked(build, starts_in=timedelta(minutes=3), notice=5)
    owner = w.capacity.user_ids[0]
    protections: list[dict[str, object]] = [
        {"preemptible": False},
        {"preemption_notice_minutes": 10},
    ]
    for terms in protections:
        await set_policy(build.sessions, build.clock.now(), "user", owner, terms)
        await admission_loop_turn(build)
        assert (await w.read(0, borrower["id"]))["notice"] is None
    assert await _notices(w) == []


async def test_only_what_the_booking_lacks_is_freed_ahead(build: Builder) -> None:
    # One card carved to quarters: three of member 0's sessions, one slot free. The lab books
    # two quarters and holds none: the free slot is one, one session is told to leave.
    w = await session_world(build, n_cards=1)
    lab = await _lab(w)
    await set_policy(
        build.sessions, build.clock.now(), "user", w.capacity.user_ids[0], {"max_gpu_sessions": 5}
    )
    mine = [await w.running(0, "1/4") for _ in range(3)]
    await _book_ahead(w, lab, tier="1/4", count=2, starts_in=timedelta(minutes=1), notice=2)
    await admission_loop_turn(build)
    noticed = [s for s in mine if (await w.read(0, s["id"]))["notice"] is not None]
    assert len(noticed) == 1
    # Again on the next walk: what is being freed already counts.
    await admission_loop_turn(build)
    assert len(await _notices(w)) == 1


async def test_a_member_already_running_holds_the_booking_and_no_one_is_told(
    build: Builder,
) -> None:
    w = await session_world(build, n_cards=2)
    lab = await _lab(w)
    await w.running(1, "exclusive", group_id=str(lab.id))
    other = await w.running(0, "exclusive")
    await _book_ahead(w, lab, tier="exclusive", count=1, starts_in=timedelta(minutes=1), notice=2)
    await admission_loop_turn(build)
    assert (await w.read(0, other["id"]))["notice"] is None
    assert await _notices(w) == []


async def test_editing_or_cancelling_the_booking_withdraws_what_it_told_ahead(
    build: Builder,
) -> None:
    w, _, borrower, booking = await _borrowed_then_booked(
        build, starts_in=timedelta(minutes=2), notice=5
    )
    await admission_loop_turn(build)
    assert (await w.read(0, borrower["id"]))["notice"] is not None
    # The card being freed is held for the lab's members...
    assert set((await _holds(w)).values()) == {uuid.UUID(booking["id"])}
    root = await build.signed_in(await build.user("Editor", super_admin=True))
    later = build.clock.now() + timedelta(hours=3)
    build.clock.advance(timedelta(seconds=1))
    moved = await root.patch(
        f"{API}/bookings/{booking['id']}",
        json={
            "starts_at": later.isoformat(),
            "ends_at": (later + timedelta(hours=2)).isoformat(),
        },
    )
    assert moved.status_code == 200, moved.text
    # ...until the booking no longer starts then, whatever the walk has done yet.
    assert await _holds(w) == {}
    await admission_loop_turn(build)
    assert (await w.read(0, borrower["id"]))["notice"] is None
    assert [n.status for n in await _notices(w)] == ["withdrawn"]
    assert "session.notice.withdrawn" in await _kinds(w, 0)
    # Near the new start it is told again; cancelled, that notice is withdrawn too.
    build.clock.advance(timedelta(hours=3) - timedelta(minutes=4))
    await admission_loop_turn(build)
    assert (await w.read(0, borrower["id"]))["notice"] is not None
    assert (await root.post(f"{API}/bookings/{booking['id']}/cancel")).status_code == 200
    await admission_loop_turn(build)
    build.clock.advance(timedelta(minutes=10))
    await admission_loop_turn(build)
    assert (await w.read(0, borrower["id"]))["state"] == "running"
    assert [n.status for n in await _notices(w)] == ["withdrawn", "withdrawn"]


async def test_a_session_within_another_booking_about_to_start_is_not_told_ahead(
    build: Builder,
) -> None:
    # Two cards, two labs each booking one from the same start. The first card is borrowed by
    # member 0's group; on the second, member 0 already runs in the second lab, which books it
    # too, more recently started (the victim preemption would otherwise prefer).
    w = await session_world(build, n_cards=2)
    lab = await _lab(w)
    other_lab = await _lab(w, "Other lab", member=0)
    borrower = await w.running(0, "exclusive")
    build.clock.advance(timedelta(minutes=1))
    booked = await w.running(0, "exclusive", group_id=str(other_lab.id))
    for group in (lab, other_lab):
        await _book_ahead(
            w, group, tier="exclusive", count=1, starts_in=timedelta(minutes=1), notice=2
        )
    await admission_loop_turn(build)
    assert (await w.read(0, booked["id"]))["notice"] is None
    assert (await w.read(0, borrower["id"]))["notice"] is not None


async def test_a_long_notice_holds_the_freed_card_for_at_most_15_minutes_after_the_start(
    build: Builder,
) -> None:
    w, _, borrower, booking = await _borrowed_then_booked(
        build, starts_in=timedelta(minutes=30), notice=60
    )
    await admission_loop_turn(build)
    build.clock.advance(timedelta(minutes=30))
    await admission_loop_turn(build)
    assert (await w.read(0, borrower["id"]))["state"] == "resuming"
    assert set((await _holds(w)).values()) == {uuid.UUID(booking["id"])}
    build.clock.advance(timedelta(minutes=14, seconds=59))
    assert await _holds(w) != {}
    build.clock.advance(timedelta(seconds=1))
    assert await _holds(w) == {}
    # Lent again: the paused borrower resumes on it.
    await admission_loop_turn(build)
    assert (await w.read(0, borrower["id"]))["state"] == "starting"


# ---- fair share between organizations ------------------------------------------------------


async def test_groups_an_organization_adds_take_no_card_from_another_organization(
    build: Builder,
) -> None:
    """Two organizations run two whole cards each of four. The first one's admin creates two
    groups and a member waits in each: the organization already holds its share, so neither
    request takes a card from the other organization (nor, above its own group's share within
    the organization, from its first group)."""
    w = await session_world(build, n_cards=4)
    for _ in range(2):
        await w.running(0, "exclusive")
    # The other organization's sessions start last: the most recent, the first to go were
    # shares split per group.
    build.clock.advance(timedelta(minutes=5))
    other = await another_group(build.sessions, build.clock.now())
    theirs = await signed_in(build, other.user_ids[0])
    started = []
    for _ in range(2):
        made = await theirs.post(
            f"{API}/sessions", json=w.body("exclusive", group_id=str(other.group_id))
        )
        assert made.status_code == 201, made.text
        assert (await w.report(made.json()["id"], "Running")).status_code == 200
        started.append(made.json()["id"])

    org, org_admin = await _org_admin_client(w)
    waiting = []
    for name in ("Extra one", "Extra two"):
        made = await org_admin.post(f"{API}/orgs/{org.id}/groups", json={"name": name})
        assert made.status_code == 201, made.text
        extra = made.json()["id"]
        put = await org_admin.put(
            f"{API}/groups/{extra}/members/{w.capacity.user_ids[1]}", json={"role": "member"}
        )
        assert put.status_code == 200, put.text
        queued = await w.create(1, "exclusive", group_id=extra)
        assert queued["state"] == "queued", queued
        waiting.append(queued["id"])
    build.clock.advance(timedelta(minutes=1))
    await admission_loop_turn(w.build)
    assert await _notices(w) == []
    for session_id in started:
        seen = (await theirs.get(f"{API}/sessions/{session_id}")).json()
        assert (seen["state"], seen["notice"]) == ("running", None)
    for session_id in waiting:
        assert (await w.read(1, session_id))["state"] == "queued"


async def test_only_a_super_admin_weighs_an_organization_and_only_for_an_organization(
    build: Builder,
) -> None:
    w = await session_world(build, n_cards=1)
    root = await _super_client(build)
    org, org_admin = await _org_admin_client(w)
    weighed = {"values": {"org_weight": 4}}
    # An organization's own policy is a super admin's to set.
    refused = await org_admin.put(f"{API}/policies/orgs/{org.id}", json=weighed)
    assert refused.status_code == 403, refused.text
    # Its admins weigh its groups, not the organization.
    refused = await org_admin.put(f"{API}/policies/groups/{w.group_id}", json=weighed)
    assert refused.status_code == 403, refused.text
    assert refused.json()["error"]["code"] == "policy_key_reserved"
    for scope in (f"groups/{w.group_id}", f"users/{w.capacity.user_ids[0]}"):
        misplaced = await root.put(f"{API}/policies/{scope}", json=weighed)
        assert misplaced.status_code == 422, misplaced.text
        assert misplaced.json()["error"]["code"] == "invalid_policy"
    assert (await root.put(f"{API}/policies/orgs/{org.id}", json=weighed)).status_code == 200
    async with build.sessions() as db:
        row = await capacity_repository.policy(db, "organization", org.id)
        assert row is not None
        assert row.values == {"org_weight": 4}
