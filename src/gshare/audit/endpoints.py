"""The audit API: admins list entries within their scope."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from fastapi import APIRouter, Query

from gshare.audit.repository import AuditFilter, AuditVisibility, list_entries
from gshare.audit.schemas import AuditEntryOut, AuditPage
from gshare.identity import service as identity
from gshare.identity.authz import require
from gshare.identity.dependencies import Ctx
from gshare.identity.permissions import Action
from gshare.kit.pagination import page_of, page_request
from gshare.kit.schemas import NO_NUL, UtcDatetime
from gshare.kit.web import declare

router = APIRouter(prefix="/api/v1")


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
    limit: Annotated[int | None, Query(ge=1, le=200)] = None,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> AuditPage:
    require(ctx, Action.AUDIT_READ, target_type="audit")
    actor = ctx.actor
    org_ids, group_ids = frozenset(actor.org_admin_of), frozenset(actor.group_admin_of)
    visibility = AuditVisibility(
        everything=actor.is_super_admin,
        org_ids=org_ids,
        group_ids=group_ids,
        user_keys=None if actor.is_super_admin else identity.user_keys_reached(org_ids, group_ids),
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
    rows = await list_entries(ctx.db, visibility, filters, page)
    items, nxt = page_of(rows, page, lambda e: (e.id,))
    return AuditPage(items=[AuditEntryOut.model_validate(e) for e in items], next_cursor=nxt)
