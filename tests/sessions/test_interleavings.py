"""Every actor of a session's life interleaved at random on the real service layer and database:
owners (create, pause, resume, stop, delete, keep running), admins (removing and re-adding a
member, cancelling from the queue), the queue, the metering and reconcile ticks, and the
operator's reports (current, late, duplicated and out of order). After every step the
invariants hold:

- a session has at most one open hold, and one exactly while it holds a card (priced tiers);
- it holds a live allocation exactly when its state says it holds one, and billing runs then;
- every waiting session has a queued request (the queue will move it);
- every state a session leaves on its own has its mover: starting and pausing expect a report
  of the current spec, which the model's operator sends when asked, or the reconcile tick's
  timeouts; after a quiet period with the operator answering, none is left in them;
- the ledger check is clean.

A failing seed prints the steps that led to it, to become a plain regression test.
"""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from sqlalchemy import select

from gshare.capacity import tasks as capacity_tasks
from gshare.capacity.models import AdmissionRequest, Allocation
from gshare.credits.models import CreditHold
from gshare.sessions import lifecycle, tasks
from gshare.sessions.models import InteractiveSession
from tests.builders import Builder
from tests.credits.builders import assert_ledger_clean
from tests.sessions.world import API, SessionWorld, session_world, settings_of

STEPS = 100
SEEDS = [11, 29, 47]


async def _check(w: SessionWorld, log: list[str]) -> None:
    async with w.build.sessions() as db:
        rows = list(await db.scalars(select(InteractiveSession)))
        holds = list(await db.scalars(select(CreditHold).where(CreditHold.status == "open")))
        live = list(await db.scalars(select(Allocation).where(Allocation.status == "live")))
        queued = set(
            await db.scalars(select(AdmissionRequest.id).where(AdmissionRequest.status == "queued"))
        )
    open_holds = {h.id for h in holds}
    live_requests = {a.request_id for a in live}
    where = " > ".join(log[-12:])
    for row in rows:
        holding = row.state in lifecycle.HOLDING
        assert (row.hold_id is not None) == holding, (row.state, where)
        assert (row.hold_id in open_holds) == holding, (row.state, where)
        assert (row.request_id in live_requests) == holding, (row.state, where)
        if row.state in lifecycle.WAITING:
            assert row.request_id in queued, (row.state, where)
        if row.state == "stopped":
            assert row.ended_at is not None, where
    # Every open hold is the one hold of a session holding a card: none is left behind.
    held = [r.hold_id for r in rows if r.state in lifecycle.HOLDING]
    assert sorted(map(str, held)) == sorted(map(str, open_holds)), where


async def _report(w: SessionWorld, sid: str, rng: random.Random, log: list[str]) -> None:
    """The operator reports: usually what the current spec's pod does, sometimes a late report
    about an earlier spec, sometimes the same report twice."""
    row = await w.row(sid)
    current = row.desired_state == "Running"
    phase = rng.choice(["Running", "Running", "Pending", "Failed"]) if current else "Paused"
    revision = row.spec_generation
    if rng.random() < 0.25 and revision > 1:
        revision = rng.randrange(1, revision)  # late: about an earlier spec
        phase = rng.choice(["Running", "Pending", "Paused"])
    log.append(f"report {phase}@{revision}")
    answer = await w.report(sid, phase, revision=revision)
    # A session placed on no cluster is not this operator's to report: refused like a bad token.
    expected = 200 if row.cluster_id is not None else 401
    assert answer.status_code == expected, (answer.text, " > ".join(log))
    if rng.random() < 0.2:
        log.append("duplicate")
        await w.report(sid, phase, revision=revision)


async def _settle(w: SessionWorld, sessions: list[str]) -> None:
    """A quiet period with the operator answering for the current spec: nothing is left in a
    state that moves on its own."""
    for _ in range(3):
        for sid in sessions:
            row = await w.row(sid)
            if row.state == "starting":
                await w.report(sid, "Running")
            elif row.state == "pausing":
                await w.report(sid, "Paused")
        await capacity_tasks.dequeue_once(
            w.build.sessions, settings_of(w.build), w.build.clock.now()
        )
    for sid in sessions:
        row = await w.row(sid)
        assert row.state not in ("starting", "pausing"), row.state


@pytest.mark.parametrize("seed", SEEDS)
async def test_random_interleavings_keep_the_lifecycle_exact(build: Builder, seed: int) -> None:
    rng = random.Random(seed)
    w = await session_world(build, n_cards=1, users=2, user_credits=50)
    root = await build.signed_in(await build.user("Root", super_admin=True))
    settings = settings_of(build)
    sessions: list[str] = []
    log: list[str] = []
    for _ in range(STEPS):
        member = rng.randrange(2)
        mine = [s for s in sessions if (await w.row(s)).owner_id == w.capacity.user_ids[member]]
        choice = rng.choice(
            ["create", "act", "act", "act", "report", "report", "report", "queue", "meter",
             "reconcile", "cancel", "membership"]
        )  # fmt: skip
        if choice == "create" or (choice in ("act", "report", "cancel") and not mine):
            tier = rng.choice(["1/4", "exclusive", "1/2"])
            answer = await w.members[member].post(f"{API}/sessions", json=w.body(tier))
            log.append(f"create {member} {tier} -> {answer.status_code}")
            assert answer.status_code in (201, 403, 404, 409), answer.text
            if answer.status_code == 201:
                sessions.append(answer.json()["id"])
        elif choice == "act":
            sid = rng.choice(mine)
            action = rng.choice(["pause", "resume", "stop", "keep-running", "delete"])
            if action == "delete":
                answer = await w.members[member].delete(f"{API}/sessions/{sid}")
            else:
                answer = await w.act(member, sid, action)
            log.append(f"{action} {member} -> {answer.status_code}")
            assert answer.status_code in (200, 204, 403, 404, 409), answer.text
        elif choice == "report":
            await _report(w, rng.choice(mine), rng, log)
        elif choice == "queue":
            log.append("dequeue")
            await capacity_tasks.dequeue_once(build.sessions, settings, build.clock.now())
        elif choice == "meter":
            # Short steps: the API's key ring holds its keys for five minutes of its clock.
            build.clock.advance(timedelta(seconds=rng.randrange(1, 20)))
            log.append("meter")
            await tasks.meter(build.sessions, settings, build.clock.now())
        elif choice == "reconcile":
            log.append("reconcile")
            await tasks.reconcile_once(build.sessions, settings, build.clock.now())
        elif choice == "cancel":
            request_id = (await w.row(rng.choice(mine))).request_id
            answer = await root.delete(f"{API}/queue/{request_id}")
            log.append(f"cancel -> {answer.status_code}")
            assert answer.status_code in (204, 404, 409), answer.text
        else:
            user_id = w.capacity.user_ids[member]
            path = f"{API}/groups/{w.group_id}/members/{user_id}"
            removed = await root.delete(path)
            log.append(f"remove {member} -> {removed.status_code}")
            readded = await root.put(path, json={"role": "member"})
            assert readded.status_code in (200, 201), readded.text
        await _check(w, log)
    await _settle(w, sessions)
    await _check(w, log)
    await assert_ledger_clean(build.sessions)
