"""The edge middleware: client addresses behind proxies, and headers on every answer."""

from __future__ import annotations

import uuid
from ipaddress import IPv4Network, IPv6Network
from typing import Any

import httpx
import pytest

from gshare.api.middleware import RETRY_HEADER, UNKNOWN_CLIENT, RetryConflicts, client_address
from tests.builders import Builder

LOOPBACK = (IPv4Network("127.0.0.0/8"), IPv6Network("::1/128"))
PROXIES = (IPv4Network("10.0.0.0/8"), *LOOPBACK)


@pytest.mark.parametrize(
    ("peer", "forwarded_for", "expected"),
    [
        # Not behind a trusted proxy: the peer, whatever the header claims.
        ("203.0.113.7", ["198.51.100.1"], ("203.0.113.7", False)),
        ("2001:DB8::0:1", [], ("2001:db8::1", False)),
        ("::ffff:203.0.113.7", [], ("203.0.113.7", False)),
        ("fe80::1%" + "z" * 500, [], ("fe80::1", False)),
        ("x" * 500, ["198.51.100.1"], (UNKNOWN_CLIENT, False)),
        (None, [], (UNKNOWN_CLIENT, False)),
        # Behind trusted proxies: the right-most hop that is not one of them.
        ("127.0.0.1", ["198.51.100.1"], ("198.51.100.1", True)),
        ("127.0.0.1", ["192.0.2.9, 198.51.100.1, 10.0.0.3"], ("198.51.100.1", True)),
        ("127.0.0.1", ["192.0.2.9", "198.51.100.1"], ("198.51.100.1", True)),
        ("::1", ["[2001:db8::7]:4431"], ("2001:db8::7", True)),
        ("::1", ["198.51.100.1:8080"], ("198.51.100.1", True)),
        ("127.0.0.1", ["198.51.100.1, " + "y" * 500], (UNKNOWN_CLIENT, True)),
        ("127.0.0.1", ["", " , "], ("127.0.0.1", True)),
        ("127.0.0.1", ["10.0.0.2, 10.0.0.3"], ("10.0.0.2", True)),
    ],
)
def test_the_client_address_is_canonical_and_bounded(
    peer: str | None, forwarded_for: list[str], expected: tuple[str, bool]
) -> None:
    assert client_address(peer, forwarded_for, PROXIES) == expected
    assert len(client_address(peer, forwarded_for, PROXIES)[0]) <= 39


def test_no_proxy_is_trusted_when_none_is_configured() -> None:
    assert client_address("127.0.0.1", ["198.51.100.1"], ()) == ("127.0.0.1", False)


async def test_answers_about_a_caller_are_never_stored(build: Builder) -> None:
    owner = await build.user()
    mine = await build.interactive_session(owner, await build.cluster(), phase="Running")
    console = await build.signed_in(owner)
    link = (await console.post(f"/api/v1/sessions/{mine.id}/entry")).json()["url"]
    ingress = build.anonymous("10.0.0.5")
    admitted = await ingress.get(
        f"/internal/v1/session-access/{mine.id}", headers={"X-Original-URL": link}
    )
    # The access check takes the ticket: a 401 that sets the cookie.
    assert admitted.status_code == 401, admitted.text
    assert "set-cookie" in admitted.headers
    refused = await ingress.get(f"/internal/v1/session-access/{uuid.uuid4()}")
    report = await ingress.put(f"/internal/v1/clusters/{uuid.uuid4()}/inventory", json={})
    me = await console.get("/api/v1/me")
    for response in (admitted, refused, report, me):
        assert response.headers.get_list("cache-control") == ["no-store"], response.request.url
        assert response.headers["x-content-type-options"] == "nosniff"
    assert refused.status_code in (401, 403)
    assert report.status_code == 401


async def test_a_request_ended_by_a_deadlock_is_run_again_on_the_same_body() -> None:
    """The first run's answer is marked retryable (as the database error handler marks a
    deadlock): it is held back, the request runs again with the body it sent, and only the
    second run's answer reaches the caller, without the mark."""
    runs: list[bytes] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        message = await receive()
        runs.append(message.get("body", b""))
        headers = [(b"content-type", b"text/plain")]
        if len(runs) == 1:
            headers.append((RETRY_HEADER, b"1"))
        await send(
            {
                "type": "http.response.start",
                "status": 503 if len(runs) == 1 else 200,
                "headers": headers,
            }
        )
        await send({"type": "http.response.body", "body": b"busy" if len(runs) == 1 else b"done"})

    transport = httpx.ASGITransport(app=RetryConflicts(app))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        answer = await client.post("/x", content=b"the body")
    assert (answer.status_code, answer.text) == (200, "done")
    assert RETRY_HEADER.decode() not in answer.headers
    assert runs == [b"the body", b"the body"]
