"""Shapes of the notifications API."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from gshare.kit.schemas import ResponseModel


class NotificationOut(ResponseModel):
    id: uuid.UUID
    kind: str
    title: str
    body: str
    data: dict[str, Any]
    created_at: datetime
    read_at: datetime | None


class NotificationPage(ResponseModel):
    items: list[NotificationOut]
    next_cursor: str | None


class UnreadOut(ResponseModel):
    unread: int
