"""Audit queries."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import (
    ColumnElement,
    CompoundSelect,
    Select,
    Subquery,
    and_,
    case,
    cast,
    false,
    func,
    or_,
    select,
)
from sqlalchemy.dialects.postgresql import UUID
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
    """Everything (super admin), or the entries of these organizations and groups (and of the
    groups `org_groups` yields: those of the organizations, entries filed with a group only
    included), and the account entries (sign-ins, sign-outs, password changes: no organization
    or group of their own) about the users whose id or email `user_keys` yields."""

    everything: bool
    org_ids: frozenset[uuid.UUID] = frozenset()
    group_ids: frozenset[uuid.UUID] = frozenset()
    user_keys: CompoundSelect[tuple[str]] | None = None
    org_groups: Select[uuid.UUID] | None = None


@dataclass(frozen=True)
class NameSources:
    """What the list joins to name actors and targets: `users` (id, name, email), `orgs` and
    `groups` (id, name). The endpoint passes identity's, so recording needs no other domain."""

    users: Subquery
    orgs: Subquery
    groups: Subquery


@dataclass(frozen=True)
class NamedEntry:
    """An entry with the current names of its actor and target; None where the row is gone
    (a deleted organization or group), the id names nothing (a failed sign-in's email), or
    the name sources leave it out (outside the reader's reach)."""

    entry: AuditEntry
    actor_name: str | None
    target_name: str | None
    target_email: str | None


# Newest first is the log's natural order; oldest first reads an incident forwards. Both page
# by the id alone, which grows with `at`, so either stays a keyset over the primary key.
SORTS = ("-at", "at")

_UUID_TEXT = "^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$"


def _target_uuid() -> ColumnElement[uuid.UUID | None]:
    """The target id as a UUID, or NULL: CASE keeps the cast from ever seeing an email."""
    return case(
        (AuditEntry.target_id.regexp_match(_UUID_TEXT), cast(AuditEntry.target_id, UUID)),
        else_=None,
    )


async def list_entries(
    db: AsyncSession,
    visibility: AuditVisibility,
    filters: AuditFilter,
    page: PageRequest,
    names: NameSources,
    sort: str = "-at",
) -> list[NamedEntry]:
    """One page of entries with their names, in one query: each name is an outer join on a
    primary key (or the unique email), so the cost does not grow with the page's rows."""
    conditions: list[ColumnElement[bool]] = []
    if not visibility.everything:
        reach: list[ColumnElement[bool]] = []
        if visibility.org_ids:
            reach.append(AuditEntry.org_id.in_(visibility.org_ids))
        if visibility.group_ids:
            reach.append(AuditEntry.group_id.in_(visibility.group_ids))
        if visibility.org_groups is not None:
            reach.append(AuditEntry.group_id.in_(visibility.org_groups))
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
    newest_first = sort != "at"
    after = page.after_sequence()
    if after is not None:
        conditions.append(AuditEntry.id < after if newest_first else AuditEntry.id > after)
    actor = names.users.alias("actor")
    target_user = names.users.alias("target_user")
    target = _target_uuid()
    query = (
        select(
            AuditEntry,
            actor.c.name,
            func.coalesce(target_user.c.name, names.orgs.c.name, names.groups.c.name),
            target_user.c.email,
        )
        .outerjoin(actor, actor.c.id == AuditEntry.actor_id)
        .outerjoin(
            target_user,
            and_(
                AuditEntry.target_type == "user",
                # A failed sign-in names its target by the email typed, stored lowercased.
                or_(
                    target_user.c.id == target,
                    func.lower(target_user.c.email) == AuditEntry.target_id,
                ),
            ),
        )
        .outerjoin(names.orgs, and_(AuditEntry.target_type == "org", names.orgs.c.id == target))
        .outerjoin(
            names.groups, and_(AuditEntry.target_type == "group", names.groups.c.id == target)
        )
        .where(*conditions)
        .order_by(AuditEntry.id.desc() if newest_first else AuditEntry.id.asc())
        .limit(page.limit + 1)
    )
    rows = (await db.execute(query)).all()
    return [NamedEntry(entry, actor_name, name, email) for entry, actor_name, name, email in rows]
