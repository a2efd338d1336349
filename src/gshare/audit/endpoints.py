"""The audit API: admins list entries within their scope."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from fastapi import APIRouter, Query

from gshare.audit.repository import (
    AuditFilter,
    AuditVisibility,
    NamedEntry,
    NameSources,
    list_entries,
)
from gshare.audit.schemas import AuditEntryOut, AuditPage
from gshare.identity import service as identity
from gshare.identity.authz import require
from gshare.identity.dependencies import Ctx
from gshare.identity.names import name_tables
from gshare.identity.permissions import Action
from gshare.kit.pagination import page_of, page_request
from gshare.kit.schemas import NO_NUL, UtcDatetime
from gshare.kit.web import Cursor, declare

router = APIRouter(prefix="/api/v1")


def _entry_out(row: NamedEntry) -> AuditEntryOut:
    e = row.entry
    return AuditEntryOut(
        id=e.id,
        at=e.at,
        actor_id=e.actor_id,
        actor_email=e.actor_email,
        actor_name=row.actor_name,
        action=e.action,
        target_type=e.target_type,
        target_id=e.target_id,
        target_name=row.target_name,
        target_email=row.target_email,
        org_id=e.org_id,
        group_id=e.group_id,
        outcome=e.outcome,
        detail=e.detail,
    )


@router.get("/audit", response_model=AuditPage, **declare(Action.AUDIT_READ, 400))
async def list_audit(
    ctx: Ctx,
    actor_id: uuid.UUID | None = None,
    action: Annotated[str | None, Query(max_length=80, pattern=NO_NUL)] = None,
    outcome: Literal["allowed", "denied", "failed"] | None = None,
    target_type: Annotated[str | None, Query(max_length=40, pattern=NO_NUL)] = None,
    target_id: Annotated[str | None, Query(max_length=320, pattern=NO_NUL)] = None,
    org_id: uuid.UUID | None = None,
    group_id: uuid.UUID | None = None,
    since: UtcDatetime | None = None,
    until: UtcDatetime | None = None,
    sort: Annotated[
        Literal["-at", "at"], Query(description="Newest first (-at, the default) or oldest first.")
    ] = "-at",
    limit: Annotated[int | None, Query(ge=1, le=200)] = None,
    cursor: Cursor = None,
) -> AuditPage:
    require(ctx, Action.AUDIT_READ, target_type="audit")
    actor = ctx.actor
    org_ids, group_ids = frozenset(actor.org_admin_of), frozenset(actor.group_admin_of)
    visibility = AuditVisibility(
        everything=actor.is_super_admin,
        org_ids=org_ids,
        group_ids=group_ids,
        user_keys=None if actor.is_super_admin else identity.user_keys_reached(org_ids, group_ids),
        org_groups=identity.groups_of_orgs(org_ids) if org_ids else None,
    )
    filters = AuditFilter(
        actor_id=actor_id,
        action=action,
        outcome=outcome,
        target_type=target_type,
        target_id=target_id,
        org_id=org_id,
        group_id=group_id,
        since=since,
        until=until,
    )
    page = page_request(limit, cursor)
    names = name_tables(actor)
    sources = NameSources(users=names.users, orgs=names.orgs, groups=names.groups)
    rows = await list_entries(ctx.db, visibility, filters, page, sources, sort)
    items, nxt = page_of(rows, page, lambda r: (r.entry.id,))
    return AuditPage(items=[_entry_out(r) for r in items], next_cursor=nxt)
