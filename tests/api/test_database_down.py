"""When PostgreSQL goes away (a restart, a failover) requests answer 503 `database_down` with
Retry-After, not 500, and the next request after it is back works on a fresh connection."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import asyncpg
import pytest
from fastapi import FastAPI, Request
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from gshare.kit.db import unreachable
from tests.builders import Builder


async def _end_every_other_connection(engine: AsyncEngine) -> int:
    """What a server restart does to the app's pooled connections: each is ended by the server
    (SQLSTATE 57P01 on its next use)."""
    async with engine.connect() as conn:
        ended = await conn.scalar(
            text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        )
    return int(ended or 0)


async def test_requests_after_the_server_ended_every_connection_answer_503_or_work(
    build: Builder, engine: AsyncEngine
) -> None:
    member = await build.signed_in(await build.user("Ada"))
    assert (await member.get("/api/v1/sessions")).status_code == 200  # the pool holds one now
    assert await _end_every_other_connection(engine) >= 1
    answers = [await member.get("/api/v1/sessions") for _ in range(12)]
    codes = [a.status_code for a in answers]
    # Which request meets a dead connection first (one of these, or the events relay) is a
    # matter of timing; none of them may answer 500, and the pool recovers.
    assert set(codes) <= {200, 503}, codes
    for answer in answers:
        if answer.status_code == 503:
            assert answer.json()["error"]["code"] == "database_down"
            assert answer.headers["retry-after"] == "2"
    assert codes[-1] == 200, codes


async def test_the_error_of_a_connection_the_server_ended_is_answered_503_database_down(
    app: FastAPI, engine: AsyncEngine
) -> None:
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/api/v1/sessions",
        "query_string": b"",
        "headers": [],
        "scheme": "http",
        "server": ("testserver", 80),
    }
    async with engine.connect() as doomed:
        pid = await doomed.scalar(text("SELECT pg_backend_pid()"))
        async with engine.connect() as other:
            await other.scalar(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        with pytest.raises(DBAPIError) as raised:
            await doomed.scalar(text("SELECT 1"))
        await doomed.invalidate()
    assert unreachable(raised.value), repr(raised.value)
    answered = app.exception_handlers[DBAPIError](Request(scope), raised.value)
    answer = await answered if inspect.isawaitable(answered) else answered
    assert answer.status_code == 503
    assert json.loads(bytes(answer.body))["error"]["code"] == "database_down"
    assert answer.headers["retry-after"] == "2"


async def test_a_statement_the_database_refuses_is_not_taken_for_an_unreachable_server(
    engine: AsyncEngine,
) -> None:
    async with engine.connect() as conn:
        with pytest.raises(DBAPIError) as raised:
            await conn.execute(text("SELECT * FROM no_such_table"))
    assert not unreachable(raised.value)


async def test_a_socket_error_opening_a_connection_counts_as_unreachable_and_no_other(
    tmp_path: Path,
) -> None:
    """asyncpg raises a plain OSError when the server's socket is gone (during a restart), and
    SQLAlchemy passes it on unwrapped; an OSError of anything else is not the database's."""
    with pytest.raises(OSError) as connecting:
        await asyncpg.connect(host=str(tmp_path), user="postgres", database="gshare", timeout=5)
    assert unreachable(connecting.value)
    with pytest.raises(OSError) as reading:
        (tmp_path / "missing").read_text()
    assert not unreachable(reading.value)
