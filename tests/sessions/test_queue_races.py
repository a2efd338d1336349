"""The queue's walks against the owners' and admins' actions, on the real database: an action
that lands between a walk's read of the queue and its commit, the same pair at once, status and
utilization reports at once, and the repair of anything left held for a session that ended.
Each writer takes its locks in the one order of docs/explanation/architecture.md, so none of
these pairs may deadlock: the database's own retry counter must not move."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY
from sqlalchemy import func, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from gshare.audit.models import AuditEntry
from gshare.capacity import admission, queue
from gshare.capacity import repository as capacity_repository
from gshare.capacity import tasks as capacity_tasks
from gshare.capacity.models import AdmissionRequest, Allocation
from gshare.clusters.callbacks import key_ring_of
from gshare.credits import operations
from gshare.credits.models import CreditHold
from gshare.sessions import service, tasks
from gshare.sessions.models import InteractiveSession
from tests.builders import Builder
from tests.capacity.builders import cards, report
from tests.credits.builders import assert_ledger_clean
from tests.eventually import eventually
from tests.sessions.world import API, SessionWorld, admission_loop_turn, session_world, settings_of


def _retries() -> float:
    """Transactions PostgreSQL has ended for a deadlock or a serialization failure so far."""
    total = 0.0
    for where in ("request", "task"):
        for state in ("40P01", "40001"):
            labels = {"where": where, "sqlstate": state}
            total += REGISTRY.get_sample_value("gshare_database_retries_total", labels) or 0.0
    return total


async def _held_for(w: SessionWorld, session_id: str) -> tuple[int, int]:
    """Live allocations and open holds kept for the session."""
    sid = uuid.UUID(session_id)
    async with w.build.sessions() as db:
        live = await db.scalar(
            select(func.count())
            .select_from(Allocation)
            .join(AdmissionRequest, AdmissionRequest.id == Allocation.request_id)
            .where(AdmissionRequest.session_id == sid, Allocation.status != "released")
        )
        holds = await db.scalar(
            select(func.count())
            .select_from(CreditHold)
            .where(CreditHold.session_id == sid, CreditHold.status == "open")
        )
    return int(live or 0), int(holds or 0)


async def _one_waiting(build: Builder) -> tuple[SessionWorld, dict[str, Any]]:
    """One card, a session queued for it, and the card just given back: the next walk of the
    queue admits the waiting session."""
    w = await session_world(build, n_cards=1)
    first = await w.running(0, "exclusive")
    waiting = await w.create(1, "exclusive")
    assert waiting["state"] == "queued", waiting
    assert (await w.act(0, first["id"], "stop")).status_code == 200
    return w, waiting


async def _action(
    build: Builder, w: SessionWorld, session: dict[str, Any], action: str
) -> Callable[[], Awaitable[httpx.Response]]:
    if action == "cancel":
        root = await build.signed_in(await build.user("Root", super_admin=True))
        request_id = (await w.row(session["id"])).request_id
        return lambda: root.delete(f"{API}/queue/{request_id}")
    if action == "delete":
        return lambda: w.members[1].delete(f"{API}/sessions/{session['id']}")
    return lambda: w.act(1, session["id"], action)


@pytest.mark.parametrize("action", ["stop", "pause", "delete", "cancel"])
async def test_an_action_landing_inside_a_walk_of_the_queue_leaves_nothing_held(
    build: Builder, monkeypatch: pytest.MonkeyPatch, action: str
) -> None:
    """The owner (or an admin) ends the wait after the walk read the queue and before it
    committed: the walk must not admit what it no longer holds, or the card and the credit hold
    stay with a session that has ended, for ever."""
    w, waiting = await _one_waiting(build)
    act = await _action(build, w, waiting, action)
    read = capacity_repository.queued
    answers: list[httpx.Response] = []

    async def read_then_act(db: AsyncSession) -> list[AdmissionRequest]:
        rows = await read(db)
        if not answers:
            answers.append(httpx.Response(0))  # once: the action reads the queue itself
            answers[0] = await act()
        return rows

    monkeypatch.setattr(capacity_repository, "queued", read_then_act)
    await admission_loop_turn(build)
    monkeypatch.undo()
    assert answers[0].status_code in (200, 204), answers[0].text
    row = await w.row(waiting["id"])
    assert row.state in ("stopped", "paused", "failed"), row.state
    assert await _held_for(w, waiting["id"]) == (0, 0)
    # The next walks have nothing left to admit for it, and the card is free for others.
    await admission_loop_turn(build)
    assert (await w.row(waiting["id"])).state == row.state
    assert (await w.create(0, "exclusive"))["state"] == "starting"
    await assert_ledger_clean(build.sessions)


async def test_a_stop_waiting_on_a_walk_of_the_queue_is_answered_once_it_commits(
    build: Builder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk holds the waiting session when its owner stops it: the stop waits for the walk,
    then stops the session the walk started. No deadlock, nothing held after."""
    w, waiting = await _one_waiting(build)
    lock = capacity_repository.lock_queued
    locked, go = asyncio.Event(), asyncio.Event()

    async def lock_then_wait(db: AsyncSession, ids: list[uuid.UUID]) -> list[AdmissionRequest]:
        rows = await lock(db, ids)
        if rows and not locked.is_set():
            locked.set()
            await go.wait()
        return rows

    monkeypatch.setattr(capacity_repository, "lock_queued", lock_then_wait)
    before = _retries()
    walk = asyncio.create_task(admission_loop_turn(build))
    await asyncio.wait_for(locked.wait(), 30)
    stop = asyncio.create_task(w.act(1, waiting["id"], "stop"))
    await eventually(lambda: _waiting_on_a_lock(build), "the stop waiting for the walk")
    go.set()
    await walk
    answer = await stop
    assert answer.status_code == 200, answer.text
    assert answer.json()["state"] == "stopping"  # the walk started it; the stop removes its pod
    assert await _held_for(w, waiting["id"]) == (0, 0)
    assert _retries() == before
    await assert_ledger_clean(build.sessions)


async def _waiting_on_a_lock(build: Builder) -> bool:
    async with build.sessions() as db:
        found = await db.scalar(
            text(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock'"
            )
        )
    return bool(found)


async def test_stops_and_walks_of_the_queue_at_once_never_deadlock(build: Builder) -> None:
    """Every waiting session stopped while the queue walks, many times over: each stop is
    answered 200, no transaction is ended for a deadlock, and nothing is left held."""
    w = await session_world(build, n_cards=2, users=2, user_credits=500)
    before = _retries()
    for _ in range(6):
        running = [await w.running(m, "exclusive") for m in (0, 1)]
        waiting = [await w.create(m, "exclusive") for m in (0, 1, 0, 1)]
        assert all(s["state"] == "queued" for s in waiting), waiting
        stops = [w.act(i % 2, s["id"], "stop") for i, s in enumerate(running + waiting)]
        walks = [admission_loop_turn(build) for _ in range(3)]
        answers = await asyncio.gather(*stops, *walks)
        for answer in answers[: len(stops)]:
            assert answer.status_code == 200, answer.text
        for session in running + waiting:
            row = await w.row(session["id"])
            if row.state == "stopping":  # its pod was asked to go; the cluster confirms it
                async with build.sessions() as db, db.begin():
                    locked = await db.get(InteractiveSession, row.id, with_for_update=True)
                    assert locked is not None
                    await service.removed(db, locked, build.clock.now())
        for session in running + waiting:
            assert await _held_for(w, session["id"]) == (0, 0), session
    assert _retries() == before
    await assert_ledger_clean(build.sessions)


async def test_status_and_utilization_reports_at_once_never_deadlock(build: Builder) -> None:
    """An operator's status reports and its utilization reports lock the session before the
    cluster's row, whichever comes first."""
    w = await session_world(build, n_cards=2)
    sessions = [await w.running(0), await w.running(1)]
    before = _retries()
    for round_ in range(15):
        samples = [
            {"session_id": s["id"], "gpu_util_percent": 40 + round_, "vram_used_mib": 512}
            for s in sessions
        ]
        answers = await asyncio.gather(
            *(w.report(s["id"], "Running") for s in sessions),
            w.utilization(samples),
            *(w.report(s["id"], "Running") for s in sessions[::-1]),
        )
        assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
    assert _retries() == before


async def test_whatever_is_held_for_an_ended_session_is_given_back_and_audited(
    build: Builder,
) -> None:
    """A leak made by hand (the state a lost race used to leave): the session stopped, its
    allocation and hold kept. The ledger check says so; the reconcile tick gives both back,
    writes it to the audit log for the session's organization, and the check is clean."""
    w = await session_world(build, n_cards=1)
    session = await w.running(0, "exclusive")
    sid = uuid.UUID(session["id"])
    async with build.sessions() as db, db.begin():
        await db.execute(
            update(InteractiveSession)
            .where(InteractiveSession.id == sid)
            .values(state="stopped", ended_at=build.clock.now(), hold_id=None)
        )
    assert await _held_for(w, session["id"]) == (1, 1)
    root = await build.signed_in(await build.user("Root", super_admin=True))
    ended = "no hold is left open for a session that has ended"
    assert ended in (await root.get(f"{API}/credits/check")).text
    await tasks.reconcile_once(build.sessions, settings_of(build), build.clock.now())
    assert await _held_for(w, session["id"]) == (0, 0)
    async with build.sessions() as db:
        entries = list(
            await db.scalars(
                select(AuditEntry).where(AuditEntry.action == "capacity.leak_repaired")
            )
        )
    assert len(entries) == 1
    assert entries[0].target_id == str(sid)
    assert entries[0].org_id is not None
    assert entries[0].detail["released"] == "allocation and hold"
    check = await root.get(f"{API}/credits/check")
    assert check.status_code == 200, check.text
    assert ended not in check.text, check.text
    await assert_ledger_clean(build.sessions)
    # The card is free again, and a second tick finds nothing to repair.
    assert (await w.create(1, "exclusive"))["state"] == "starting"
    await tasks.reconcile_once(build.sessions, settings_of(build), build.clock.now())
    async with build.sessions() as db:
        count = await db.scalar(
            select(func.count())
            .select_from(AuditEntry)
            .where(AuditEntry.action == "capacity.leak_repaired")
        )
    assert count == 1


async def test_an_inventory_report_and_a_walk_admitting_onto_its_cards_never_deadlock(
    build: Builder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk locks the cards it admits onto in id order; an inventory report of the same
    cluster locks the allocations on its cards, then the cards, in id order too: whichever
    comes first, the other waits, and neither is ended for a deadlock."""
    w = await session_world(build, n_cards=4, users=2, user_credits=2000)
    running = [await w.running(0, "exclusive") for _ in range(4)]
    waiting = [await w.create(1, "exclusive") for _ in range(4)]
    assert all(s["state"] == "queued" for s in waiting), waiting
    for session in running:
        assert (await w.act(0, session["id"], "stop")).status_code == 200
    async with build.sessions() as db, db.begin():
        first = await db.scalar(text("SELECT id FROM gpu_cards ORDER BY id LIMIT 1"))
        # Rewritten, the card with the lowest id is the last a scan of the table meets.
        await db.execute(
            text("UPDATE gpu_cards SET last_seen_at = last_seen_at WHERE id = :id"), {"id": first}
        )
    lock = capacity_repository.lock_card
    locked, go = asyncio.Event(), asyncio.Event()

    async def lock_then_wait(db: AsyncSession, card_id: uuid.UUID) -> bool:
        found = await lock(db, card_id)
        if not locked.is_set():
            locked.set()
            await go.wait()
        return found

    monkeypatch.setattr(capacity_repository, "lock_card", lock_then_wait)
    before = _retries()
    walk = asyncio.create_task(admission_loop_turn(build))
    await asyncio.wait_for(locked.wait(), 30)
    keys = await key_ring_of(build.app).get(build.clock.now())
    token = keys.mint(str(w.cluster_id), build.clock.now())
    inventory = asyncio.create_task(
        build.anonymous().put(
            f"/internal/v1/clusters/{w.cluster_id}/inventory",
            json=report(2, cards(4)).model_dump(mode="json"),
            headers={"Authorization": f"Bearer {token}"},
        )
    )
    await eventually(lambda: _waiting_on_a_lock(build), "the report waiting for the walk")
    go.set()
    await walk
    answer = await inventory
    assert answer.status_code == 200, answer.text
    assert _retries() == before
    assert [(await w.row(s["id"])).state for s in waiting] == ["starting"] * 4


async def test_fair_share_sampling_and_a_walk_admitting_several_never_deadlock(
    build: Builder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each admission adds its entry penalty to its user's, group's and organization's usage;
    a sampling rewrites them all. The sampling holds the usage lock alone and admissions share
    it, so one waits for the other instead of locking the rows in another order."""
    w = await session_world(build, n_cards=2, users=2, user_credits=2000)
    running = [await w.running(0, "exclusive"), await w.running(1, "exclusive")]
    for member in (1, 0):  # the order a sampling does not write them in, whatever it is
        assert (await w.create(member, "exclusive"))["state"] == "queued"
        build.clock.advance(timedelta(seconds=1))
    for member, session in enumerate(running):
        assert (await w.act(member, session["id"], "stop")).status_code == 200
    write = capacity_repository.write_admission
    paused, go = asyncio.Event(), asyncio.Event()

    async def write_then_wait(db: AsyncSession, *args: Any, **kwargs: Any) -> Any:
        written = await write(db, *args, **kwargs)
        if not paused.is_set():
            paused.set()
            await go.wait()
        return written

    monkeypatch.setattr(capacity_repository, "write_admission", write_then_wait)
    settings = settings_of(build)
    before = _retries()
    walk = asyncio.create_task(
        capacity_tasks.dequeue_once(build.sessions, settings, build.clock.now())
    )
    await asyncio.wait_for(paused.wait(), 30)
    sample = asyncio.create_task(
        capacity_tasks.sample_once(build.sessions, settings, build.clock.now())
    )
    await eventually(lambda: _waiting_on_a_lock(build), "the sampling waiting for the walk")
    go.set()
    assert len((await walk).admitted) == 2
    assert await sample
    assert _retries() == before


async def test_an_admission_during_a_sampling_keeps_its_entry_penalty(
    build: Builder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sampling reads the usage, then writes it decayed; an admission in between waits for
    it, so its entry penalty is added to what the sampling wrote instead of being overwritten."""
    w = await session_world(build, n_cards=2, users=2, user_credits=2000)
    settings = settings_of(build)
    fair = admission.fair_share(settings)
    alpha = queue.decay_alpha(fair.sampling_interval, fair.half_life)
    await w.running(1, "exclusive")  # its entry penalty: alpha, for one card
    read = admission.usage_state
    seen, go = asyncio.Event(), asyncio.Event()

    async def read_then_wait(db: AsyncSession, *args: Any, **kwargs: Any) -> Any:
        found = await read(db, *args, **kwargs)
        if not seen.is_set():
            seen.set()
            await go.wait()
        return found

    monkeypatch.setattr(admission, "usage_state", read_then_wait)
    sample = asyncio.create_task(
        capacity_tasks.sample_once(build.sessions, settings, build.clock.now())
    )
    await asyncio.wait_for(seen.wait(), 30)
    monkeypatch.setattr(admission, "usage_state", read)
    second = asyncio.create_task(w.create(1, "exclusive"))
    await eventually(lambda: _waiting_on_a_lock(build), "the admission waiting for the sampling")
    go.set()
    assert await sample
    assert (await second)["state"] == "starting"
    async with build.sessions() as db:
        usage = await capacity_repository.usage_of(db, "user", [w.capacity.user_ids[1]])
    # Sampled: (1 - alpha) * alpha + alpha * 1 card held; then the second's penalty.
    sampled = (1 - alpha) * alpha + alpha
    assert usage[w.capacity.user_ids[1]] == pytest.approx(sampled + alpha, rel=1e-9)


async def test_metering_pausing_a_session_and_a_walk_admitting_onto_its_card_never_deadlock(
    build: Builder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Metering locks the wallets of the holds it captures and pauses a session whose owner
    cannot pay, which releases its card; a walk admits onto that card and places a hold on the
    same group's wallet. Metering locks the allocations and cards first, in the one order."""
    w = await session_world(build, n_cards=1, users=2, user_credits=2000)
    settings = settings_of(build)
    paying = await w.running(1, "1/2")
    other = await w.running(0, "1/2")
    waiting = await w.create(1, "1/2")
    assert waiting["state"] == "queued", waiting
    assert (await w.act(0, other["id"], "stop")).status_code == 200
    build.clock.advance(timedelta(minutes=5))
    meter_holds = operations.meter_holds
    held, go = asyncio.Event(), asyncio.Event()

    async def meter_then_wait(db: AsyncSession, charges: Any, **kwargs: Any) -> Any:
        charged = await meter_holds(db, charges, **kwargs)
        held.set()
        await go.wait()
        return [dataclasses.replace(c, short=True) for c in charged]  # the wallet ran dry

    monkeypatch.setattr(operations, "meter_holds", meter_then_wait)
    before = _retries()
    metering = asyncio.create_task(tasks.meter(build.sessions, settings, build.clock.now()))
    await asyncio.wait_for(held.wait(), 30)
    walk = asyncio.create_task(
        capacity_tasks.dequeue_once(build.sessions, settings, build.clock.now())
    )
    await eventually(lambda: _waiting_on_a_lock(build), "the walk waiting for the metering")
    go.set()
    await metering
    await walk
    assert (await w.row(paying["id"])).state == "pausing"
    assert (await w.row(waiting["id"])).state in ("queued", "starting")
    assert _retries() == before
    await assert_ledger_clean(build.sessions)
