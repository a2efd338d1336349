"""Cursor encoding."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gshare.kit.errors import BadRequest
from gshare.kit.pagination import decode_cursor, encode_cursor, page_request


@given(st.integers(), st.text(max_size=30).filter(lambda w: "\x00" not in w))
def test_cursors_round_trip(number: int, word: str) -> None:
    assert decode_cursor(encode_cursor((number, word))) == (number, word)


def test_datetimes_and_ids_encode_as_text() -> None:
    at, ident = datetime(2026, 1, 2, 3, 4, tzinfo=UTC), uuid.uuid4()
    raw = decode_cursor(encode_cursor((at, ident)))
    assert raw is not None
    assert datetime.fromisoformat(raw[0]) == at
    assert uuid.UUID(raw[1]) == ident


# Not base64, not JSON, not a list, and a key with a NUL byte (which PostgreSQL cannot compare).
@pytest.mark.parametrize("cursor", ["%%%", "bm90IGpzb24", "e30", encode_cursor(("a\x00b", 1))])
def test_garbage_cursors_are_a_clear_error(cursor: str) -> None:
    with pytest.raises(BadRequest) as info:
        decode_cursor(cursor)
    assert info.value.code == "invalid_cursor"


def test_limits_are_bounded() -> None:
    assert page_request(None, None).limit == 50
    with pytest.raises(BadRequest):
        page_request(0, None)
    with pytest.raises(BadRequest):
        page_request(201, None)
