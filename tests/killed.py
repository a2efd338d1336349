"""Killing a worker with SIGKILL while it works, and starting it again, for the crash tests:
the worker is tests/worker_child.py, which records each tick it finishes."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path

from tests.eventually import eventually, eventually_sync
from tests.processes import clean_env

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Plan:
    """A worker on its own clock from `start`, `ticks` ticks of `step` seconds, running
    `work` (see worker_child.py) in batches of `batch`, killed `kills` times."""

    url: str
    folder: Path
    start: datetime
    step: float
    ticks: int
    batch: int
    work: str
    kills: int


def ticks_done(progress: Path) -> list[int]:
    return [int(line) for line in progress.read_text().split()]


def _reached(child: subprocess.Popen[bytes], progress: Path, errors: Path, target: int) -> bool:
    """Whether the worker has done `target` ticks; fails if it has died."""
    assert child.poll() is None, errors.read_text()[-2000:]
    return len(ticks_done(progress)) >= target


def _start(plan: Plan, first: int) -> subprocess.Popen[bytes]:
    args = [
        plan.url,
        str(plan.folder / "progress"),
        plan.start.isoformat(),
        str(plan.step),
        str(first),
        str(plan.ticks),
        str(plan.batch),
        plan.work,
    ]
    with (plan.folder / "errors").open("ab") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.worker_child", *args],
            cwd=ROOT,
            env=clean_env(PYTHONPATH=str(ROOT)),
            stderr=stderr,
        )


async def run_with_kills(
    plan: Plan,
    rng: random.Random,
    half_done: Callable[[], Awaitable[bool]],
    after_kill: Callable[[], Awaitable[None]],
) -> None:
    """Run the worker to its last tick, killing it `plan.kills` times: every other kill aimed
    at a moment `half_done` says a tick is half done, the others at random; `after_kill` runs
    while it is down. Each restart resumes at the tick after the last one recorded, so a tick
    that committed but was not recorded runs again."""
    progress, errors = plan.folder / "progress", plan.folder / "errors"
    progress.touch()
    child = _start(plan, 1)
    try:
        for kill in range(plan.kills):
            target = (kill + 1) * plan.ticks // (plan.kills + 2) + rng.randrange(3)
            eventually_sync(
                partial(_reached, child, progress, errors, target),
                "the worker to make progress",
                timeout=30,
                interval=0.01,
            )
            if kill % 2 == 0:
                await eventually(half_done, "a tick half done", timeout=30, interval=0.005)
            else:
                time.sleep(rng.uniform(0, 0.4))  # a random moment within the next tick or two
            child.send_signal(signal.SIGKILL)
            assert child.wait(10) == -signal.SIGKILL
            await after_kill()
            child = _start(plan, ticks_done(progress)[-1] + 1)
        assert child.wait(60) == 0, errors.read_text()[-2000:]
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert ticks_done(progress)[-1] == plan.ticks
