"""ASGI middleware: the client's address and scheme behind trusted proxies, refusing request
bodies over 1 MiB, security headers, timing requests for the metrics, and running a request
again when PostgreSQL broke a deadlock it was part of."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Iterable
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address
from typing import Any

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gshare.kit import metrics

MAX_BODY = 1024 * 1024

# What stands for an address that does not parse: fixed, so garbage never reaches a column or
# the audit log, and every such caller shares one throttling bucket instead of escaping it.
UNKNOWN_CLIENT = "unknown"

Network = IPv4Network | IPv6Network


def _parse(text: str) -> IPv4Address | IPv6Address | None:
    """An address from a peer or an X-Forwarded-For hop (`ip`, `ip:port`, `[ip6]:port`)."""
    text = text.strip()
    if text.startswith("["):
        text = text[1 : text.find("]")] if "]" in text else ""
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    try:
        address = ip_address(text)
    except ValueError:
        return None
    if isinstance(address, IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        # A zone index is caller text of any length and names no other host.
        return IPv6Address(int(address))
    return address


def _trusted(address: IPv4Address | IPv6Address | None, proxies: Iterable[Network]) -> bool:
    return address is not None and any(address in network for network in proxies)


def client_address(
    peer: str | None, forwarded_for: list[str], proxies: tuple[Network, ...]
) -> tuple[str, bool]:
    """The client's address as GShare records it, and whether the peer is a trusted proxy.

    X-Forwarded-For is believed only from a trusted peer, and then only up to the right-most
    hop that is not itself a trusted proxy: every hop left of it was written by the client.
    The answer is always a canonical address (at most 39 characters) or UNKNOWN_CLIENT.
    """
    direct = _parse(peer) if peer is not None else None
    if not _trusted(direct, proxies):
        return (str(direct) if direct else UNKNOWN_CLIENT), False
    hops = [hop for value in forwarded_for for hop in value.split(",") if hop.strip()]
    chosen = direct
    for hop in reversed(hops):
        chosen = _parse(hop)
        if not _trusted(chosen, proxies):
            break
    return (str(chosen) if chosen else UNKNOWN_CLIENT), True


class ClientAddress:
    """Sets the scope's client to the normalized client address and, behind a trusted proxy,
    its scheme from X-Forwarded-Proto. The one place a client address is derived: everything
    downstream (throttling, login sessions, the audit log) reads `request.client`."""

    def __init__(self, app: ASGIApp, trusted_proxies: tuple[Network, ...]) -> None:
        self.app = app
        self.trusted_proxies = trusted_proxies

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        peer = scope.get("client")
        forwarded_for: list[str] = []
        forwarded_proto: str | None = None
        for name, value in scope.get("headers", []):
            if name == b"x-forwarded-for":
                forwarded_for.append(value.decode("latin-1"))
            elif name == b"x-forwarded-proto":
                forwarded_proto = value.decode("latin-1")
        host, behind_proxy = client_address(
            peer[0] if peer else None, forwarded_for, self.trusted_proxies
        )
        forwarded = behind_proxy and bool(forwarded_for)
        scope = dict(scope)
        scope["client"] = (host, 0 if forwarded or not peer else peer[1])
        if behind_proxy and forwarded_proto is not None:
            proto = forwarded_proto.split(",")[-1].strip().lower()
            if proto in ("http", "https"):
                scope["scheme"] = proto if scope["type"] == "http" else proto.replace("http", "ws")
        await self.app(scope, receive, send)


async def _reply_413(send: Send) -> None:
    body = json.dumps(
        {
            "error": {
                "code": "payload_too_large",
                "message": "The request body is larger than 1 MiB.",
            }
        },
        separators=(",", ":"),  # as every other error body is written
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", b"application/json"), (b"connection", b"close")],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """Checks Content-Length up front and counts streamed bytes for chunked bodies."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    too_large = int(value) > self.limit
                except ValueError:
                    too_large = True
                if too_large:
                    await _reply_413(send)
                    return
        seen = 0

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    # Raised while the endpoint reads its body; the error handler answers 413.
                    raise HTTPException(413, "The request body is larger than 1 MiB.")
            return message

        await self.app(scope, limited_receive, send)


SECURITY_HEADERS: list[tuple[bytes, bytes]] = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
]


# Answers under these prefixes are about a caller (their data, a cookie, who they are): no
# browser or proxy may keep them, whatever the route set.
NO_STORE_PREFIXES = ("/api", "/internal")


def _no_store(path: str) -> bool:
    return any(path == prefix or path.startswith(prefix + "/") for prefix in NO_STORE_PREFIXES)


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        no_store = _no_store(scope["path"])

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers: list[Any] = list(message.get("headers", []))
                if no_store:
                    headers = [(k, v) for k, v in headers if k.lower() != b"cache-control"]
                    headers.append((b"cache-control", b"no-store"))
                headers.extend(SECURITY_HEADERS)
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)


def _route_template(scope: Scope) -> str:
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else metrics.UNMATCHED_ROUTE


class RequestMetrics:
    """Times each request by method, route template and status class. Innermost, so that it
    sees the route the router matched (the template, never the raw path: bounded labels)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        method = scope["method"] if scope["method"] in metrics.KNOWN_METHODS else "other"
        observed = False

        def observe(status: int) -> None:
            nonlocal observed
            observed = True
            metrics.REQUEST_SECONDS.labels(
                method, _route_template(scope), f"{status // 100}xx"
            ).observe(time.perf_counter() - started)

        async def timed(message: Message) -> None:
            if message["type"] == "http.response.start" and not observed:
                observe(int(message["status"]))
            await send(message)

        try:
            await self.app(scope, receive, timed)
        except BaseException:
            if not observed:
                observe(500)
            raise


# The header the database error handler marks a retryable answer with; never sent on.
RETRY_HEADER = b"x-gshare-retryable"
RETRY_ATTEMPTS = 5


class RetryConflicts:
    """Runs a request again, whole, when its transaction was ended by a deadlock (40P01) or a
    serialization failure (40001): PostgreSQL rolled everything back, so a second run is the
    same request on the database as it is now, and the caller gets its answer instead of a
    503. Only answers the error handler marks are run again; every other answer passes
    through as it is made. The body is read once and replayed."""

    def __init__(self, app: ASGIApp, attempts: int = RETRY_ATTEMPTS) -> None:
        self.app = app
        self.attempts = attempts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body: list[Message] = []
        try:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    body = [message]  # the caller left: let the app see it
                    break
                body.append(message)
                if not message.get("more_body", False):
                    break
        except HTTPException as exc:  # a body over the limit: the endpoint answers it
            refused = exc

            async def refusing() -> Message:
                raise refused

            await self.app(scope, refusing, send)
            return
        pristine = dict(scope)
        for attempt in range(1, self.attempts + 1):
            if attempt > 1:
                # The same scope, as it came: what the middleware around reads (the route the
                # router matched) is what the run that answers wrote into it.
                scope.clear()
                scope.update(pristine)
            if not await self._attempt(scope, body, receive, send, last=attempt == self.attempts):
                return
            # Apart a little, and not in step with the transaction it lost to.
            await asyncio.sleep(random.uniform(0.005, 0.02) * attempt)  # noqa: S311

    async def _attempt(
        self, scope: Scope, body: list[Message], receive: Receive, send: Send, *, last: bool
    ) -> bool:
        """One run of the request; True when its answer was held back to run it again."""
        replay = list(body)
        retry = False

        async def replayed() -> Message:
            return replay.pop(0) if replay else await receive()

        async def answer(message: Message) -> None:
            nonlocal retry
            if message["type"] == "http.response.start":
                headers = message.get("headers", [])
                if any(name == RETRY_HEADER for name, _ in headers):
                    message = {
                        **message,
                        "headers": [(n, v) for n, v in headers if n != RETRY_HEADER],
                    }
                    retry = not last
            if not retry:
                await send(message)

        await self.app(scope, replayed, answer)
        return retry
