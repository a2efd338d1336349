"""The one pagination shape: opaque keyset cursors over (sort key, id)."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from gshare.kit.datetimes import utc_instant
from gshare.kit.errors import BadRequest

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


BIGINT_MAX = 2**63 - 1


def _bad_cursor() -> BadRequest:
    return BadRequest("The cursor is not valid.", code="invalid_cursor")


@dataclass(frozen=True)
class PageRequest:
    limit: int = DEFAULT_LIMIT
    after: tuple[Any, ...] | None = None

    # A cursor comes back from the client, so its values are checked like any other input.

    def after_sequence(self) -> int | None:
        """The position after a row numbered by a sequence (a positive bigint)."""
        if self.after is None:
            return None
        value = self.after[0]
        if len(self.after) != 1 or type(value) is not int or not 1 <= value <= BIGINT_MAX:
            raise _bad_cursor()
        return value

    def after_text(self) -> str | None:
        """The position after a row sorted by a unique name."""
        if self.after is None:
            return None
        if len(self.after) != 1 or not isinstance(self.after[0], str) or len(self.after[0]) > 500:
            raise _bad_cursor()
        return self.after[0]

    def after_time_and_id(self) -> tuple[datetime, uuid.UUID] | None:
        """The position after a row sorted by (a time, its id)."""
        if self.after is None:
            return None
        if len(self.after) != 2 or not all(isinstance(v, str) for v in self.after):
            raise _bad_cursor()
        try:
            # The same window as a datetime input: a time PostgreSQL cannot take is not a 500.
            at = utc_instant(datetime.fromisoformat(self.after[0]))
            ident = uuid.UUID(self.after[1])
        except ValueError:
            raise _bad_cursor() from None
        return at, ident


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
    # A NUL byte in a key could not be compared with text in PostgreSQL.
    if (
        not isinstance(value, list)
        or not value
        or any(isinstance(v, str) and "\x00" in v for v in value)
    ):
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
