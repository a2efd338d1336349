"""A worker that only meters, for the metering crash test, on a clock of its own.

Run as `python -m tests.sessions.metering_child URL PROGRESS START STEP FIRST LAST BATCH`. Tick
`n` meters at START + n * STEP seconds (START in ISO 8601), for n from FIRST to LAST, in batches
of BATCH sessions. After each tick it appends the tick's number and a newline to PROGRESS, so the
parent knows where a restart resumes; the parent kills it with SIGKILL at random moments, most
of them in the middle of a batch's transaction.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import datetime, timedelta
from pathlib import Path

from gshare.kit.db import make_engine, make_sessionmaker
from gshare.kit.settings import Settings
from gshare.sessions import tasks


async def main(
    url: str, progress: Path, start: datetime, step: float, first: int, last: int
) -> None:
    engine = make_engine(url, pool_size=2)
    sessions = make_sessionmaker(engine)
    settings = Settings(_env_file=None)
    for tick in range(first, last + 1):
        await tasks.meter(sessions, settings, start + timedelta(seconds=tick * step))
        with progress.open("a") as out:
            out.write(f"{tick}\n")
    await engine.dispose()


if __name__ == "__main__":
    url, progress_file, start, step, first, last, batch = sys.argv[1:8]
    # Small batches give every tick several transactions for a kill to land between or inside.
    tasks.METERING_BATCH = int(batch)
    asyncio.run(
        main(
            url,
            Path(progress_file),
            datetime.fromisoformat(start),
            float(step),
            int(first),
            int(last),
        )
    )
