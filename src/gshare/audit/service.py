"""Recording and reading audit entries."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from gshare.audit.models import AuditEntry
from gshare.kit.errors import DurableWrite


@dataclass(frozen=True)
class AuditEvent:
    action: str
    outcome: str = "allowed"
    actor_id: uuid.UUID | None = None
    actor_email: str | None = None
    target_type: str | None = None
    target_id: str | None = None
    org_id: uuid.UUID | None = None
    group_id: uuid.UUID | None = None
    detail: dict[str, Any] = field(default_factory=dict)


async def record(db: AsyncSession, event: AuditEvent, *, now: datetime) -> None:
    db.add(
        AuditEntry(
            at=now,
            actor_id=event.actor_id,
            actor_email=event.actor_email,
            action=event.action,
            target_type=event.target_type,
            target_id=event.target_id,
            org_id=event.org_id,
            group_id=event.group_id,
            outcome=event.outcome,
            detail=event.detail,
        )
    )
    await db.flush()


def record_later(event: AuditEvent, *, now: datetime) -> DurableWrite:
    """An audit write that survives the failing request's rollback."""

    async def write(db: AsyncSession) -> None:
        await record(db, event, now=now)

    return write
