"""Queries on the sessions domain's tables: sessions and used entry tickets."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from gshare.sessions.models import InteractiveSession, UsedTicket


async def session_row(
    db: AsyncSession, session_id: uuid.UUID, *, lock: bool = False
) -> InteractiveSession | None:
    return await db.get(InteractiveSession, session_id, with_for_update=lock)


async def live_on_cluster(db: AsyncSession, cluster_id: uuid.UUID) -> int:
    return int(
        await db.scalar(
            select(func.count()).where(
                InteractiveSession.cluster_id == cluster_id, InteractiveSession.ended_at.is_(None)
            )
        )
        or 0
    )


async def ended_among(db: AsyncSession, ids: list[uuid.UUID]) -> set[uuid.UUID]:
    rows = await db.scalars(
        select(InteractiveSession.id).where(
            InteractiveSession.id.in_(ids), InteractiveSession.ended_at.is_not(None)
        )
    )
    return set(rows)


async def is_open_to(db: AsyncSession, session_id: uuid.UUID, owner_id: uuid.UUID) -> bool:
    """The session is live, meant to run, and belongs to `owner_id`."""
    found = await db.scalar(
        select(InteractiveSession.id).where(
            InteractiveSession.id == session_id,
            InteractiveSession.owner_id == owner_id,
            InteractiveSession.ended_at.is_(None),
            InteractiveSession.desired_state == "Running",
        )
    )
    return found is not None


async def use_ticket(db: AsyncSession, jti: str, expires_at: datetime | None) -> bool:
    """Record a ticket as used; False when it had been used before."""
    used = await db.execute(
        insert(UsedTicket)
        .values(jti=jti, expires_at=expires_at)
        .on_conflict_do_nothing()
        .returning(UsedTicket.jti)
    )
    return used.first() is not None


async def forget_tickets_before(db: AsyncSession, cutoff: datetime) -> None:
    await db.execute(delete(UsedTicket).where(UsedTicket.expires_at < cutoff))
