"""The outbox and the relay on the real database: what commits is delivered, in commit order."""

from __future__ import annotations

import asyncio
import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.events import outbox
from gshare.events.hub import REPLAY_LIMIT, RESET, Hub
from gshare.events.outbox import Audience
from gshare.events.relay import relay_pending
from gshare.identity.permissions import Actor
from gshare.kit.clock import FrozenClock


async def _numbered(sessions: async_sessionmaker[AsyncSession]) -> list[tuple[int, str]]:
    async with sessions() as db:
        rows = await db.execute(text("SELECT seq, kind FROM events ORDER BY seq NULLS LAST"))
        return [(r.seq, r.kind) for r in rows]


async def test_a_rolled_back_event_is_never_delivered_and_a_committed_one_always_is(
    sessions: async_sessionmaker[AsyncSession], clock: FrozenClock
) -> None:
    user = uuid.uuid4()
    hub = Hub(sessions, clock)
    await hub.start()
    try:
        watcher = hub.subscribe(Actor(user_id=user, email="u@example.org"), user)
        async with sessions() as db:
            await outbox.record(db, "test.rolled_back", Audience.only(user))
            await db.rollback()
        async with sessions() as db, db.begin():
            await outbox.record(db, "test.committed", Audience.only(user))
        await relay_pending(sessions)
        await hub.deliver_new()
    finally:
        await hub.stop()
    assert [event.kind for event in watcher.take()] == ["test.committed"]
    assert await _numbered(sessions) == [(1, "test.committed")]


async def test_events_are_numbered_in_commit_order_densely_whatever_their_insert_order(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    audience = Audience.only(uuid.uuid4())
    async with sessions() as early:
        await early.begin()
        await outbox.record(early, "test.inserted_first_committed_last", audience)
        async with sessions() as late, late.begin():
            await outbox.record(late, "test.inserted_last_committed_first", audience)
        await relay_pending(sessions)  # sees only what has committed
        await early.commit()
    await relay_pending(sessions)
    assert await _numbered(sessions) == [
        (1, "test.inserted_last_committed_first"),
        (2, "test.inserted_first_committed_last"),
    ]


async def test_relays_in_many_processes_number_each_event_once(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    audience = Audience.only(uuid.uuid4())

    async def writer(n: int) -> None:
        for i in range(25):
            async with sessions() as db, db.begin():
                await outbox.record(db, "test.written", audience, {"n": n, "i": i})

    async def relay_until_done(done: asyncio.Event) -> None:
        while not done.is_set():
            await relay_pending(sessions)
        await relay_pending(sessions)

    done = asyncio.Event()
    relays = [asyncio.create_task(relay_until_done(done)) for _ in range(3)]
    await asyncio.gather(*(writer(n) for n in range(4)))
    done.set()
    await asyncio.gather(*relays)
    numbered = await _numbered(sessions)
    assert [seq for seq, _ in numbered] == list(range(1, 101))
    async with sessions() as db:
        last = (await db.execute(text("SELECT last_seq FROM event_relay"))).scalar_one()
    assert last == 100


async def test_a_commit_that_recorded_events_wakes_the_relay_at_once(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    woken: list[bool] = []
    undo = outbox.on_commit_of_events(lambda: woken.append(True))
    try:
        async with sessions() as db, db.begin():
            await db.execute(text("SELECT 1"))
        assert woken == []  # a commit that recorded nothing wakes nobody
        async with sessions() as db, db.begin():
            await outbox.record(db, "test.any", Audience())
        assert woken == [True]
        async with sessions() as db:
            await outbox.record(db, "test.any", Audience())
            await db.rollback()
        async with sessions() as db, db.begin():
            await db.execute(text("SELECT 1"))
        assert woken == [True]  # the rolled-back one left no mark on the next transaction
    finally:
        undo()


async def test_an_account_change_read_from_the_table_makes_its_users_streams_recheck(
    sessions: async_sessionmaker[AsyncSession], clock: FrozenClock
) -> None:
    """Its NOTIFY on gshare_auth is lost while the LISTEN connection is down; the event is not."""
    user, bystander = uuid.uuid4(), uuid.uuid4()
    hub = Hub(sessions, clock)
    await hub.start()
    try:
        mine = hub.subscribe(Actor(user_id=user, email="u@example.org"), user)
        theirs = hub.subscribe(Actor(user_id=bystander, email="b@example.org"), bystander)
        async with sessions() as db, db.begin():
            await outbox.record(db, "account.changed", Audience.only(user))
        await relay_pending(sessions)
        await hub.deliver_new()
    finally:
        await hub.stop()
    assert mine.stale
    assert not theirs.stale


async def test_a_replay_too_long_or_with_a_hole_is_a_reset(
    sessions: async_sessionmaker[AsyncSession], clock: FrozenClock
) -> None:
    user = uuid.uuid4()
    async with sessions() as db, db.begin():
        await outbox.record_many(
            db, [outbox.NewEvent("test.any", Audience.only(user))] * (REPLAY_LIMIT + 5)
        )
    await relay_pending(sessions)
    hub = Hub(sessions, clock)
    await hub.start()
    try:
        viewer = Actor(user_id=user, email="u@example.org")
        subscriber = hub.subscribe(viewer, user)
        assert await hub.replay(subscriber, 0) == [RESET]  # too far behind: reload instead
        assert len(await hub.replay(subscriber, 5)) == REPLAY_LIMIT
        async with sessions() as db, db.begin():
            await db.execute(text("DELETE FROM events WHERE seq = 600"))
        assert await hub.replay(subscriber, 5) == [RESET]
        assert len(await hub.replay(subscriber, 600)) == REPLAY_LIMIT - 595
    finally:
        await hub.stop()
