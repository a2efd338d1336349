"""A worker that runs only some ticks, for the crash tests, on a clock of its own.

Run as `python -m tests.worker_child URL PROGRESS START STEP FIRST LAST BATCH TICKS`. Tick `n`
runs at START + n * STEP seconds (START in ISO 8601), for n from FIRST to LAST, in batches of
BATCH; TICKS says which, comma-separated and in order: `meter` (metering) and `rollup` (the
usage rollup). After each tick it appends the tick's number and a newline to PROGRESS, so the
parent knows where a restart resumes; the parent kills it with SIGKILL at random moments, some
of them in the middle of a batch's transaction (see killed.py).
"""

from __future__ import annotations

import asyncio
import sys
from datetime import datetime, timedelta
from pathlib import Path

from gshare.kit.db import make_engine, make_sessionmaker
from gshare.kit.settings import Settings
from gshare.sessions import tasks
from gshare.usage import service as usage_service
from gshare.usage import tasks as usage_tasks


async def main(
    url: str, progress: Path, start: datetime, step: float, first: int, last: int, ticks: list[str]
) -> None:
    engine = make_engine(url, pool_size=2)
    sessions = make_sessionmaker(engine)
    settings = Settings(_env_file=None)
    for tick in range(first, last + 1):
        now = start + timedelta(seconds=tick * step)
        for name in ticks:
            if name == "meter":
                await tasks.meter(sessions, settings, now)
            elif name == "rollup":
                await usage_tasks.roll_up(sessions, settings, now)
            else:
                raise SystemExit(f"unknown tick {name!r}")
        with progress.open("a") as out:
            out.write(f"{tick}\n")
    await engine.dispose()


if __name__ == "__main__":
    url, progress_file, start, step, first, last, batch, ticks = sys.argv[1:9]
    # Small batches give every tick several transactions for a kill to land between or inside.
    tasks.METERING_BATCH = usage_service.ROLLUP_BATCH = int(batch)
    asyncio.run(
        main(
            url,
            Path(progress_file),
            datetime.fromisoformat(start),
            float(step),
            int(first),
            int(last),
            ticks.split(","),
        )
    )
