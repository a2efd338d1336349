"""Every actor of a session's life interleaved by a Hypothesis state machine on the real service
layer and database: owners (create, pause, resume, stop, delete, keep running, and in one
machine the same landing between a walk of the queue's read and its commit), admins (removing
and re-adding a member, cancelling from the queue, booking the card for a second group and
cancelling the booking), the queue, the metering and reconcile ticks,
and the operator's reports (current, late, duplicated and out of order). After every step the
invariants hold:

- a session has at most one open hold, and one exactly while it holds a card (priced tiers);
- it holds a live allocation exactly when its state says it holds one, and billing runs then;
- every waiting session has a queued request (the queue will move it);
- a stopped session has ended, and no session that has ended holds a card or a hold;
- the ledger check is clean.

Every state a session leaves on its own has its mover: starting and pausing expect a report of
the current spec, which the model's operator sends when asked, or the reconcile tick's timeouts;
after a quiet period with the operator answering, none is left in them. A quiet period is one of
the steps, and every run ends with one.

A failure shrinks to a short sequence of steps, printed with the answers each step got. It
becomes a plain regression test: an async test on `build` that makes `await Actors.on(build)`
and calls the same actors in that order, then `check()`.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import sys
import uuid
from collections.abc import Awaitable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import ClassVar, TypeVar

import httpx
import pytest
from hypothesis import HealthCheck, currently_in_test_context, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    multiple,
    precondition,
    rule,
)
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from gshare.api.app import create_app
from gshare.capacity import repository as capacity_repository
from gshare.capacity import tasks as capacity_tasks
from gshare.capacity.models import AdmissionRequest, Allocation, Booking, Notice
from gshare.clusters.service import FUTURE_SKEW
from gshare.credits.models import CreditHold
from gshare.identity.models import Group, Organization, User
from gshare.kit.clock import FrozenClock
from gshare.kit.db import make_engine, make_sessionmaker
from gshare.kit.embedded_db import EmbeddedPostgres, drop_database, ensure_database
from gshare.kit.settings import Settings
from gshare.sessions import lifecycle, repository, service, startup, tasks
from gshare.sessions.models import InteractiveSession
from gshare.usage import service as usage_service
from gshare.usage import tasks as usage_tasks
from tests.builders import Builder
from tests.capacity.builders import set_policy
from tests.conftest import TEMPLATE
from tests.credits.builders import assert_ledger_clean
from tests.sessions.world import API, SessionWorld, session_world, settings_of

T = TypeVar("T")
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
TIERS = ["1/4", "exclusive", "1/2"]
_numbers = itertools.count()


def _steps_of(phase: str, now: datetime) -> list[dict[str, object]]:
    """What an operator reads from a pod in `phase` and its events: the progress so far, and
    for a failed pod the warning that explains it."""
    at = now.isoformat()
    done = ["allocated", "scheduled"] + (["started", "ready"] if phase == "Running" else [])
    steps: list[dict[str, object]] = [{"step": name, "at": at} for name in done]
    if phase == "Failed":
        steps.append(
            {"step": "warning", "at": at, "reason": "ImagePullBackOff", "message": "Back-off"}
        )
    return steps


# The warning reason a report about another start than the session's latest carries.
STALE = "AboutAnEarlierStart"


def _startup_is_kept_exactly(row: InteractiveSession) -> None:
    """Steps belong to the session's latest start: none before one began, none from a report
    about another start, each progress step and each warning reason once, bounded, and none
    timed before that start was asked for (give or take the clocks' skew)."""
    steps = row.startup_steps
    assert len(steps) <= startup.MAX_STEPS, steps
    if row.startup_requested_at is None:
        assert steps == [], steps
        return
    keys = [s["reason"] if s["step"] == startup.WARNING else s["step"] for s in steps]
    assert len(keys) == len(set(keys)), steps
    assert STALE not in keys, steps
    earliest = row.startup_requested_at - FUTURE_SKEW
    for step in steps:
        assert datetime.fromisoformat(step["at"]) >= earliest, (step, row)


def _said(line: str) -> None:
    """What a step got back, printed with the steps of a failing case."""
    if currently_in_test_context():
        note(line)


@dataclass(frozen=True)
class Owned:
    """A session the machine created, and the member who owns it."""

    member: int
    id: str


@dataclass
class Actors:
    """The actors of a session's life on one world, each step one call; the machine and the
    regression tests drive the same ones."""

    w: SessionWorld
    root: httpx.AsyncClient
    lab: uuid.UUID | None = None  # a second group, member 1's too, which books the card
    created: list[Owned] = field(default_factory=list)  # in the order they were asked for

    @classmethod
    async def on(cls, build: Builder, *, lab: bool = False) -> Actors:
        w = await session_world(build, n_cards=1, users=2, user_credits=50)
        root = await build.signed_in(await build.user("Root", super_admin=True))
        # Member 1's requests outrank member 0's sessions, and notice is short: preemption
        # happens within a run's few minutes of clock.
        now = build.clock.now()
        await set_policy(build.sessions, now, "global", None, {"preemption_notice_minutes": 0})
        await set_policy(build.sessions, now, "user", w.capacity.user_ids[1], {"priority": "high"})
        if not lab:
            return cls(w, root)
        async with build.sessions() as db:
            group = await db.get(Group, w.group_id)
            member = await db.get(User, w.capacity.user_ids[1])
            assert group is not None
            assert member is not None
            org = await db.get(Organization, group.org_id)
            assert org is not None
        made = await build.group(org, "Lab")
        await build.member(member, made)
        actors = cls(w, root, made.id)
        await actors.book(1)  # the lab's booking runs from the start; `book` calls it off
        return actors

    @property
    def build(self) -> Builder:
        return self.w.build

    async def create(self, member: int, tier: str, in_lab: bool = False) -> Owned | None:
        """The member asks for a session; in the lab, member 1 asks for the tier the lab books."""
        if in_lab:
            member, tier = 1, "exclusive"
        body = self.w.body(tier)
        if in_lab:
            assert self.lab is not None
            body["group_id"] = str(self.lab)
        answer = await self.w.members[member].post(f"{API}/sessions", json=body)
        _said(f"create {member} {tier}{' in the lab' if in_lab else ''} -> {answer.status_code}")
        assert answer.status_code in (201, 403, 404, 409), answer.text
        if answer.status_code != 201:
            return None
        self.created.append(Owned(member, answer.json()["id"]))
        return self.created[-1]

    async def owner(self, session: Owned, action: str) -> None:
        """The owner pauses, resumes, stops, keeps running or deletes the session."""
        if action == "delete":
            answer = await self.w.members[session.member].delete(f"{API}/sessions/{session.id}")
        else:
            answer = await self.w.act(session.member, session.id, action)
        _said(f"{action} -> {answer.status_code}")
        assert answer.status_code in (200, 204, 403, 404, 409), answer.text

    async def report(
        self, session: Owned, phase: str, *, back: int = 0, duplicate: bool = False
    ) -> None:
        """The operator reports `phase` for the current spec (a pod that wants to be paused
        reports Paused), or `back` revisions late about an earlier one; perhaps twice."""
        row = await self.w.row(session.id)
        revision = row.spec_generation
        if back:
            revision = max(1, revision - back)
        elif row.desired_state != "Running":
            phase = "Paused"
        steps = _steps_of(phase, self.build.clock.now())
        if revision != row.startup_revision:
            # About a start other than the latest one: nothing of it may be kept.
            steps.append({"step": "warning", "at": steps[0]["at"], "reason": STALE})
        answer = await self.w.report(session.id, phase, revision=revision, steps=steps)
        _said(f"report {phase}@{revision} -> {answer.status_code}")
        # A session placed on no cluster is not this operator's to report: refused like a bad token.
        expected = 200 if row.cluster_id is not None else 401
        assert answer.status_code == expected, answer.text
        if duplicate:
            await self.w.report(session.id, phase, revision=revision, steps=steps)

    async def dequeue(self) -> None:
        """One turn of the worker's admission loop: the queue, the notices, the forecasts."""
        await capacity_tasks.dequeue_once(
            self.build.sessions, self.settings, self.build.clock.now()
        )
        await self.preempt()
        await capacity_tasks.forecast_once(
            self.build.sessions, self.settings, self.build.clock.now()
        )

    async def inside_walk(self, pick: int, action: str) -> None:
        """The owner pauses or stops a waiting session, or an admin cancels it from the queue,
        after a walk of the queue read what waits and before the walk committed: the `pick`th
        of the requests it read (counting round), so that it is one the walk decides on."""
        read = capacity_repository.queued
        landed: list[bool] = []
        owned = {uuid.UUID(s.id): s for s in self.created}

        async def read_then_act(db: AsyncSession) -> list[AdmissionRequest]:
            rows = await read(db)
            mine = [r for r in rows if r.session_id in owned]
            if mine and not landed:
                landed.append(True)  # once: the action reads the queue itself
                session = owned[mine[pick % len(mine)].session_id]  # type: ignore[index]
                _said(f"{action} inside a walk of the queue:")
                RACES.add(action)
                if action == "cancel":
                    await self.cancel(session)
                else:
                    await self.owner(session, action)
            return rows

        capacity_repository.queued = read_then_act
        try:
            await self.dequeue()
        finally:
            capacity_repository.queued = read

    async def preempt(self) -> None:
        """The worker's notice walk: settle, notice drained sessions, pause those due, claim."""
        await capacity_tasks.preempt_once(
            self.build.sessions, self.settings, self.build.clock.now()
        )

    async def drain(self, seconds: int) -> None:
        """The super admin drains the cluster with `seconds` of notice, or ends its drain."""
        active = (await self.root.get(f"{API}/drains")).json()["items"]
        if active:
            answer = await self.root.post(f"{API}/drains/{active[0]['id']}/end")
            _said(f"end drain -> {answer.status_code}")
            assert answer.status_code in (200, 409), answer.text
            return
        deadline = self.build.clock.now() + timedelta(seconds=seconds)
        answer = await self.root.post(
            f"{API}/drains",
            json={
                "scope": "cluster",
                "cluster_id": str(self.w.cluster_id),
                "deadline": deadline.isoformat(),
                "reason": "maintenance",
            },
        )
        _said(f"drain {seconds}s -> {answer.status_code}")
        assert answer.status_code == 201, answer.text

    async def book(self, notice_minutes: int, ahead_minutes: int = 0) -> None:
        """The super admin cancels the lab's booking, or books the card for the lab for a day
        from now; or, with `ahead_minutes`, does both: the new booking starts within its notice,
        so sessions in its way are told ahead."""
        active = (await self.root.get(f"{API}/bookings")).json()["items"]
        if active:
            answer = await self.root.post(f"{API}/bookings/{active[0]['id']}/cancel")
            _said(f"cancel booking -> {answer.status_code}")
            assert answer.status_code in (200, 409), answer.text
            if not ahead_minutes:
                return
        starts = self.build.clock.now() + timedelta(minutes=ahead_minutes)
        assert self.lab is not None
        answer = await self.root.post(
            f"{API}/bookings",
            json={
                "group_id": str(self.lab),
                "tier_id": self.w.tier("exclusive"),
                "count": 1,
                "starts_at": starts.isoformat(),
                "ends_at": (starts + timedelta(days=1)).isoformat(),
                "title": "Lab deadline",
                "notice_minutes": notice_minutes,
            },
        )
        _said(f"book in {ahead_minutes} min, {notice_minutes} min notice -> {answer.status_code}")
        # A drained cluster has no capacity to book.
        assert answer.status_code in (201, 409), answer.text
        if answer.status_code == 409:
            assert answer.json()["error"]["code"] == "booking_conflict", answer.text

    async def dedicate(self) -> None:
        """The super admin dedicates the card's node to the lab, or gives it back."""
        assert self.lab is not None
        found = (await self.root.get(f"{API}/isolation/dedications")).json()["items"]
        if found:
            answer = await self.root.delete(f"{API}/isolation/dedications/{found[0]['id']}")
            _said(f"give the node back -> {answer.status_code}")
            # Refused while the lab's sessions hold the card: their pods require the node.
            assert answer.status_code in (204, 409), answer.text
            if answer.status_code == 409:
                assert answer.json()["error"]["code"] == "node_in_use", answer.text
            return
        answer = await self.root.post(
            f"{API}/isolation/dedications",
            json={
                "cluster_id": str(self.w.cluster_id),
                "node": "gpu-node-0",
                "group_id": str(self.lab),
            },
        )
        _said(f"dedicate the node to the lab -> {answer.status_code}")
        # Refused while a session holds the card.
        assert answer.status_code in (201, 409), answer.text
        if answer.status_code == 409:
            assert answer.json()["error"]["code"] == "node_in_use", answer.text

    async def isolate(self, level: str) -> None:
        """The super admin sets the lab's isolation level; a dedicated one is refused while the
        lab has no node."""
        assert self.lab is not None
        answer = await self.root.put(
            f"{API}/policies/groups/{self.lab}", json={"values": {"isolation": level}}
        )
        _said(f"lab isolation {level} -> {answer.status_code}")
        assert answer.status_code in (200, 409), answer.text
        if answer.status_code == 409:
            assert answer.json()["error"]["code"] == "isolation_unmet", answer.text

    async def meter(self, seconds: int) -> None:
        """The worker's metering tick, then its usage rollup's."""
        self.build.clock.advance(timedelta(seconds=seconds))
        await tasks.meter(self.build.sessions, self.settings, self.build.clock.now())
        await self.roll_up()

    async def reconcile(self) -> None:
        await tasks.reconcile_once(self.build.sessions, self.settings, self.build.clock.now())

    async def roll_up(self) -> None:
        """The usage rollup, as it runs once its settling delay has passed: counting up to now
        (the clock cannot jump that far here: the API's keys last five minutes of it)."""
        later = self.build.clock.now() + usage_service.SETTLE
        await usage_tasks.roll_up(self.build.sessions, self.settings, later)

    async def cancel(self, session: Owned) -> None:
        """An admin cancels the session's admission request from the queue."""
        request_id = (await self.w.row(session.id)).request_id
        answer = await self.root.delete(f"{API}/queue/{request_id}")
        _said(f"cancel -> {answer.status_code}")
        assert answer.status_code in (204, 404, 409), answer.text

    async def membership(self, member: int) -> None:
        """An admin removes a member from the group and adds them back."""
        user_id = self.w.capacity.user_ids[member]
        path = f"{API}/groups/{self.w.group_id}/members/{user_id}"
        removed = await self.root.delete(path)
        readded = await self.root.put(path, json={"role": "member"})
        _said(f"remove {member} -> {removed.status_code}, re-add -> {readded.status_code}")
        assert readded.status_code in (200, 201), readded.text

    async def resource_removed(self, session: Owned) -> None:
        """The apply loop deleted a stopping session's resource and the cluster confirmed it
        (what `tasks.apply_pending` does after a successful delete)."""
        async with self.build.sessions() as db, db.begin():
            row = await repository.session_row(db, uuid.UUID(session.id), lock=True)
            if row is not None and row.state == "stopping":
                await service.removed(db, row, self.build.clock.now())
                _said("resource removed")

    async def quiet_period(self) -> None:
        """The operator answers for the current spec and the queue runs; nothing is left in a
        state that moves on its own."""
        # A preemption moves two sessions in one round (one paused, one started), so rounds
        # go on until one leaves nothing to answer for; each round admits or ends something,
        # and a handful always suffices.
        for _ in range(8):
            for session in self.created:
                row = await self.w.row(session.id)
                if row.state == "starting":
                    await self.w.report(session.id, "Running")
                elif row.state == "pausing":
                    await self.w.report(session.id, "Paused")
                elif row.state == "stopping":
                    await self.resource_removed(session)
            await self.dequeue()
            await self.preempt()
            await self.dequeue()
            states = [(await self.w.row(s.id)).state for s in self.created]
            if not any(state in ("starting", "pausing", "stopping") for state in states) and (
                not await self._notices_due()
            ):
                break
        for session in self.created:
            state = (await self.w.row(session.id)).state
            assert state not in ("starting", "pausing", "stopping"), (session, state)
        # Every notice that ran out before this moment has been acted on (one given now, with
        # no notice time, is the next walk's); every promise still stands.
        now = self.build.clock.now()
        async with self.build.sessions() as db:
            pending = list(await db.scalars(select(Notice).where(Notice.status == "pending")))
            for notice in pending:
                assert notice.deadline >= now, notice.id
                if notice.kind == "preemption" and notice.booking_id is not None:
                    # Given ahead of a window: the booking stands and still starts then.
                    booking = await db.get(Booking, notice.booking_id)
                    assert booking is not None
                    assert booking.status == "active"
                    assert notice.deadline == booking.starts_at
                    assert notice.reason == "booking_start"
                elif notice.kind == "preemption":
                    request = await db.get(AdmissionRequest, notice.request_id)
                    assert request is not None
                    assert request.status == "queued"
                    assert request.reserved_card_id == notice.card_id

    async def _notices_due(self) -> bool:
        """Whether a pending notice has run out (the next walk pauses its session)."""
        async with self.build.sessions() as db:
            due = await db.scalar(
                select(Notice.id).where(
                    Notice.status == "pending", Notice.deadline <= self.build.clock.now()
                )
            )
        return due is not None

    async def check(self) -> list[InteractiveSession]:
        """The invariants; returns the sessions as they stand."""
        async with self.build.sessions() as db:
            rows = list(await db.scalars(select(InteractiveSession)))
            holds = list(await db.scalars(select(CreditHold).where(CreditHold.status == "open")))
            live = list(await db.scalars(select(Allocation).where(Allocation.status == "live")))
            waiting = list(
                await db.scalars(
                    select(AdmissionRequest).where(AdmissionRequest.status == "queued")
                )
            )
            queued = {r.id for r in waiting}
        # A start forecast is never earlier than when it was made, nor after its p90; once
        # one is known, the first shown and the one last told are kept with it.
        for request in waiting:
            if request.forecast_at is None:
                continue
            FORECASTS.add(request.id)
            if request.likely_start_at is not None:
                assert request.first_likely_start_at is not None
                assert request.forecast_at <= request.likely_start_at
                assert request.told_likely_start_at is not None
                if request.surely_start_by is not None:
                    assert request.likely_start_at <= request.surely_start_by
        open_holds = {h.id for h in holds}
        live_requests = {a.request_id for a in live}
        for row in rows:
            holding = row.state in lifecycle.HOLDING
            assert (row.hold_id is not None) == holding, row.state
            assert (row.hold_id in open_holds) == holding, row.state
            assert (row.request_id in live_requests) == holding, row.state
            if row.state in lifecycle.WAITING:
                assert row.request_id in queued, row.state
            if row.state == "stopped":
                assert row.ended_at is not None, row.state
            _startup_is_kept_exactly(row)
        # No session that has ended holds a card or a hold.
        held_for = {h.session_id for h in holds}
        for row in rows:
            if row.ended_at is not None:
                assert row.request_id not in live_requests, row.id
                assert row.id not in held_for, row.id
        # Every open hold is the one hold of a session holding a card: none is left behind.
        held = [r.hold_id for r in rows if r.state in lifecycle.HOLDING]
        assert sorted(map(str, held)) == sorted(map(str, open_holds))
        # A pending notice is about an allocation that exists; the walk settles the rest.
        async with self.build.sessions() as db:
            for notice in await db.scalars(select(Notice).where(Notice.status == "pending")):
                allocation = await db.get(Allocation, notice.allocation_id)
                assert allocation is not None
                NOTICES.add(notice.kind)
                if notice.reason in ("booking", "booking_start"):
                    # Given for the lab, never to one of the lab's own sessions.
                    assert notice.for_group_id == self.lab
                    assert allocation.group_id != self.lab
                    NOTICES.add("booking")
                if notice.booking_id is not None:
                    # Given ahead: to be gone by the start of the booking it names.
                    booking = await db.get(Booking, notice.booking_id)
                    assert booking is not None
                    assert notice.deadline == booking.starts_at
                    assert notice.request_id is None
                    NOTICES.add("ahead")
            NOTICES.update(await db.scalars(select(Notice.status)))
            if await db.scalar(select(Notice.id).where(Notice.reason == "booking").limit(1)):
                NOTICES.add("booking")
        await assert_ledger_clean(self.build.sessions)
        await self._usage_is_exact()
        await self._dedicated_cards_hold_only_their_tenant()
        return rows

    async def _dedicated_cards_hold_only_their_tenant(self) -> None:
        """A card on a dedicated node holds only sessions of the node's tenant (a dedication is
        refused while another tenant holds a card there, and placement keeps everyone else
        off it), and a session placed at a dedicated level was placed on such a node."""
        async with self.build.sessions() as db:
            rows = (await db.execute(_HELD_ON_DEDICATED)).all()
        for row in rows:
            if row.tenant is not None:
                assert row.tenant in (row.group_id, row.org_id), row
                ISOLATION.add("held on a dedicated card")
            isolation = (row.boundary or {}).get("isolation") or {}
            if str(isolation.get("level", "")).startswith("dedicated"):
                assert isolation.get("dedicatedTo") is not None, row
                ISOLATION.add("placed at a dedicated level")

    async def _usage_is_exact(self) -> None:
        """Each GPU allocation's hours add up to its mark: held time to the time counted,
        credits to those counted, never beyond what its hold captured nor past its release;
        and the days and months hold what the hours hold."""
        async with self.build.sessions() as db:
            rows = (await db.execute(_USAGE_OF_ALLOCATIONS)).all()
            hours, days, months = (await db.execute(_USAGE_TOTALS)).one()
        for a in rows:
            counted = (a.rolled_until or a.admitted_at) - a.admitted_at
            assert abs(a.held - counted.total_seconds()) < 1e-3, a
            assert a.credits == a.rolled_credits, a
            assert a.rolled_credits <= (a.captured if a.hold_id is not None else 0), a
            assert a.released_at is None or (a.rolled_until or a.admitted_at) <= a.released_at
            assert (a.rolled_until or a.admitted_at) <= self.build.clock.now(), a
            if a.rolled_until is not None and a.rolled_until > a.admitted_at:
                USAGE.add("counted")
            if a.released_at is not None and a.rolled_until == a.released_at:
                USAGE.add("counted to the end")
        assert hours == days == months

    @property
    def settings(self) -> Settings:
        return settings_of(self.build)


@dataclass(frozen=True)
class Home:
    """Where machines make their worlds: the test run's database server and a scratch folder."""

    postgres: EmbeddedPostgres
    scratch: Path


class Interleavings(RuleBasedStateMachine):
    """Each run has a world of its own: a database cloned from the migrated template and the
    real app on its own event loop, as tests/credits/test_stateful.py runs the ledger."""

    home: ClassVar[Home]
    with_lab: ClassVar[bool] = False
    sessions = Bundle("sessions")

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.cleanup = AsyncExitStack()
        self.made: Actors | None = None
        self.revised: list[Owned] = []  # sessions with an earlier spec to report late about
        self.settling = False  # some session is in a state that moves on its own

    @property
    def populated(self) -> bool:
        """Some session exists: the ticks and the admins have work."""
        return self.made is not None and bool(self.made.created)

    @property
    def actors(self) -> Actors:
        """The world, made by the first step: a run that Hypothesis ends before any costs
        nothing."""
        if self.made is None:
            self.made = self.run(self._world())
        return self.made

    async def _world(self) -> Actors:
        # The same steps make the same ids, so a run replays exactly (ties between equal
        # sessions are broken by id).
        IDS.seed(0)
        postgres, name = self.home.postgres, f"interleavings_{next(_numbers)}"
        await ensure_database(postgres.url(), name, template=TEMPLATE)
        self.cleanup.push_async_callback(drop_database, postgres.url(), name)
        engine = make_engine(postgres.url(name), pool_size=5)
        self.cleanup.push_async_callback(engine.dispose)
        scratch = self.home.scratch / name
        app_settings = Settings(
            data_dir=scratch / "data", console_dir=scratch / "no-console", auth_cache_seconds=0
        )
        clock = FrozenClock(START)
        app = create_app(app_settings, database_url=postgres.url(name), clock=clock, engine=engine)
        await self.cleanup.enter_async_context(app.router.lifespan_context(app))
        build = Builder(make_sessionmaker(engine), clock, app)
        self.cleanup.push_async_callback(build.close)
        return await Actors.on(build, lab=self.with_lab)

    def run(self, step: Awaitable[T]) -> T:
        return self.loop.run_until_complete(step)

    def _close(self) -> None:
        try:
            self.run(self.cleanup.aclose())
            self.run(self.loop.shutdown_asyncgens())
        finally:
            self.loop.close()

    def teardown(self) -> None:
        try:
            # Hypothesis tears down from a `finally`: after a failed step, keep its error.
            if self.made is not None and sys.exc_info()[1] is None:
                self.run(self.made.quiet_period())
                self.run(self.made.check())
        finally:
            self._close()

    @rule(target=sessions, member=st.integers(0, 1), tier=st.sampled_from(TIERS))
    def create(self, member: int, tier: str) -> object:
        created = self.run(self.actors.create(member, tier))
        return multiple() if created is None else created

    @rule(session=sessions)
    def owner_pauses(self, session: Owned) -> None:
        self.run(self.actors.owner(session, "pause"))

    @rule(session=sessions)
    def owner_resumes(self, session: Owned) -> None:
        self.run(self.actors.owner(session, "resume"))

    @rule(session=sessions)
    def owner_keeps_it_running(self, session: Owned) -> None:
        self.run(self.actors.owner(session, "keep-running"))

    @rule(session=sessions, action=st.sampled_from(["stop", "delete"]))
    def owner_ends(self, session: Owned, action: str) -> None:
        self.run(self.actors.owner(session, action))

    # The operator reports on the current spec; a pod whose spec wants it paused says Paused.
    @rule(session=sessions, duplicate=st.booleans())
    def operator_reports_running(self, session: Owned, duplicate: bool) -> None:
        self.run(self.actors.report(session, "Running", duplicate=duplicate))

    @rule(session=sessions, duplicate=st.booleans())
    def operator_reports_pending(self, session: Owned, duplicate: bool) -> None:
        self.run(self.actors.report(session, "Pending", duplicate=duplicate))

    @rule(session=sessions, duplicate=st.booleans())
    def operator_reports_failed(self, session: Owned, duplicate: bool) -> None:
        self.run(self.actors.report(session, "Failed", duplicate=duplicate))

    @rule(session=sessions)
    def apply_loop_removes_the_resource(self, session: Owned) -> None:
        self.run(self.actors.resource_removed(session))

    @rule(session=sessions)
    def operator_sees_the_pod_start_then_vanish(self, session: Owned) -> None:
        """Ready, then gone without a pause (a node lost, a pod evicted): the session is lost."""
        self.run(self.actors.report(session, "Running"))
        self.run(self.actors.report(session, "Pending"))

    @precondition(lambda self: bool(self.revised))
    @rule(
        data=st.data(),
        back=st.integers(1, 3),
        phase=st.sampled_from(["Running", "Pending", "Paused"]),
        duplicate=st.booleans(),
    )
    def operator_reports_late(
        self, data: st.DataObject, back: int, phase: str, duplicate: bool
    ) -> None:
        session = data.draw(st.sampled_from(self.revised), label="session")
        self.run(self.actors.report(session, phase, back=back, duplicate=duplicate))

    @precondition(lambda self: self.populated)
    @rule()
    def dequeue(self) -> None:
        self.run(self.actors.dequeue())

    # Short steps: the API's key ring holds its keys for five minutes of its clock.
    @precondition(lambda self: self.populated)
    @rule(seconds=st.integers(1, 19))
    def meter(self, seconds: int) -> None:
        self.run(self.actors.meter(seconds))

    @precondition(lambda self: self.populated)
    @rule()
    def preempt(self) -> None:
        self.run(self.actors.preempt())

    @precondition(lambda self: self.populated)
    @rule(seconds=st.integers(0, 60))
    def drain(self, seconds: int) -> None:
        self.run(self.actors.drain(seconds))

    @precondition(lambda self: self.populated)
    @rule()
    def reconcile(self) -> None:
        self.run(self.actors.reconcile())

    @rule(session=sessions)
    def cancel(self, session: Owned) -> None:
        self.run(self.actors.cancel(session))

    @precondition(lambda self: self.populated)
    @rule(member=st.integers(0, 1))
    def membership(self, member: int) -> None:
        self.run(self.actors.membership(member))

    @precondition(lambda self: self.settling)
    @rule()
    def quiet_period(self) -> None:
        self.run(self.actors.quiet_period())

    @invariant()
    def lifecycle_is_exact(self) -> None:
        if self.made is None:
            return
        rows = {str(r.id): r for r in self.run(self.made.check())}
        REACHED.update(r.state for r in rows.values())
        self.revised = [s for s in self.made.created if rows[s.id].spec_generation > 1]
        self.settling = any(r.state in ("starting", "pausing", "stopping") for r in rows.values())


IDS = random.Random(0)  # every id a run issues: `uuid.uuid4` draws from it during the test
REACHED: set[str] = set()  # every state some run's check saw
NOTICES: set[str] = set()  # every notice kind and status some run's check saw
FORECASTS: set[uuid.UUID] = set()  # every queued request some run saw forecast
USAGE: set[str] = set()  # how far some run's check saw allocations counted

ISOLATION: set[str] = set()  # what some run's check saw of dedicated cards
RACES: set[str] = set()  # the actions some run ended a wait with inside a walk deciding on it
# Each held GPU allocation with its group's organization, the boundary it was placed at, and
# the tenant its card's node (or cluster) is dedicated to now.
_HELD_ON_DEDICATED = text(
    "SELECT a.id, a.group_id, g.org_id, a.boundary, "
    "coalesce(dn.group_id, dn.organization_id, dc.group_id, dc.organization_id) AS tenant "
    "FROM gpu_allocations a JOIN gpu_cards c ON c.id = a.card_id "
    "JOIN groups g ON g.id = a.group_id "
    "LEFT JOIN node_dedications dn ON dn.cluster_id = c.cluster_id AND dn.node = c.node "
    "LEFT JOIN node_dedications dc ON dc.cluster_id = c.cluster_id AND dc.node IS NULL "
    "WHERE a.status <> 'released'"
)
# Each GPU allocation with its mark, its hold's captures and what its hours add up to.
_USAGE_OF_ALLOCATIONS = text(
    "SELECT a.id, a.admitted_at, a.released_at, a.rolled_until, a.rolled_credits, a.hold_id, "
    "h.captured, coalesce(u.held, 0) AS held, coalesce(u.credits, 0) AS credits "
    "FROM gpu_allocations a LEFT JOIN credit_holds h ON h.id = a.hold_id "
    "LEFT JOIN (SELECT allocation_id, sum(held_seconds) AS held, sum(credits) AS credits "
    "FROM usage_hours GROUP BY allocation_id) u ON u.allocation_id = a.id "
    "WHERE a.model IS NOT NULL"
)
_USAGE_TOTALS = text(
    "SELECT (SELECT coalesce(sum(credits), 0) FROM usage_hours), "
    "(SELECT coalesce(sum(credits), 0) FROM usage_days), "
    "(SELECT coalesce(sum(credits), 0) FROM usage_months)"
)


def _runs(count: int) -> settings:
    """`count` runs of up to 80 steps, the same everywhere (derandomized, no example
    database)."""
    return settings(
        max_examples=count,
        stateful_step_count=80,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


def test_random_interleavings_keep_the_lifecycle_exact(
    postgres: EmbeddedPostgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Interleavings.home = Home(postgres, tmp_path)
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=IDS.getrandbits(128), version=4))
    # The same runs everywhere (derandomized, no example database). Making a run's world costs
    # about as much as 30 steps, so a few long runs.
    Interleavings.TestCase.settings = _runs(16)
    REACHED.clear()
    NOTICES.clear()
    FORECASTS.clear()
    USAGE.clear()
    Interleavings.TestCase("runTest").runTest()
    # The runs walk the whole lifecycle: a state never reached is a part never tried.
    assert set(REACHED) == set(lifecycle.STATES), sorted(set(lifecycle.STATES) - REACHED)
    # And every kind of notice, through every way a notice ends.
    assert {"preemption", "drain", "pending", "paused", "freed", "withdrawn"} == NOTICES, NOTICES
    # And requests waited long enough to be given a start forecast.
    assert FORECASTS
    # And the usage rollup counted allocations, some of them to their end.
    assert {"counted", "counted to the end"} == USAGE, USAGE


class BookingInterleavings(Interleavings):
    """The same actors, and a second group that books the card: the lab's booking runs from the
    start, the super admin cancels it or books it again (from now, for a day), and member 1 asks for
    sessions in the lab, which go ahead of the queue and take the card back from the others'
    sessions with the booking's notice while the booking runs."""

    with_lab = True

    @rule(target=Interleavings.sessions)
    def create_in_lab(self) -> object:
        created = self.run(self.actors.create(1, "exclusive", in_lab=True))
        return multiple() if created is None else created

    @precondition(lambda self: self.populated)
    @rule(notice_minutes=st.sampled_from([0, 1, 5]))
    def book(self, notice_minutes: int) -> None:
        self.run(self.actors.book(notice_minutes))

    @precondition(lambda self: self.populated)
    @rule()
    def book_ahead(self) -> None:
        """A booking that starts within its notice: sessions in its way are told ahead."""
        self.run(self.actors.book(5, ahead_minutes=3))


def test_random_interleavings_with_a_booking_keep_the_lifecycle_exact(
    postgres: EmbeddedPostgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    BookingInterleavings.home = Home(postgres, tmp_path)
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=IDS.getrandbits(128), version=4))
    BookingInterleavings.TestCase.settings = _runs(12)
    NOTICES.clear()
    BookingInterleavings.TestCase("runTest").runTest()
    # The runs give booking notices, ahead of the window too, and see them act.
    assert {"booking", "ahead", "pending", "paused"} <= NOTICES, NOTICES


class QueueRaceInterleavings(Interleavings):
    """The same actors, and one more: the owner or an admin ends a wait (a stop, a pause, a
    cancel from the queue) between a walk of the queue's read of what waits and its commit,
    whether the walk admits it or claims a card for it by preemption. No session that has
    ended may keep a card or a hold."""

    @precondition(lambda self: self.populated)
    @rule(pick=st.integers(0, 3), action=st.sampled_from(["stop", "pause", "cancel"]))
    def action_lands_inside_a_walk_of_the_queue(self, pick: int, action: str) -> None:
        self.run(self.actors.inside_walk(pick, action))


def test_random_interleavings_with_waits_ended_inside_a_walk_keep_the_lifecycle_exact(
    postgres: EmbeddedPostgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    QueueRaceInterleavings.home = Home(postgres, tmp_path)
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=IDS.getrandbits(128), version=4))
    QueueRaceInterleavings.TestCase.settings = _runs(6)
    RACES.clear()
    QueueRaceInterleavings.TestCase("runTest").runTest()
    # The runs ended waits inside walks that were deciding on them.
    assert {"stop", "pause", "cancel"} <= RACES, RACES


class IsolationInterleavings(BookingInterleavings):
    """The booking's actors, and a super admin who dedicates the card's node to the lab and gives
    it back, and sets the lab's isolation level to dedicated or shared, at any time: the others'
    sessions never hold the card while it is the lab's, and the lab's sessions at the dedicated
    level wait for it or are refused when it goes. Each run starts with the node the lab's and
    the lab at the dedicated level."""

    async def _world(self) -> Actors:
        actors = await super()._world()
        await actors.dedicate()
        await actors.isolate("dedicated")
        return actors

    @precondition(lambda self: self.populated)
    @rule()
    def dedicate(self) -> None:
        self.run(self.actors.dedicate())

    @precondition(lambda self: self.populated)
    @rule(level=st.sampled_from(["dedicated", "shared"]))
    def isolate(self, level: str) -> None:
        self.run(self.actors.isolate(level))


def test_random_interleavings_with_dedicated_nodes_keep_tenants_apart(
    postgres: EmbeddedPostgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    IsolationInterleavings.home = Home(postgres, tmp_path)
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=IDS.getrandbits(128), version=4))
    IsolationInterleavings.TestCase.settings = _runs(6)
    ISOLATION.clear()
    IsolationInterleavings.TestCase("runTest").runTest()
    # The runs see the lab hold its dedicated card, placed there at its dedicated level.
    assert {"held on a dedicated card", "placed at a dedicated level"} == ISOLATION, ISOLATION
