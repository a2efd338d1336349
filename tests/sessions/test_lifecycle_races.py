"""The lifecycle when actions, the queue and the operator's reports interleave: reports about an
earlier spec, pause and resume at once from two sign-ins, a queue cancel, the same create sent
twice, a member leaving their group, and volumes of another group."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

from sqlalchemy import func, select

from gshare.credits.models import CreditHold
from gshare.events.models import Notification
from gshare.identity.models import Group, User
from gshare.sessions import lifecycle, tasks
from gshare.sessions.models import InteractiveSession
from tests.builders import Builder
from tests.credits.builders import assert_ledger_clean
from tests.sessions.world import API, SessionWorld, session_world, settings_of


async def _open_holds(w: SessionWorld, session_id: str) -> int:
    async with w.build.sessions() as db:
        found = await db.scalar(
            select(func.count())
            .select_from(CreditHold)
            .where(CreditHold.session_id == uuid.UUID(session_id), CreditHold.status == "open")
        )
    return int(found or 0)


async def _notified(w: SessionWorld, member: int) -> set[str]:
    async with w.build.sessions() as db:
        kinds = await db.scalars(
            select(Notification.kind).where(Notification.user_id == w.capacity.user_ids[member])
        )
        return set(kinds)


async def test_a_late_report_about_an_earlier_spec_moves_nothing(build: Builder) -> None:
    """Paused and resumed before the first pod was gone: the old pod's reports (running, then
    going away) say nothing about the new spec; only the new spec's own report starts it."""
    w = await session_world(build)
    sid = (await w.running())["id"]
    first = (await w.row(sid)).spec_generation
    assert (await w.act(0, sid, "pause")).json()["state"] == "pausing"
    assert (await w.act(0, sid, "resume")).json()["state"] == "starting"
    # The old pod, still up, and then going away: neither is about the resumed spec.
    assert (await w.report(sid, "Running", revision=first)).status_code == 200
    assert (await w.read(0, sid))["state"] == "starting"
    assert (await w.report(sid, "Pending", "the pod is stopping", revision=first + 1)).json()
    assert (await w.read(0, sid))["state"] == "starting"
    assert await _open_holds(w, sid) == 1
    # The new spec's pod is ready.
    assert (await w.report(sid, "Running")).status_code == 200
    assert (await w.read(0, sid))["state"] == "running"
    assert await _open_holds(w, sid) == 1
    await assert_ledger_clean(build.sessions)


async def test_pause_and_resume_sent_at_once_from_two_sign_ins_settle(build: Builder) -> None:
    w = await session_world(build)
    sid = (await w.running())["id"]
    second = await build.signed_in(await _user(w, 0))
    clients = [w.members[0], second]
    calls = [
        clients[i % 2].post(f"{API}/sessions/{sid}/{'pause' if i % 3 else 'resume'}")
        for i in range(12)
    ]
    answers = await asyncio.gather(*calls)
    for answer in answers:
        assert answer.status_code in (200, 409), answer.text
        if answer.status_code == 409:
            assert answer.json()["error"]["code"] == "invalid_transition"
    row = await w.row(sid)
    holds = await _open_holds(w, sid)
    assert holds == (1 if row.state in lifecycle.HOLDING else 0), row.state
    assert (row.hold_id is not None) == (row.state in lifecycle.HOLDING)
    # Whatever it ended in, the operator's report of the current spec moves it on.
    if row.state == "starting":
        await w.report(sid, "Running")
        assert (await w.read(0, sid))["state"] == "running"
    elif row.state == "pausing":
        await w.report(sid, "Paused")
        assert (await w.read(0, sid))["state"] == "paused"
    else:
        assert row.state in ("paused", "running", "resuming"), row.state
    await assert_ledger_clean(build.sessions)


async def _user(w: SessionWorld, member: int) -> User:
    async with w.build.sessions() as db:
        user = await db.get(User, w.capacity.user_ids[member])
    assert user is not None
    return user


async def test_cancelling_a_queued_request_ends_its_sessions_wait(build: Builder) -> None:
    w = await session_world(build, n_cards=1)
    await w.create(0, "exclusive")
    waiting = await w.create(1, "exclusive")
    assert waiting["state"] == "queued"
    request_id = (await w.row(waiting["id"])).request_id
    cancelled = await w.members[1].delete(f"{API}/queue/{request_id}")
    assert cancelled.status_code == 204, cancelled.text
    again = await w.members[1].delete(f"{API}/queue/{request_id}")
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "not_queued"
    after = await w.read(1, waiting["id"])
    assert after["state"] == "stopped"
    assert after["state_reason"] == "Cancelled from the queue by its owner."
    assert "session.cancelled" in await _notified(w, 1)
    # A session that resumed into the queue and is cancelled there stops too (volumes stay).
    (await w.act(1, waiting["id"], "resume"))  # stopped is final: refused
    assert (await w.read(1, waiting["id"]))["state"] == "stopped"
    await assert_ledger_clean(build.sessions)


async def test_two_cancels_at_once_end_the_wait_once(build: Builder) -> None:
    w = await session_world(build, n_cards=1)
    await w.create(0, "exclusive")
    waiting = await w.create(1, "exclusive")
    request_id = (await w.row(waiting["id"])).request_id
    answers = await asyncio.gather(
        *(w.members[1].delete(f"{API}/queue/{request_id}") for _ in range(4))
    )
    codes = sorted(a.status_code for a in answers)
    assert codes.count(204) == 1, [a.text for a in answers]
    assert set(codes) <= {204, 409}
    assert (await w.read(1, waiting["id"]))["state"] == "stopped"


async def test_the_same_create_sent_twice_makes_one_session(build: Builder) -> None:
    w = await session_world(build)
    headers = {"Idempotency-Key": "create-1"}
    first = await w.members[0].post(f"{API}/sessions", json=w.body(), headers=headers)
    again = await w.members[0].post(f"{API}/sessions", json=w.body(), headers=headers)
    assert first.status_code == again.status_code == 201
    assert first.json()["id"] == again.json()["id"]
    other = await w.members[0].post(f"{API}/sessions", json=w.body(name="other"), headers=headers)
    assert other.status_code == 422
    assert other.json()["error"]["code"] == "idempotency_key_reused"
    at_once = await asyncio.gather(
        *(
            w.members[0].post(f"{API}/sessions", json=w.body(), headers={"Idempotency-Key": "k2"})
            for _ in range(3)
        )
    )
    made = {a.json()["id"] for a in at_once if a.status_code == 201}
    assert len(made) == 1, [a.text for a in at_once]
    assert all(a.status_code in (201, 409) for a in at_once)
    async with build.sessions() as db:
        count = await db.scalar(
            select(func.count())
            .select_from(InteractiveSession)
            .where(InteractiveSession.owner_id == w.capacity.user_ids[0])
        )
    assert count == 2
    sid = first.json()["id"]
    paused = [
        await w.members[0].post(
            f"{API}/sessions/{sid}/pause", headers={"Idempotency-Key": "pause-1"}
        )
        for _ in range(2)
    ]
    assert [p.status_code for p in paused] == [200, 200]
    assert paused[0].json() == paused[1].json()
    gone = [
        await w.members[0].delete(f"{API}/sessions/{sid}", headers={"Idempotency-Key": "del-1"})
        for _ in range(2)
    ]
    assert [g.status_code for g in gone] == [204, 204]


async def test_a_member_removed_from_the_group_has_their_session_paused(
    build: Builder,
) -> None:
    w = await session_world(build)
    running = await w.running()
    sid = running["id"]
    root = await build.signed_in(await build.user("Root", super_admin=True))
    user_id = w.capacity.user_ids[0]
    removed = await root.delete(f"{API}/groups/{w.group_id}/members/{user_id}")
    assert removed.status_code == 204, removed.text
    row = await w.row(sid)
    assert row.state == "pausing"
    assert "no longer in the group" in row.state_reason
    assert row.hold_id is None
    assert "session.paused.membership" in await _notified(w, 0)
    entry = await w.members[0].post(f"{API}/sessions/{sid}/entry")
    assert entry.status_code in (404, 409), entry.text
    await w.report(sid, "Paused")
    refused = await w.act(0, sid, "resume")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "not_in_session_group"
    assert row.home_volume_id is not None  # its volumes stay
    await assert_ledger_clean(build.sessions)


async def test_a_guests_expiry_is_noticed_and_their_session_paused(build: Builder) -> None:
    w = await session_world(build)
    sid = (await w.running(1))["id"]
    root = await build.signed_in(await build.user("Root", super_admin=True))
    user_id = w.capacity.user_ids[1]
    soon = (build.clock.now() + timedelta(minutes=5)).isoformat()
    guest = await root.put(
        f"{API}/groups/{w.group_id}/members/{user_id}",
        json={"role": "guest", "expires_at": soon},
    )
    assert guest.status_code in (200, 201), guest.text
    assert (await w.read(1, sid))["state"] == "running"
    build.clock.advance(timedelta(minutes=6))
    # The page is closed at once, before the worker notices.
    entry = await w.members[1].post(f"{API}/sessions/{sid}/entry")
    assert entry.status_code == 403, entry.text
    assert await tasks.reconcile_once(build.sessions, settings_of(build), build.clock.now()) >= 1
    assert (await w.read(1, sid))["state"] == "pausing"
    assert "session.paused.membership" in await _notified(w, 1)


async def test_a_session_mounts_only_its_own_groups_volumes(build: Builder) -> None:
    w = await session_world(build)
    root = await build.signed_in(await build.user("Root", super_admin=True))
    created = await root.post(
        f"{API}/groups/{w.group_id}/volumes", json={"name": "group-a-data", "size_gib": 1}
    )
    assert created.status_code == 201, created.text
    shared = created.json()["id"]
    other: Group = await build.group(await build.org())
    await build.member(await _user(w, 0), other)
    body = w.body(None, shared_volume_ids=[shared]) | {"group_id": str(other.id)}
    refused = await w.members[0].post(f"{API}/sessions", json=body)
    assert refused.status_code == 404, refused.text
    assert refused.json()["error"]["code"] == "volume_not_found"
