"""Users' notifications: stored, listed, marked read, and pushed over the live stream."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from gshare.events import outbox, repository
from gshare.events.models import Notification
from gshare.kit.errors import NotFound
from gshare.kit.ids import new_id
from gshare.kit.pagination import PageRequest

CREATED = "notification.created"
READ = "notifications.read"


async def notify_user(
    db: AsyncSession,
    user_id: uuid.UUID,
    kind: str,
    *,
    title: str,
    body: str,
    now: datetime,
    data: dict[str, Any] | None = None,
) -> uuid.UUID:
    """Store a notification for a user and announce it to their open streams, in the
    caller's transaction: a change that rolls back leaves no notification behind."""
    notification = Notification(
        id=new_id(),
        user_id=user_id,
        kind=kind,
        title=title[:200],
        body=body,
        data=data or {},
        created_at=now,
        read_at=None,
    )
    await repository.insert_notification(db, notification)
    await outbox.record(
        db,
        CREATED,
        outbox.Audience.only(user_id),
        {"id": str(notification.id), "kind": kind, "title": notification.title},
    )
    return notification.id


async def list_of(
    db: AsyncSession, user_id: uuid.UUID, page: PageRequest, *, unread_only: bool
) -> list[Notification]:
    return await repository.notifications_of(db, user_id, page, unread_only=unread_only)


async def unread(db: AsyncSession, user_id: uuid.UUID) -> int:
    return await repository.unread_count(db, user_id)


async def mark_read(
    db: AsyncSession, user_id: uuid.UUID, notification_id: uuid.UUID, now: datetime
) -> Notification:
    found, changed = await repository.mark_read(db, user_id, notification_id, now)
    if found is None:
        # Another user's notification is as absent as one that never existed.
        raise NotFound("No such notification.", code="notification_not_found")
    if changed:  # repeating a read records nothing: no caller writes events at will
        await outbox.record(db, READ, outbox.Audience.only(user_id))
    return found


async def mark_all_read(db: AsyncSession, user_id: uuid.UUID, now: datetime) -> int:
    changed = await repository.mark_all_read(db, user_id, now)
    if changed:
        await outbox.record(db, READ, outbox.Audience.only(user_id))
    return changed
