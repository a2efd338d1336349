"""Shapes of the audit API."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from gshare.kit.schemas import ResponseModel


class AuditEntryOut(ResponseModel):
    id: int
    at: datetime
    actor_id: uuid.UUID | None
    actor_email: str | None
    action: str
    target_type: str | None
    target_id: str | None
    org_id: uuid.UUID | None
    group_id: uuid.UUID | None
    outcome: Literal["allowed", "denied", "failed"]
    detail: dict[str, Any]


class AuditPage(ResponseModel):
    items: list[AuditEntryOut]
    next_cursor: str | None
