"""The worker's loops: several workers at once refill each wallet exactly once."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys

from prometheus_client import REGISTRY
from sqlalchemy import func, select

from gshare.credits.amounts import MICRO
from gshare.credits.models import CreditRefill
from gshare.kit.clock import FrozenClock
from gshare.kit.settings import Settings
from gshare.worker.loops import Loop, Worker, worker_loops
from tests.credits.builders import assert_ledger_clean, funded_wallets, grants
from tests.eventually import eventually
from tests.processes import clean_env


async def _with_grants(sessions, clock: FrozenClock):
    w = await funded_wallets(
        sessions, clock.now(), users=2, org_credits=0, group_credits=0, user_credits=0
    )
    await grants(sessions, w, org=100, group=40, user=10)
    return w


async def _refills(sessions) -> int:
    async with sessions() as db:
        return int(await db.scalar(select(func.count()).select_from(CreditRefill)) or 0)


async def _refilled(sessions, count: int) -> bool:
    return await _refills(sessions) >= count


def _refill_ticks() -> float:
    """Ticks of the refill loop in this process, over every worker in it."""
    runs = REGISTRY.get_sample_value("gshare_worker_loop_runs_total", {"loop": "monthly refill"})
    return runs or 0.0


async def test_two_workers_refill_each_wallet_once(sessions, clock: FrozenClock) -> None:
    await _with_grants(sessions, clock)
    settings = Settings(_env_file=None, refill_interval_seconds=0.01)  # type: ignore[call-arg]
    workers = [Worker(worker_loops(settings, sessions, clock)) for _ in range(2)]
    for worker in workers:
        worker.start()
    await eventually(lambda: _refilled(sessions, 4), "a refill of each wallet", interval=0.02)
    # More ticks of both workers in the same month change nothing.
    ticks = _refill_ticks()
    await eventually(lambda: _refill_ticks() >= ticks + 4, "four more refill ticks", interval=0.02)
    for worker in workers:
        await worker.stop()
    assert await _refills(sessions) == 4
    report = await assert_ledger_clean(sessions)
    assert report.minted == 100 * MICRO


async def test_the_worker_process_refills_and_stops_on_sigterm(
    sessions, clock: FrozenClock, database_url: str, tmp_path
) -> None:
    await _with_grants(sessions, clock)
    env = clean_env()
    env |= {"GSHARE_DATABASE_URL": database_url, "GSHARE_REFILL_INTERVAL_SECONDS": "0.2"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gshare", "worker"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:

        async def refilled() -> bool:
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            return await _refilled(sessions, 4)

        await eventually(refilled, "the worker process to refill each wallet", timeout=30)
        assert await _refills(sessions) == 4
    finally:
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, output
    assert (
        "worker running: event relay, session apply, metering, idle reaping, session "
        "reconcile, usage rollup, weekly usage digests, orphan resources, admission queue, "
        "fair-share usage, monthly refill, wallet alerts, housekeeping, operator tokens"
    ) in output


async def test_stopping_cuts_short_a_tick_that_does_not_end(caplog) -> None:
    """A tick stuck (on the database, say) cannot keep the worker from stopping: after the
    grace it is cancelled, and the log names it."""
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def stuck() -> None:
        started.set()
        try:
            await asyncio.Event().wait()  # never set
        except asyncio.CancelledError:
            cancelled.set()
            raise

    worker = Worker([Loop("stuck loop", 60, stuck)])
    worker.start()
    await asyncio.wait_for(started.wait(), 5)
    await asyncio.wait_for(worker.stop(grace_seconds=0.05), 5)
    assert cancelled.is_set()
    assert "cancelled stuck loop" in caplog.text
