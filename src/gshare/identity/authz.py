"""The request context services work in, the one permission check, and allowed-action auditing."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from gshare.audit.service import AuditEvent, record, record_later
from gshare.identity.permissions import GLOBAL, Action, Actor, Scope, is_allowed
from gshare.kit.errors import Forbidden


@dataclass
class Context:
    """One request's view: its transaction, who acts, and the time it started."""

    db: AsyncSession
    actor: Actor
    now: datetime
    client: str | None = None


def _target_id(target: Any) -> str | None:
    return None if target is None else str(target)


def _scope_ids(scope: Scope) -> tuple[uuid.UUID | None, uuid.UUID | None]:
    if scope.org_id is not None or scope.group_id is not None:
        return scope.org_id, scope.group_id
    if scope.user is not None and len(scope.user.groups) == 1:
        group_id, org_id = next(iter(scope.user.groups.items()))
        return org_id, group_id
    return None, None


def require(
    ctx: Context,
    action: Action,
    scope: Scope = GLOBAL,
    *,
    target_type: str | None = None,
    target_id: Any = None,
) -> None:
    """Raise Forbidden, and audit the denial, unless the actor may do `action` in `scope`."""
    if is_allowed(ctx.actor, action, scope):
        return
    org_id, group_id = _scope_ids(scope)
    event = AuditEvent(
        action=action.value,
        outcome="denied",
        actor_id=ctx.actor.user_id,
        actor_email=ctx.actor.email,
        target_type=target_type,
        target_id=_target_id(target_id),
        org_id=org_id,
        group_id=group_id,
    )
    raise Forbidden(durable=[record_later(event, now=ctx.now)])


async def audit(
    ctx: Context,
    action: Action | str,
    *,
    target_type: str | None = None,
    target_id: Any = None,
    org_id: uuid.UUID | None = None,
    group_id: uuid.UUID | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    """Record an allowed state change in the request's own transaction."""
    await record(
        ctx.db,
        AuditEvent(
            action=str(action),
            actor_id=ctx.actor.user_id,
            actor_email=ctx.actor.email,
            target_type=target_type,
            target_id=_target_id(target_id),
            org_id=org_id,
            group_id=group_id,
            detail=detail or {},
        ),
        now=ctx.now,
    )
