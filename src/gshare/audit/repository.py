"""Audit queries."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, CompoundSelect, and_, false, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from gshare.audit.models import AuditEntry
from gshare.kit.pagination import PageRequest


@dataclass(frozen=True)
class AuditFilter:
    actor_id: uuid.UUID | None = None
    action: str | None = None
    outcome: str | None = None
    target_type: str | None = None
    target_id: str | None = None
    org_id: uuid.UUID | None = None
    group_id: uuid.UUID | None = None
    since: datetime | None = None
    until: datetime | None = None


@dataclass(frozen=True)
class AuditVisibility:
    """Everything (super admin), or the entries of these organizations and groups, and the
    account entries (sign-ins, sign-outs, password changes: no organization or group of their
    own) about the users whose id or email `user_keys` yields."""

    everything: bool
    org_ids: frozenset[uuid.UUID] = frozenset()
    group_ids: frozenset[uuid.UUID] = frozenset()
    user_keys: CompoundSelect[tuple[str]] | None = None


async def list_entries(
    db: AsyncSession, visibility: AuditVisibility, filters: AuditFilter, page: PageRequest
) -> Sequence[AuditEntry]:
    conditions: list[ColumnElement[bool]] = []
    if not visibility.everything:
        reach: list[ColumnElement[bool]] = []
        if visibility.org_ids:
            reach.append(AuditEntry.org_id.in_(visibility.org_ids))
        if visibility.group_ids:
            reach.append(AuditEntry.group_id.in_(visibility.group_ids))
        if visibility.user_keys is not None:
            # Only entries scoped to no organization or group: a user's entries scoped to
            # another organization stay with that organization's admins.
            reach.append(
                and_(
                    AuditEntry.org_id.is_(None),
                    AuditEntry.group_id.is_(None),
                    AuditEntry.target_type == "user",
                    AuditEntry.target_id.in_(visibility.user_keys),
                )
            )
        conditions.append(or_(*reach) if reach else false())
    for column, value in (
        (AuditEntry.actor_id, filters.actor_id),
        (AuditEntry.action, filters.action),
        (AuditEntry.outcome, filters.outcome),
        (AuditEntry.target_type, filters.target_type),
        (AuditEntry.target_id, filters.target_id),
        (AuditEntry.org_id, filters.org_id),
        (AuditEntry.group_id, filters.group_id),
    ):
        if value is not None:
            conditions.append(column == value)
    if filters.since is not None:
        conditions.append(AuditEntry.at >= filters.since)
    if filters.until is not None:
        conditions.append(AuditEntry.at < filters.until)
    after = page.after_sequence()
    if after is not None:
        conditions.append(AuditEntry.id < after)
    query = (
        select(AuditEntry).where(*conditions).order_by(AuditEntry.id.desc()).limit(page.limit + 1)
    )
    return (await db.scalars(query)).all()
