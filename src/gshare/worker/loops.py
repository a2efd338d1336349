"""Periodic loops. Each tick is safe to run in several workers at once and after any crash:
the work it calls is exactly-once by construction (see credits/tasks.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.clusters.keyfile import load_or_create, rotate_if_due
from gshare.clusters.kubeconfigs import store_for
from gshare.clusters.tasks import refresh_operator_tokens
from gshare.credits.tasks import period_of, refill_month
from gshare.identity.service import forget_sign_in_failures
from gshare.kit.clock import Clock
from gshare.kit.db import run_in_transaction
from gshare.kit.idempotency import forget_before
from gshare.kit.settings import Settings
from gshare.sessions.service import forget_used_tickets

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Loop:
    name: str
    interval_seconds: float
    tick: Callable[[], Awaitable[object]]


def worker_loops(
    settings: Settings, sessions: async_sessionmaker[AsyncSession], clock: Clock
) -> list[Loop]:
    zone = ZoneInfo(settings.credits_timezone)

    async def refill() -> object:
        now = clock.now()
        return await refill_month(sessions, period_of(now, zone), now)

    async def housekeeping() -> object:
        now = clock.now()

        async def forget(session: AsyncSession) -> None:
            await forget_before(session, now - timedelta(days=settings.idempotency_key_days))
            await forget_sign_in_failures(session, now)
            await forget_used_tickets(session, now)

        return await run_in_transaction(sessions, forget)

    store = store_for(settings)
    keys_path = settings.data_dir / "internal-keys.json"

    async def operator_tokens() -> object:
        now = clock.now()
        if rotate_if_due(keys_path, now):
            log.info("the internal signing key was rotated")
        return await refresh_operator_tokens(sessions, store, load_or_create(keys_path, now), now)

    return [
        Loop("monthly refill", settings.refill_interval_seconds, refill),
        Loop("housekeeping", 3600, housekeeping),
        Loop("operator tokens", 300, operator_tokens),
    ]


async def _run(loop: Loop, stop: asyncio.Event) -> None:
    while not stop.is_set():
        try:
            await loop.tick()
        except Exception:
            # A failed tick is retried on the next one; the work is idempotent.
            log.exception("%s failed", loop.name)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=loop.interval_seconds)


class Worker:
    """Runs loops until stopped; used by `gshare worker` and inside `gshare up`."""

    def __init__(self, loops: list[Loop]) -> None:
        self.loops = loops
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(_run(loop, self._stop), name=loop.name) for loop in self.loops
        ]

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def run_until(self, stop: asyncio.Event) -> None:
        self.start()
        await stop.wait()
        await self.stop()
