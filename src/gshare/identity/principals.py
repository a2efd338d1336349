"""Signed-in callers: the snapshot a request works with, and a per-process cache of them.

Reads (GET) may be answered from the cache; every state-changing request reads the database.
Each change to a user's sessions, roles or details sends a NOTIFY in its own transaction, and
every process drops the affected entries when it arrives. While the LISTEN connection is down
the cache is off, and entries also expire on their own after a short time.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from gshare.events import outbox
from gshare.events.hub import ACCOUNT_CHANGED
from gshare.events.notify import AUTH_CHANNEL, notify
from gshare.identity.permissions import Actor


@dataclass(frozen=True)
class Principal:
    """A live login session and its user, as read at one moment."""

    login_id: uuid.UUID
    csrf_token: str
    login_expires_at: datetime
    last_seen_at: datetime
    user_id: uuid.UUID
    email: str
    name: str
    is_super_admin: bool
    must_change_password: bool
    active: bool
    created_at: datetime
    actor: Actor
    # When something in the snapshot changes by itself (a guest membership expiring).
    changes_at: datetime | None = None


@dataclass
class _Entry:
    principal: Principal
    fresh_until: datetime
    me_body: bytes | None = None


@dataclass
class PrincipalCache:
    ttl: timedelta = timedelta(seconds=15)
    max_entries: int = 50_000
    enabled: bool = False
    _entries: dict[bytes, _Entry] = field(default_factory=dict)
    _by_user: dict[uuid.UUID, set[bytes]] = field(default_factory=dict)
    _epoch: int = 0

    @property
    def epoch(self) -> int:
        """Read before loading from the database; pass to `put` so a racing change wins."""
        return self._epoch

    def get(self, key: bytes, now: datetime) -> _Entry | None:
        if not self.enabled:
            return None
        entry = self._entries.get(key)
        if entry is None:
            return None
        if now >= entry.fresh_until:
            self._drop(key)
            return None
        return entry

    def put(self, key: bytes, principal: Principal, now: datetime, epoch: int) -> None:
        if not self.enabled or epoch != self._epoch or self.ttl <= timedelta(0):
            return
        if len(self._entries) >= self.max_entries:
            self.clear()
        fresh_until = now + self.ttl
        if principal.changes_at is not None:
            fresh_until = min(fresh_until, principal.changes_at)
        fresh_until = min(fresh_until, principal.login_expires_at)
        self._entries[key] = _Entry(principal, fresh_until)
        self._by_user.setdefault(principal.user_id, set()).add(key)

    def remember_body(self, key: bytes, body: bytes, epoch: int) -> None:
        entry = self._entries.get(key)
        if entry is not None and epoch == self._epoch:
            entry.me_body = body

    def touched(self, key: bytes, now: datetime) -> None:
        entry = self._entries.get(key)
        if entry is not None:
            entry.principal = replace(entry.principal, last_seen_at=now)

    def _drop(self, key: bytes) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            keys = self._by_user.get(entry.principal.user_id)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._by_user[entry.principal.user_id]

    def invalidate(self, payload: str) -> None:
        """Handle a notification: 'user:<id>' drops one user's entries, anything else all."""
        self._epoch += 1
        kind, _, value = payload.partition(":")
        if kind == "user":
            try:
                user_id = uuid.UUID(value)
            except ValueError:
                self.clear()
                return
            for key in list(self._by_user.get(user_id, ())):
                self._drop(key)
        else:
            self.clear()

    def clear(self) -> None:
        self._epoch += 1
        self._entries.clear()
        self._by_user.clear()

    def connection_changed(self, up: bool) -> None:
        self.clear()
        self.enabled = up and self.ttl > timedelta(0)


async def announce_user_changed(db: AsyncSession, user_id: uuid.UUID) -> None:
    """Tell every process, once this transaction commits, that a user's access changed; and
    the user's own open consoles, which then read who they are again."""
    await notify(db, AUTH_CHANNEL, f"user:{user_id}")
    await outbox.record(db, ACCOUNT_CHANGED, outbox.Audience.only(user_id))


async def announce_tenancy_changed(db: AsyncSession) -> None:
    """Organizations or groups were renamed or removed: every cached view may be stale."""
    await notify(db, AUTH_CHANNEL, "all")
