"""Shapes of the audit API."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from gshare.kit.schemas import ResponseModel


class AuditEntryOut(ResponseModel):
    """An entry as the log shows it. `actor_email` is kept from when it happened (for a failed
    sign-in: the email typed, signed in or not); `actor_name`, `target_name` and `target_email`
    are today's names, None where the id names nothing (any more) or nothing the reader may
    see."""

    id: int
    at: datetime
    actor_id: uuid.UUID | None
    actor_email: str | None
    actor_name: str | None
    action: str
    target_type: str | None
    target_id: str | None
    target_name: str | None
    target_email: str | None
    org_id: uuid.UUID | None
    group_id: uuid.UUID | None
    outcome: Literal["allowed", "denied", "failed"]
    detail: dict[str, Any]


class AuditPage(ResponseModel):
    items: list[AuditEntryOut]
    next_cursor: str | None
