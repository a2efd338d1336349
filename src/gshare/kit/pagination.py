"""The one pagination shape: opaque keyset cursors over (sort key, id)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from gshare.kit.errors import BadRequest

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


@dataclass(frozen=True)
class PageRequest:
    limit: int = DEFAULT_LIMIT
    after: tuple[Any, ...] | None = None


def encode_cursor(key: tuple[Any, ...]) -> str:
    raw = json.dumps(list(key), separators=(",", ":"), default=str).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> tuple[Any, ...] | None:
    if not cursor:
        return None
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, json.JSONDecodeError) as exc:
        raise BadRequest("The cursor is not valid.", code="invalid_cursor") from exc
    if not isinstance(value, list) or not value:
        raise BadRequest("The cursor is not valid.", code="invalid_cursor")
    return tuple(value)


def page_request(limit: int | None, cursor: str | None) -> PageRequest:
    if limit is None:
        limit = DEFAULT_LIMIT
    if not 1 <= limit <= MAX_LIMIT:
        raise BadRequest(f"limit must be between 1 and {MAX_LIMIT}.", code="invalid_limit")
    return PageRequest(limit=limit, after=decode_cursor(cursor))


T = TypeVar("T")


def _created(row: Any) -> tuple[Any, ...]:
    return (row.created_at, row.id)


def page_of(
    rows: Sequence[T], page: PageRequest, key: Callable[[T], tuple[Any, ...]] = _created
) -> tuple[list[T], str | None]:
    """Trim the extra row a query fetched and turn the last kept row into the next cursor."""
    items = list(rows[: page.limit])
    if len(rows) <= page.limit:
        return items, None
    return items, encode_cursor(key(items[-1]))
