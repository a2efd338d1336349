"""The relay: numbers committed events in the order they became visible, then notifies.

Rows are numbered under the lock of the one `event_relay` row, so relays in several processes
take turns and a batch commits before the next is numbered. A reader that sees number n has
therefore seen every number below it: numbers are dense, and a reader can tell a gap (events
pruned while it was away) from quiet. One NOTIFY per batch carries only the last number.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.kit.db import run_in_transaction

EVENTS_CHANNEL = "gshare_events"
BATCH = 1000

_LOCK = text("SELECT last_seq FROM event_relay WHERE id = 1 FOR UPDATE")
_NUMBER = text(
    "WITH batch AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM events "
    "WHERE seq IS NULL ORDER BY id LIMIT :limit) "
    "UPDATE events AS e SET seq = :last + batch.n FROM batch WHERE e.id = batch.id "
    "RETURNING e.seq"
)
_STORE = text("UPDATE event_relay SET last_seq = :last WHERE id = 1")
_NOTIFY = text("SELECT pg_notify(:channel, :payload)")


async def number_batch(db: AsyncSession, limit: int = BATCH) -> int:
    """Number up to `limit` committed, unnumbered events; returns how many."""
    last = (await db.execute(_LOCK)).scalar_one()
    # A new statement, so its snapshot includes whatever the previous lock holder committed.
    numbered = (await db.execute(_NUMBER, {"limit": limit, "last": last})).scalars().all()
    if not numbered:
        return 0
    last += len(numbered)
    await db.execute(_STORE, {"last": last})
    await db.execute(_NOTIFY, {"channel": EVENTS_CHANNEL, "payload": str(last)})
    return len(numbered)


async def relay_pending(sessions: async_sessionmaker[AsyncSession]) -> int:
    """Number every event committed so far, batch after batch; returns how many."""
    total = 0
    while True:
        count = await run_in_transaction(sessions, number_batch)
        total += count
        if count < BATCH:
            return total
