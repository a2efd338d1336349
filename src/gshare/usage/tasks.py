"""The usage rollup's worker tick."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.kit.db import run_in_transaction
from gshare.kit.settings import Settings
from gshare.usage import digests, service


async def roll_up(
    sessions: async_sessionmaker[AsyncSession], settings: Settings, now: datetime
) -> int:
    """Count every GPU allocation forward to `now` (less the settling delay), a batch per
    transaction; returns how many batches it took. Its cost follows the allocations live or
    not yet counted to their end, not the history."""
    batches, after = 0, uuid.UUID(int=0)
    while True:

        async def work(db: AsyncSession, after: uuid.UUID = after) -> uuid.UUID | None:
            return await service.roll_batch(db, now, settings, after)

        following = await run_in_transaction(sessions, work)
        batches += 1
        if following is None:
            return batches
        after = following


async def send_digests(sessions: async_sessionmaker[AsyncSession], now: datetime) -> int:
    """Last week's digests for every group that used GPUs, a batch per transaction."""
    total = 0
    while True:

        async def work(db: AsyncSession) -> int:
            return await digests.send_batch(db, now)

        count = await run_in_transaction(sessions, work)
        total += count
        if count < digests.DIGEST_BATCH:
            return total
