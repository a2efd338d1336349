"""Identifiers: every id GShare issues is a random UUID."""

from __future__ import annotations

import uuid


def new_id() -> uuid.UUID:
    return uuid.uuid4()
