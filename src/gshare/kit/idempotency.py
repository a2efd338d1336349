"""Idempotency keys: a repeated mutating call returns the first result byte for byte.

The stored result is written in the same transaction as the call's effect, so either both
commit or neither does; a transaction-scoped advisory lock turns a concurrent duplicate into a
clear 409 instead of a second effect. A call that fails stores nothing and may be retried.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from fastapi import Header
from pydantic import BaseModel, WithJsonSchema
from sqlalchemy import DateTime, Integer, LargeBinary, String, delete, select, text
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column
from starlette.responses import Response

from gshare.kit.db import Base
from gshare.kit.errors import Conflict, Unprocessable

MAX_KEY_LENGTH = 200
# What the spec promises is taken: visible ASCII, spaces within (HTTP trims them at the ends).
# check_key takes any printable characters.
KEY_PATTERN = rf"^[\x21-\x7e]([\x20-\x7e]{{0,{MAX_KEY_LENGTH - 2}}}[\x21-\x7e])?$"

# The header a mutating route that a browser may retry takes.
IdempotencyKey = Annotated[
    # Checked by check_key, which says what is wrong (invalid_idempotency_key); the spec says
    # the same.
    Annotated[
        str,
        WithJsonSchema(
            {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH, "pattern": KEY_PATTERN}
        ),
    ]
    | None,
    Header(
        alias="Idempotency-Key",
        description="Repeating a call with the same key (1 to 200 printable characters) "
        "returns the first result unchanged.",
    ),
]


class IdempotencyRecord(Base):
    __tablename__ = "idempotency_records"

    actor_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    key: Mapped[str] = mapped_column(String(MAX_KEY_LENGTH), primary_key=True)
    fingerprint: Mapped[bytes] = mapped_column(LargeBinary(32), nullable=False)
    status_code: Mapped[int] = mapped_column(Integer, nullable=False)
    body: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)


@dataclass(frozen=True)
class StoredResult:
    status_code: int
    body: bytes


def fingerprint(operation: str, params: Any) -> bytes:
    """What the call asked for: the same key with other parameters is a client error."""
    canonical = json.dumps([operation, params], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).digest()


def _lock_id(actor_id: uuid.UUID, key: str) -> int:
    digest = hashlib.sha256(f"{actor_id}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def check_key(key: str) -> str:
    if not key or len(key) > MAX_KEY_LENGTH or not key.isprintable():
        raise Unprocessable(
            f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} printable characters.",
            code="invalid_idempotency_key",
        )
    return key


async def run_once(
    db: AsyncSession,
    *,
    actor_id: uuid.UUID,
    key: str,
    print_: bytes,
    now: datetime,
    work: Callable[[], Awaitable[StoredResult]],
) -> StoredResult:
    """Run `work` in the caller's transaction unless this key already has a result."""
    locked = await db.scalar(
        text("SELECT pg_try_advisory_xact_lock(:id)"), {"id": _lock_id(actor_id, key)}
    )
    if not locked:
        raise Conflict(
            "A request with this Idempotency-Key is still being processed.",
            code="idempotency_in_flight",
        )
    stored = await db.scalar(
        select(IdempotencyRecord).where(
            IdempotencyRecord.actor_id == actor_id, IdempotencyRecord.key == key
        )
    )
    if stored is not None:
        if stored.fingerprint != print_:
            raise Unprocessable(
                "This Idempotency-Key was used for a different request.",
                code="idempotency_key_reused",
            )
        return StoredResult(stored.status_code, stored.body)
    result = await work()
    db.add(
        IdempotencyRecord(
            actor_id=actor_id,
            key=key,
            fingerprint=print_,
            status_code=result.status_code,
            body=result.body,
            created_at=now,
        )
    )
    await db.flush()
    return result


async def forget_before(db: AsyncSession, cutoff: datetime) -> int:
    """Drop stored results older than `cutoff`; a key is honoured for that long."""
    result = await db.execute(
        delete(IdempotencyRecord).where(IdempotencyRecord.created_at < cutoff)
    )
    return int(getattr(result, "rowcount", 0) or 0)


async def respond_once(
    db: AsyncSession,
    *,
    actor_id: uuid.UUID,
    key: str | None,
    operation: str,
    params: Any,
    now: datetime,
    status_code: int,
    produce: Callable[[], Awaitable[BaseModel | None]],
) -> Response:
    """An endpoint's JSON response (or, when `produce` gives None, an empty one), produced once
    per Idempotency-Key (or every time without)."""

    async def work() -> StoredResult:
        model = await produce()
        return StoredResult(status_code, b"" if model is None else model.model_dump_json().encode())

    if key is None:
        result = await work()
    else:
        result = await run_once(
            db,
            actor_id=actor_id,
            key=check_key(key),
            print_=fingerprint(operation, params),
            now=now,
            work=work,
        )
    if not result.body:
        return Response(status_code=result.status_code)
    return Response(result.body, status_code=result.status_code, media_type="application/json")
