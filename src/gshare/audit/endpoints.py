"""The audit API: admins list entries within their scope."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Query

from gshare.audit.repository import AuditFilter, AuditVisibility, list_entries
from gshare.audit.schemas import AuditEntryOut, AuditPage
from gshare.identity.authz import require
from gshare.identity.dependencies import Ctx
from gshare.identity.permissions import Action
from gshare.kit.errors import BadRequest
from gshare.kit.pagination import page_of, page_request
from gshare.kit.schemas import NO_NUL
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
    since: datetime | None = None,
    until: datetime | None = None,
    limit: Annotated[int | None, Query(ge=1, le=200)] = None,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> AuditPage:
    require(ctx, Action.AUDIT_READ, target_type="audit")
    for value in (since, until):
        if value is not None and value.tzinfo is None:
            raise BadRequest("since and until need a time zone.", code="naive_datetime")
    actor = ctx.actor
    visibility = AuditVisibility(
        everything=actor.is_super_admin,
        org_ids=frozenset(actor.org_admin_of),
        group_ids=frozenset(actor.group_admin_of),
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
    rows = await list_entries(ctx.session, visibility, filters, page)
    items, nxt = page_of(rows, page, lambda e: (e.id,))
    return AuditPage(items=[AuditEntryOut.model_validate(e) for e in items], next_cursor=nxt)
