"""The request's transaction commits before the response leaves."""

from __future__ import annotations

import json

from fastapi import FastAPI
from sqlalchemy import func, select

from gshare.identity.models import Organization
from tests.builders import Builder


async def test_a_change_is_committed_before_its_response_is_sent(
    build: Builder, app: FastAPI, sessions
) -> None:
    root = await build.user(super_admin=True)
    client = await build.signed_in(root)
    token = client.headers["X-CSRF-Token"]
    cookie = client.cookies.get("gshare_session")
    seen_at_response: list[int] = []

    async def receive() -> dict:
        return {
            "type": "http.request",
            "body": json.dumps({"name": "Optics"}).encode(),
            "more_body": False,
        }

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            # At the moment the status line leaves, another connection must see the row.
            async with sessions() as db:
                seen_at_response.append(
                    await db.scalar(select(func.count()).select_from(Organization)) or 0
                )

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/api/v1/orgs",
        "raw_path": b"/api/v1/orgs",
        "root_path": "",
        "query_string": b"",
        "client": ("203.0.113.9", 1),
        "server": ("testserver", 80),
        "headers": [
            (b"host", b"testserver"),
            (b"content-type", b"application/json"),
            (b"cookie", f"gshare_session={cookie}".encode()),
            (b"x-csrf-token", token.encode()),
        ],
    }
    await app(scope, receive, send)
    assert seen_at_response == [1]
