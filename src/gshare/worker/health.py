"""Recording each loop's ticks, and reading them back for the admins."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.kit.clock import Clock
from gshare.worker.models import WorkerLoop

# A loop that succeeds is recorded at most this often: the event relay ticks at every commit.
RECORD_EVERY = timedelta(seconds=10)


@dataclass
class Recorder:
    sessions: async_sessionmaker[AsyncSession]
    clock: Clock
    _last: dict[str, datetime] = field(default_factory=dict)

    async def ran(self, name: str, interval_seconds: float, error: str | None) -> None:
        """Record a tick of `name` that just ended (`error`: why it failed)."""
        at, last = self.clock.now(), self._last
        if error is None and name in last and at - last[name] < RECORD_EVERY:
            return
        last[name] = at
        values = {"name": name, "interval_seconds": interval_seconds, "last_run_at": at}
        if error is None:
            changes = {**values, "last_ok_at": at, "failures": 0}
        else:
            changes = {
                **values,
                "failures": WorkerLoop.failures + 1,
                "last_error": error[:2000],
            }
        statement = insert(WorkerLoop).values(
            **values,
            last_ok_at=at if error is None else None,
            failures=0 if error is None else 1,
            last_error=(error or "")[:2000],
        )
        statement = statement.on_conflict_do_update(index_elements=["name"], set_=changes)
        async with self.sessions() as db, db.begin():
            await db.execute(statement)


async def loops(db: AsyncSession) -> list[WorkerLoop]:
    return list(await db.scalars(select(WorkerLoop).order_by(WorkerLoop.name)))
