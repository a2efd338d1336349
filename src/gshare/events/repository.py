"""Queries over the events and notifications tables."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import func, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from gshare.events.models import Notification
from gshare.kit.pagination import PageRequest


async def insert_notification(db: AsyncSession, notification: Notification) -> None:
    db.add(notification)
    await db.flush()


async def notifications_of(
    db: AsyncSession, user_id: uuid.UUID, page: PageRequest, *, unread_only: bool
) -> list[Notification]:
    """Newest first, keyset-paged by (created_at, id)."""
    query = select(Notification).where(Notification.user_id == user_id)
    if unread_only:
        query = query.where(Notification.read_at.is_(None))
    after = page.after_time_and_id()
    if after is not None:
        at, ident = after
        query = query.where(
            (Notification.created_at < at)
            | ((Notification.created_at == at) & (Notification.id < ident))
        )
    query = query.order_by(Notification.created_at.desc(), Notification.id.desc())
    return list((await db.scalars(query.limit(page.limit + 1))).all())


async def unread_count(db: AsyncSession, user_id: uuid.UUID) -> int:
    query = select(func.count()).where(
        Notification.user_id == user_id, Notification.read_at.is_(None)
    )
    return (await db.execute(query)).scalar_one()


async def mark_read(
    db: AsyncSession, user_id: uuid.UUID, notification_id: uuid.UUID, now: datetime
) -> tuple[Notification | None, bool]:
    """Mark one of the user's notifications read; returns it, and whether this call changed
    it (reading it again changes nothing)."""
    changed = await db.execute(
        update(Notification)
        .where(
            Notification.id == notification_id,
            Notification.user_id == user_id,
            Notification.read_at.is_(None),
        )
        .values(read_at=now)
    )
    found = await db.scalar(
        select(Notification)
        .where(Notification.id == notification_id, Notification.user_id == user_id)
        .execution_options(populate_existing=True)
    )
    return found, bool(changed.rowcount)  # type: ignore[attr-defined]


async def mark_all_read(db: AsyncSession, user_id: uuid.UUID, now: datetime) -> int:
    result = await db.execute(
        update(Notification)
        .where(Notification.user_id == user_id, Notification.read_at.is_(None))
        .values(read_at=now)
    )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


# Oldest first along the primary key: no index on created_at to slow every insert.
_PRUNE = text(
    "DELETE FROM events WHERE id IN (SELECT id FROM events WHERE seq IS NOT NULL "
    "AND created_at < :before ORDER BY id LIMIT 10000)"
)


async def prune_events(db: AsyncSession, before: datetime) -> int:
    """Forget numbered events recorded before `before` (in bounded batches)."""
    return int((await db.execute(_PRUNE, {"before": before})).rowcount or 0)  # type: ignore[attr-defined]
