"""Periodic loops. Each tick is safe to run in several workers at once and after any crash:
the work it calls is exactly-once by construction (see credits/tasks.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.capacity import tasks as capacity_tasks
from gshare.capacity.service import CAPACITY_CHANNEL
from gshare.clusters.keystore import key_store_for, load_or_create, rotate_if_due
from gshare.clusters.kubeconfigs import store_for
from gshare.clusters.tasks import (
    forget_removed_kubeconfigs,
    keep_local_cluster,
    refresh_operator_tokens,
)
from gshare.credits.tasks import check_alerts, period_of, refill_month
from gshare.events.notify import Listener
from gshare.events.outbox import on_commit_of_events
from gshare.events.relay import relay_pending
from gshare.events.repository import prune_events
from gshare.identity.service import forget_sign_in_failures
from gshare.kit import metrics
from gshare.kit.clock import Clock
from gshare.kit.db import run_in_transaction
from gshare.kit.idempotency import forget_before
from gshare.kit.settings import Settings
from gshare.sessions import tasks as session_tasks
from gshare.sessions.entry import forget_used_tickets
from gshare.usage import tasks as usage_tasks
from gshare.worker.health import Recorder
from gshare.worker.hooks import connect_hooks

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Loop:
    name: str
    interval_seconds: float
    tick: Callable[[], Awaitable[object]]
    # A NOTIFY on this channel runs the loop at once instead of at its next interval.
    wake_on: str | None = None
    # So does each commit in this process that recorded events.
    wake_after_commit: bool = False
    # After a tick, wakes gather this long before the next: one tick then serves many.
    gather_seconds: float = 0


RELAY_GATHER_SECONDS = 0.025
# How long stopping waits for each loop's tick to end before cutting it short.
STOP_GRACE_SECONDS = 10.0


def event_relay(settings: Settings, sessions: async_sessionmaker[AsyncSession]) -> Loop:
    """Numbers committed events and notifies; every API and worker process runs one."""
    return Loop(
        "event relay",
        settings.events_relay_interval_seconds,
        lambda: relay_pending(sessions),
        wake_after_commit=True,
        # Numbering is one transaction with a NOTIFY, which serializes commits cluster-wide:
        # a short gather keeps that to a few per second under load, for little latency.
        gather_seconds=RELAY_GATHER_SECONDS,
    )


def worker_loops(
    settings: Settings, sessions: async_sessionmaker[AsyncSession], clock: Clock
) -> list[Loop]:
    zone = ZoneInfo(settings.credits_timezone)
    connect_hooks()

    async def wallet_alerts() -> object:
        return await check_alerts(sessions, clock.now())

    async def refill() -> object:
        now = clock.now()
        return await refill_month(sessions, period_of(now, zone), now)

    async def housekeeping() -> object:
        now = clock.now()

        async def forget(db: AsyncSession) -> None:
            await forget_before(db, now - timedelta(days=settings.idempotency_key_days))
            await prune_events(db, now - timedelta(hours=settings.events_retention_hours))
            await forget_sign_in_failures(db, now)
            await forget_used_tickets(db, now)

        await run_in_transaction(sessions, forget)
        # Hourly keeps each session's samples within a few hundred rows of the bound.
        return await session_tasks.thin_samples(sessions, now)

    store = store_for(settings)
    keystore = key_store_for(settings)

    async def operator_tokens() -> object:
        now = clock.now()
        if settings.local_cluster:
            try:
                await keep_local_cluster(
                    sessions,
                    store,
                    name=settings.local_cluster,
                    sessions_domain=settings.local_sessions_domain,
                    now=now,
                )
            except Exception:  # the other clusters' tokens and the rotation go on regardless
                log.exception("cannot keep the local cluster %s registered", settings.local_cluster)
        if await rotate_if_due(keystore, now):
            log.info("the internal signing key was rotated")
        keys = await load_or_create(keystore, now)
        refreshed = await refresh_operator_tokens(sessions, store, keys, now)
        if forgotten := await forget_removed_kubeconfigs(sessions, store, now):
            log.info("deleted the kubeconfigs of %d removed clusters", forgotten)
        return refreshed

    forecast_mark: list[str | None] = [None]

    async def dequeue() -> object:
        summary = await capacity_tasks.dequeue_once(sessions, settings, clock.now())
        # Notices next: a session paused at its deadline frees a card, which wakes this loop
        # again to admit the request it was promised to.
        await capacity_tasks.preempt_once(sessions, settings, clock.now())
        # Last, the start forecasts, when what waits or runs changed since the last ones.
        try:
            _, forecast_mark[0] = await capacity_tasks.forecast_once(
                sessions, settings, clock.now(), forecast_mark[0]
            )
        except Exception:  # a forecast that fails leaves the queue turning
            log.exception("cannot refresh the start forecasts")
        return summary

    async def fair_share() -> object:
        return await capacity_tasks.sample_once(sessions, settings, clock.now())

    async def apply_sessions() -> object:
        return await session_tasks.apply_pending(
            sessions, store, clock.now(), namespace=settings.sessions_namespace
        )

    async def orphans() -> object:
        return await session_tasks.scan_orphans(
            sessions, store, clock.now(), namespace=settings.sessions_namespace
        )

    async def metering() -> object:
        metered = await session_tasks.meter(sessions, settings, clock.now())
        metrics.WORKER_GAUGES.metered(await session_tasks.oldest_metered(sessions), clock)
        return metered

    async def reaping() -> object:
        return await session_tasks.reap_once(sessions, settings, clock.now())

    async def reconcile() -> object:
        return await session_tasks.reconcile_once(sessions, settings, clock.now())

    async def usage_rollup() -> object:
        return await usage_tasks.roll_up(sessions, settings, clock.now())

    async def usage_digests() -> object:
        return await usage_tasks.send_digests(sessions, clock.now())

    return [
        event_relay(settings, sessions),
        # Every session change records an event, so a local commit wakes the apply at once.
        Loop(
            "session apply",
            settings.session_apply_interval_seconds,
            apply_sessions,
            wake_after_commit=True,
            gather_seconds=0.05,
        ),
        Loop("metering", settings.metering_interval_seconds, metering),
        Loop("idle reaping", settings.idle_check_interval_seconds, reaping),
        Loop("session reconcile", settings.session_reconcile_interval_seconds, reconcile),
        Loop("usage rollup", settings.usage_rollup_interval_seconds, usage_rollup),
        Loop("weekly usage digests", 3600, usage_digests),
        Loop("orphan resources", 600, orphans),
        Loop("admission queue", settings.dequeue_interval_seconds, dequeue, CAPACITY_CHANNEL),
        Loop("fair-share usage", settings.fair_share_interval_seconds, fair_share),
        Loop("monthly refill", settings.refill_interval_seconds, refill),
        Loop("wallet alerts", settings.metering_interval_seconds, wallet_alerts),
        Loop("housekeeping", 3600, housekeeping),
        Loop("operator tokens", 300, operator_tokens),
    ]


async def _run(
    loop: Loop, stop: asyncio.Event, wake: asyncio.Event, health: Recorder | None
) -> None:
    runs, failures = metrics.LOOP_RUNS.labels(loop.name), metrics.LOOP_FAILURES.labels(loop.name)
    seconds = metrics.LOOP_SECONDS.labels(loop.name)
    while not stop.is_set():
        wake.clear()
        error = None
        started = time.perf_counter()
        try:
            await loop.tick()
        except Exception as exc:
            # A failed tick is retried on the next one; the work is idempotent.
            log.exception("%s failed", loop.name)
            error = f"{type(exc).__name__}: {exc}"
            failures.inc()
        else:
            metrics.LOOP_LAST_SUCCESS.labels(loop.name).set_to_current_time()
        seconds.observe(time.perf_counter() - started)
        runs.inc()
        if health is not None:
            try:
                await health.ran(loop.name, loop.interval_seconds, error)
            except Exception:
                log.warning("cannot record how %s ran", loop.name, exc_info=True)
        if loop.gather_seconds:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), loop.gather_seconds)
        stopped, woken = asyncio.create_task(stop.wait()), asyncio.create_task(wake.wait())
        await asyncio.wait(
            {stopped, woken}, timeout=loop.interval_seconds, return_when=asyncio.FIRST_COMPLETED
        )
        for waiting in (stopped, woken):
            waiting.cancel()


class Worker:
    """Runs loops until stopped; used by `gshare worker` and inside `gshare up`. With
    `listen_dsn`, a loop that names a channel is also woken by each NOTIFY on it (while the
    LISTEN connection is down, it still runs at its interval)."""

    def __init__(
        self,
        loops: list[Loop],
        *,
        listen_dsn: str | None = None,
        health: Recorder | None = None,
    ) -> None:
        self.loops = loops
        self.listen_dsn = listen_dsn
        self.health = health
        self._stop = asyncio.Event()
        self._wake = {loop.name: asyncio.Event() for loop in loops}
        self._tasks: list[asyncio.Task[None]] = []
        self._undo: list[Callable[[], None]] = []

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(
                _run(loop, self._stop, self._wake[loop.name], self.health), name=loop.name
            )
            for loop in self.loops
        ]
        self._undo = [
            on_commit_of_events(self._wake[loop.name].set)
            for loop in self.loops
            if loop.wake_after_commit
        ]
        channels: dict[str, list[asyncio.Event]] = {}
        for loop in self.loops:
            if loop.wake_on:
                channels.setdefault(loop.wake_on, []).append(self._wake[loop.name])
        if self.listen_dsn and channels:
            self._tasks.append(asyncio.create_task(self._listen(self.listen_dsn, channels)))

    async def _listen(self, dsn: str, channels: dict[str, list[asyncio.Event]]) -> None:
        def waker(events: list[asyncio.Event]) -> Callable[[str], None]:
            def wake(payload: str) -> None:
                for event in events:
                    event.set()

            return wake

        listener = Listener(dsn, {name: waker(events) for name, events in channels.items()})
        try:
            await listener.start()
        except Exception:
            log.warning("no LISTEN connection: loops run at their intervals only")
            return
        try:
            await self._stop.wait()
        finally:
            await listener.stop()

    async def stop(self, grace_seconds: float = STOP_GRACE_SECONDS) -> None:
        """Let each loop finish its tick, for `grace_seconds` at most; then cancel what still
        runs (a tick is safe to cut short: its transaction rolls back), naming it, so that a
        tick stuck on the database cannot keep the process from stopping."""
        for undo in self._undo:
            undo()
        self._undo = []
        self._stop.set()
        if self._tasks:
            _, stuck = await asyncio.wait(self._tasks, timeout=grace_seconds)
            if stuck:
                log.warning(
                    "stopping: cancelled %s, still running after %.0f s",
                    ", ".join(sorted(t.get_name() for t in stuck)),
                    grace_seconds,
                )
                for task in stuck:
                    task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def run_until(self, stop: asyncio.Event) -> None:
        self.start()
        await stop.wait()
        await self.stop()
