"""Reading a live-update stream over real HTTP, as a browser's EventSource would."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.events import outbox
from gshare.identity.dependencies import COOKIE

SENTINEL = "test.sentinel"


@dataclass(frozen=True)
class Message:
    id: int
    kind: str
    data: dict[str, Any]


class Stream:
    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._lines = response.aiter_lines()
        self.last_id = 0  # as a browser keeps it: id-only frames move it too

    async def _frame(self) -> dict[str, str] | None:
        fields: dict[str, str] = {}
        async for line in self._lines:
            if not line:
                if fields:
                    return fields
                continue
            if line.startswith(":"):
                continue  # a heartbeat
            name, _, value = line.partition(":")
            fields[name] = value[1:] if value.startswith(" ") else value
            if name == "id":
                self.last_id = int(fields["id"])
        return None

    async def next(self, timeout: float = 10) -> Message | None:
        """The next event, or None when the server ended the stream."""
        async with asyncio.timeout(timeout):
            while (fields := await self._frame()) is not None:
                if "event" in fields or "data" in fields:
                    return Message(
                        int(fields.get("id", "0")),
                        fields.get("event", "message"),
                        json.loads(fields.get("data", "{}")),
                    )
        return None

    async def reaches(self, last_id: int, timeout: float = 10) -> list[Message]:
        """Read until the stream's last event id is at least `last_id`; the events on the way."""
        seen: list[Message] = []
        async with asyncio.timeout(timeout):
            while self.last_id < last_id:
                fields = await self._frame()
                assert fields is not None, "the stream ended"
                if "event" in fields:
                    seen.append(Message(int(fields["id"]), fields["event"], {}))
        return seen

    async def until(self, kind: str, timeout: float = 10) -> list[Message]:
        """Every event up to and including the first of `kind`."""
        seen: list[Message] = []
        async with asyncio.timeout(timeout):
            while True:
                message = await self.next(timeout)
                assert message is not None, f"the stream ended before {kind}: {seen}"
                seen.append(message)
                if message.kind == kind:
                    return seen


def cookie_of(client: httpx.AsyncClient) -> str:
    return client.cookies[COOKIE]


@asynccontextmanager
async def open_stream(
    base: str, cookie: str, *, last_event_id: int | None = None
) -> AsyncIterator[Stream]:
    headers = {"Cookie": f"{COOKIE}={cookie}", "Accept": "text/event-stream"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = str(last_event_id)
    async with (
        httpx.AsyncClient(timeout=httpx.Timeout(30, read=60)) as http,
        http.stream("GET", f"{base}/api/v1/events", headers=headers) as response,
    ):
        assert response.status_code == 200, (await response.aread()).decode()
        yield Stream(response)


async def sentinel(sessions: async_sessionmaker[AsyncSession], *user_ids: uuid.UUID) -> None:
    """One private event for each user, committed now: a stream that has received its sentinel
    has received every earlier event it may see (events are numbered in commit order)."""
    async with sessions() as db, db.begin():
        await outbox.record_many(
            db, [outbox.NewEvent(SENTINEL, outbox.Audience.only(u)) for u in user_ids]
        )


async def caught_up(
    base: str, cookie: str, sessions: async_sessionmaker[AsyncSession], user_id: uuid.UUID
) -> int:
    """The id a stream of this user has reached once everything committed so far is numbered:
    a Last-Event-ID to reconnect from later."""
    async with open_stream(base, cookie) as stream:
        await sentinel(sessions, user_id)
        # Events committed before the stream opened may still be numbered after it did: they
        # come first, and the sentinel last.
        seen = await stream.until(SENTINEL)
    return seen[-1].id
