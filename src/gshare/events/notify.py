"""Sending and receiving PostgreSQL notifications.

`notify` runs inside the caller's transaction, so PostgreSQL delivers the event only if that
transaction commits: a rolled-back change never announces itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import asyncpg
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

log = logging.getLogger(__name__)
# How long closing the LISTEN connection waits for the server before cutting it.
CLOSE_TIMEOUT_SECONDS = 5.0

AUTH_CHANNEL = "gshare_auth"


async def notify(db: AsyncSession, channel: str, payload: str) -> None:
    await db.execute(
        text("SELECT pg_notify(:channel, :payload)"), {"channel": channel, "payload": payload}
    )


Handler = Callable[[str], None]
T = TypeVar("T")


def fan_out(*handlers: Callable[[T], None]) -> Callable[[T], None]:
    """One handler that calls several in turn (one LISTEN channel, several interested parts)."""

    def call_all(value: T) -> None:
        for handler in handlers:
            handler(value)

    return call_all


class Listener:
    """Holds one LISTEN connection and calls handlers; reconnects with backoff when it drops.

    `on_connected(False)` is called when the connection is lost and `on_connected(True)` when
    it is back, so a cache that relies on notifications can stop trusting itself in between.
    """

    def __init__(
        self,
        dsn: str,
        handlers: dict[str, Handler],
        on_connected: Callable[[bool], None] = lambda up: None,
    ) -> None:
        self.dsn = dsn
        self.handlers = handlers
        self.on_connected = on_connected
        self._task: asyncio.Task[None] | None = None
        self._lost = asyncio.Event()

    async def start(self) -> None:
        await self._connect()
        self._task = asyncio.create_task(self._watch(), name="gshare-listener")

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._close()

    async def _connect(self) -> None:
        self._conn: Any = await asyncpg.connect(self.dsn)
        self._conn.add_termination_listener(lambda conn: self._mark_lost())
        for channel, handler in self.handlers.items():
            await self._conn.add_listener(channel, self._dispatch(handler))
        self._lost.clear()
        self.on_connected(True)

    def _dispatch(self, handler: Handler) -> Callable[..., None]:
        def callback(conn: Any, pid: int, channel: str, payload: str) -> None:
            try:
                handler(payload)
            except Exception:
                log.exception("notification handler for %s failed", channel)

        return callback

    def _mark_lost(self) -> None:
        self.on_connected(False)
        self._lost.set()

    async def _close(self) -> None:
        conn = getattr(self, "_conn", None)
        if conn is not None and not conn.is_closed():
            try:
                # A graceful close waits for the server; one that does not answer is cut.
                await asyncio.wait_for(conn.close(), CLOSE_TIMEOUT_SECONDS)
            except (TimeoutError, OSError, asyncpg.PostgresError):
                conn.terminate()

    async def _watch(self) -> None:
        delay = 0.5
        while True:
            await self._lost.wait()
            log.warning("lost the LISTEN connection; reconnecting")
            while True:
                try:
                    await self._connect()
                    delay = 0.5
                    break
                except (OSError, asyncpg.PostgresError):
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 10)
