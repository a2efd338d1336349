"""Each process's fan-out: reads new events once, hands each open stream those it may see.

The hub listens (through the process's one LISTEN connection) for the relay's numbers, reads
the rows after the last it delivered in one query per batch, resolves who they concern, and
queues each event on every subscriber whose viewer may see it. A subscriber that falls too far
behind is closed: its client reconnects with `Last-Event-ID` and replays from the table.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import uuid
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sse_starlette import ServerSentEvent

from gshare.events.audience import Viewer, may_see
from gshare.events.outbox import Audience
from gshare.kit.clock import Clock
from gshare.kit.hooks import Hook

log = logging.getLogger(__name__)

FETCH = 1000
# Above any number the relay will give (and within a bigint): "no upper bound" when reading.
MAX_EVENT_ID = 2**62
# A client further behind than this reloads everything instead (cheaper for both sides).
REPLAY_LIMIT = 2000
REPLAY_PAGE = 500
# Replays read the table; at most this many at once per process, so no caller can take
# every pooled connection or the event loop by reconnecting with old ids.
CONCURRENT_REPLAYS = 2
MAX_PENDING = 1000
MAX_STREAMS_PER_USER = 16
ACCOUNT_CHANGED = "account.changed"


@dataclass(frozen=True)
class Scopes:
    """Where the users and groups named by a batch of events stand now."""

    user_groups: Mapping[uuid.UUID, Mapping[uuid.UUID, uuid.UUID]] = field(default_factory=dict)
    group_orgs: Mapping[uuid.UUID, uuid.UUID] = field(default_factory=dict)


# identity answers: the groups (group -> org) of each user, and the organization of each group.
scopes_of: Hook[[Sequence[uuid.UUID], Sequence[uuid.UUID], datetime], Scopes] = Hook("event scopes")


@dataclass
class StoredEvent:
    seq: int
    kind: str
    audience: Audience
    data: dict[str, Any]
    _frame: bytes | None = None

    @property
    def frame(self) -> bytes:
        """The event as streams send it: encoded once, by the first stream that sends it, for
        every stream that does (and never for an event nobody may see)."""
        if self._frame is None:
            self._frame = encoded(self.seq, self.kind, self.data)
        return self._frame


def encoded(seq: int, kind: str, data: dict[str, Any]) -> bytes:
    body = json.dumps(data, separators=(",", ":"))
    return ServerSentEvent(id=str(seq), event=kind, data=body).encode()


def position(seq: int) -> bytes:
    """A frame with an id and nothing else: the browser remembers it as its last event id but
    dispatches nothing, so a quiet stream's reconnect does not ask for what it may not see."""
    return f"id: {seq}\r\n\r\n".encode()


# "Reload everything": some of what a reconnecting client missed is no longer kept.
RESET = StoredEvent(0, "reset", Audience(), {})


_AFTER = text(
    "SELECT seq, kind, user_id, group_id, org_id, private, everyone, data FROM events "
    "WHERE seq > :after AND seq <= :upto ORDER BY seq LIMIT :limit"
)
_LAST = text("SELECT last_seq FROM event_relay WHERE id = 1")


async def _read(db: AsyncSession, after: int, upto: int, limit: int) -> list[StoredEvent]:
    rows = await db.execute(_AFTER, {"after": after, "upto": upto, "limit": limit})
    return [
        StoredEvent(
            r.seq,
            r.kind,
            Audience(r.user_id, r.group_id, r.org_id, r.private, r.everyone),
            r.data,
        )
        for r in rows
    ]


async def _scopes(db: AsyncSession, events: Sequence[StoredEvent], now: datetime) -> Scopes:
    # Only what `may_see` will ask: the groups of a user the event names no scope for, and the
    # organization of a group named without one.
    users = {
        e.audience.user_id
        for e in events
        if e.audience.user_id
        and not (e.audience.private or e.audience.group_id or e.audience.org_id)
    }
    groups = {e.audience.group_id for e in events if e.audience.group_id and not e.audience.org_id}
    if not (users or groups) or not scopes_of.connected:
        return Scopes()
    found = Scopes()
    for part in await scopes_of.results(db, sorted(users), sorted(groups), now):
        found = Scopes(
            {**found.user_groups, **part.user_groups}, {**found.group_orgs, **part.group_orgs}
        )
    return found


def visible(viewer: Viewer, event: StoredEvent, scopes: Scopes) -> bool:
    audience = event.audience
    return may_see(
        viewer,
        audience,
        user_groups=scopes.user_groups.get(audience.user_id, {}) if audience.user_id else {},
        group_org=scopes.group_orgs.get(audience.group_id) if audience.group_id else None,
    )


_slices = itertools.count()


class Subscriber:
    """One open stream: its viewer and the events waiting to be sent to it."""

    def __init__(self, viewer: Viewer, user_id: uuid.UUID, start: int) -> None:
        self._viewer = viewer
        self.viewer_changes = 0
        self.user_id = user_id
        self.start = start  # the last number delivered when it subscribed
        self.pending: deque[tuple[StoredEvent, Scopes, int]] = deque()
        self.stale = False  # the viewer's roles or sign-in may have changed
        self.slice = next(_slices)  # which turn of the periodic recheck wakes it
        self.overflowed = False
        self.signal = asyncio.Event()

    @property
    def viewer(self) -> Viewer:
        return self._viewer

    @viewer.setter
    def viewer(self, viewer: Viewer) -> None:
        self._viewer = viewer
        self.viewer_changes += 1

    def offer(self, event: StoredEvent, scopes: Scopes) -> None:
        """Queue an event; if the viewer changes before it is sent, it is checked again."""
        if len(self.pending) >= MAX_PENDING:
            self.overflowed = True
        else:
            self.pending.append((event, scopes, self.viewer_changes))
        self.signal.set()

    def take(self) -> list[StoredEvent]:
        """The queued events this viewer may still see, in order."""
        taken = []
        while self.pending:
            event, scopes, changes = self.pending.popleft()
            if changes == self.viewer_changes or visible(self._viewer, event, scopes):
                taken.append(event)
        return taken

    def mark_stale(self) -> None:
        self.stale = True
        self.signal.set()

    async def wait(self) -> None:
        """Until there is something to send or to check. No timer per stream: the hub wakes
        every stream now and then to check its caller and its lifetime."""
        if not (self.pending or self.stale or self.overflowed):
            await self.signal.wait()
        self.signal.clear()


class Hub:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        clock: Clock,
        *,
        poll_seconds: float = 5,
        recheck_seconds: float = 15,
    ) -> None:
        self.sessions = sessions
        self.clock = clock
        self.recheck_seconds = recheck_seconds
        self.poll_seconds = poll_seconds
        self.last = 0
        self.subscribers: set[Subscriber] = set()
        self._wanted = asyncio.Event()
        self._replays = asyncio.Semaphore(CONCURRENT_REPLAYS)
        self._listening = False
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        async with self.sessions() as db:
            self.last = (await db.execute(_LAST)).scalar_one()
        self._tasks = [
            asyncio.create_task(self._run(), name="gshare-event-hub"),
            asyncio.create_task(self._recheck(), name="gshare-event-recheck"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for subscriber in list(self.subscribers):
            subscriber.overflowed = True  # closes each stream; clients reconnect elsewhere
            subscriber.signal.set()

    # ---- what the LISTEN connection tells the hub -------------------------------------------

    def numbered(self, payload: str) -> None:
        """The relay numbered events up to `payload`."""
        with contextlib.suppress(ValueError):
            if int(payload) <= self.last:
                return
        self._wanted.set()

    def access_changed(self, payload: str) -> None:
        """A user's sign-in or roles changed ('user:<id>'), or anyone's ('all')."""
        kind, _, value = payload.partition(":")
        try:
            user_id = uuid.UUID(value) if kind == "user" else None
        except ValueError:
            user_id = None
        for subscriber in list(self.subscribers):
            if user_id is None or subscriber.user_id == user_id:
                subscriber.mark_stale()

    def connection_changed(self, up: bool) -> None:
        self._listening = up
        if up:
            # Anything may have happened while nobody was listening: recheck everyone.
            self.access_changed("all")
        self._wanted.set()  # catch up now, and poll often while the connection is down

    # ---- streams ----------------------------------------------------------------------------

    def streams_of(self, user_id: uuid.UUID) -> int:
        return sum(1 for s in self.subscribers if s.user_id == user_id)

    def subscribe(self, viewer: Viewer, user_id: uuid.UUID) -> Subscriber:
        subscriber = Subscriber(viewer, user_id, self.last)
        self.subscribers.add(subscriber)
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        self.subscribers.discard(subscriber)

    async def replay(self, subscriber: Subscriber, after: int) -> list[StoredEvent]:
        """What the subscriber missed after `after`, up to where its live tail begins; or
        RESET alone when some of it is no longer kept, when it is too much to be worth
        replaying, or when `after` names no event this server gave."""
        upto = subscriber.start
        if after == upto:
            return []
        if after > upto or upto - after > REPLAY_LIMIT:
            return [RESET]
        kept: list[StoredEvent] = []
        async with self._replays:
            while after < upto:
                # Page by page, each in a short transaction, yielding the loop in between.
                async with self.sessions() as db:
                    page = await _read(db, after, upto, REPLAY_PAGE)
                    if not page or page[0].seq != after + 1 or page[-1].seq - after != len(page):
                        return [RESET]  # numbers are dense: a hole is what was pruned
                    scopes = await _scopes(db, page, self.clock.now())
                kept += [e for e in page if visible(subscriber.viewer, e, scopes)]
                after = page[-1].seq
                await asyncio.sleep(0)
        return kept

    # ---- the delivery loop ------------------------------------------------------------------

    async def _recheck(self) -> None:
        """Wake every stream once per `recheck_seconds`, a slice at a time: a thousand streams
        waking at once would delay the events due in that moment."""
        slices = max(1, round(self.recheck_seconds))
        tick = 0
        while True:
            await asyncio.sleep(self.recheck_seconds / slices)
            tick = (tick + 1) % slices
            for subscriber in list(self.subscribers):
                if subscriber.slice % slices == tick:
                    subscriber.signal.set()

    async def _run(self) -> None:
        while True:
            poll = self.poll_seconds if self._listening else 0.5
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wanted.wait(), poll)
            self._wanted.clear()
            try:
                await self.deliver_new()
            except Exception:
                log.exception("delivering events failed; retrying")
                await asyncio.sleep(0.5)
                self._wanted.set()

    async def deliver_new(self) -> int:
        """Read and hand out every event numbered after the last delivered; returns how many."""
        delivered = 0
        while True:
            async with self.sessions() as db:
                batch = await _read(db, self.last, MAX_EVENT_ID, FETCH)
                wanted = batch and self.subscribers
                scopes = await _scopes(db, batch, self.clock.now()) if wanted else Scopes()
            if not batch:
                return delivered
            for event in batch:
                if event.kind == ACCOUNT_CHANGED and event.audience.user_id is not None:
                    # Its own NOTIFY on gshare_auth may have been lost with the connection.
                    self.access_changed(f"user:{event.audience.user_id}")
                for subscriber in list(self.subscribers):
                    if visible(subscriber.viewer, event, scopes):
                        subscriber.offer(event, scopes)
            self.last = batch[-1].seq
            delivered += len(batch)
            if len(batch) < FETCH:
                return delivered
