"""The live-update stream and the notifications API."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request
from sse_starlette import EventSourceResponse
from sse_starlette.sse import SendTimeoutError
from starlette.types import Receive, Scope, Send

from gshare.events import notifications
from gshare.events.hub import (
    MAX_EVENT_ID,
    MAX_STREAMS_PER_USER,
    RESET,
    Hub,
    Subscriber,
    encoded,
    position,
)
from gshare.events.schemas import NotificationOut, NotificationPage, UnreadOut
from gshare.identity.dependencies import (
    Ctx,
    reload_principal,
    session_policy,
    signed_in_passively,
)
from gshare.identity.permissions import Action
from gshare.identity.principals import Principal
from gshare.identity.signin import SessionPolicy, check_live
from gshare.kit.clock import Clock
from gshare.kit.errors import BadRequest, NotAuthenticated, TooManyRequests
from gshare.kit.pagination import page_of, page_request
from gshare.kit.web import Cursor, declare, settings_of

log = logging.getLogger(__name__)
router = APIRouter(prefix="/api/v1", tags=["events"])
SEND_TIMEOUT_SECONDS = 30
EVENT_ID = r"^[0-9]*$"  # an id this server sent; `_after` refuses one beyond them


class _EventStream(EventSourceResponse):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        except SendTimeoutError:
            # The client stopped reading; the stream ends (a proxy in front closes the socket).
            log.info("closed a live-update stream whose client stopped reading")


def _after(value: str | None) -> int | None:
    if not value:
        return None
    if not value.isascii() or not value.isdigit() or int(value) > MAX_EVENT_ID:
        raise BadRequest(
            "Last-Event-ID must be an event id this server sent.", code="invalid_last_event_id"
        )
    return int(value)


def _streamed(declared: dict[str, Any]) -> dict[str, Any]:
    responses = {200: {"content": {"text/event-stream": {}}, "description": "The event stream."}}
    return {**declared, "responses": {**responses, **declared["responses"]}}


@router.get(
    "/events", response_class=EventSourceResponse, **_streamed(declare(Action.SELF, 400, 429))
)
async def stream_events(
    request: Request,
    principal: Annotated[Principal, Depends(signed_in_passively)],
    last_event_id: Annotated[str | None, Query(max_length=24, pattern=EVENT_ID)] = None,
    last_event_id_header: Annotated[
        str | None, Header(alias="Last-Event-ID", max_length=24, pattern=EVENT_ID)
    ] = None,
) -> EventSourceResponse:
    """Server-sent events the caller may see, as they are committed. Each carries its id; a
    client that reconnects with `Last-Event-ID` (or `?last_event_id=`) first gets what it
    missed. `reset` means some of that is no longer kept: reload everything. The stream holds
    no database transaction and ends after a while; the client reconnects."""
    after = _after(last_event_id_header or last_event_id)
    hub: Hub = request.app.state.events
    if hub.streams_of(principal.user_id) >= MAX_STREAMS_PER_USER:
        raise TooManyRequests(
            f"At most {MAX_STREAMS_PER_USER} live-update streams per user; close a tab.",
            code="too_many_streams",
            retry_after=30,
        )
    settings = settings_of(request)
    return _EventStream(
        _frames(request, principal, after),
        ping=settings.events_heartbeat_seconds,
        send_timeout=SEND_TIMEOUT_SECONDS,
        headers={"X-Accel-Buffering": "no"},  # nginx would otherwise buffer the stream
    )


async def _frames(
    request: Request, principal: Principal, after: int | None
) -> AsyncIterator[bytes]:
    hub: Hub = request.app.state.events
    clock: Clock = request.app.state.clock
    settings = settings_of(request)
    policy = session_policy(settings)
    subscriber = hub.subscribe(principal.actor, principal.user_id)
    loop = asyncio.get_running_loop()
    closes_at = loop.time() + settings.events_stream_seconds
    sent = subscriber.start  # the number this stream is current to
    try:
        if after is not None:
            missed = await hub.replay(subscriber, after)
            # A reset carries the number the live tail goes on from.
            frames = [encoded(sent, e.kind, {}) if e is RESET else e.frame for e in missed]
            if not missed or missed[-1].seq != sent:
                frames.append(position(sent))
            yield b"".join(frames)
        while loop.time() < closes_at:
            await subscriber.wait()
            if subscriber.overflowed:
                return  # the client reconnects and replays from the table
            current = await _still_signed_in(request, subscriber, principal, clock, policy)
            if current is None:
                return  # signed out, deactivated or expired: the stream ends with the sign-in
            principal = current
            events = subscriber.take()
            frames = [event.frame for event in events]
            # Everything up to the hub's last number that this caller may see is in `events`.
            if hub.last > (events[-1].seq if events else sent):
                frames.append(position(hub.last))
            if frames:
                sent = hub.last
                yield b"".join(frames)
    finally:
        hub.unsubscribe(subscriber)


async def _still_signed_in(
    request: Request,
    subscriber: Subscriber,
    principal: Principal,
    clock: Clock,
    policy: SessionPolicy,
) -> Principal | None:
    """The stream's caller as they are now, or None once their sign-in has ended."""
    now = clock.now()
    try:
        changed = principal.changes_at is not None and now >= principal.changes_at
        if not subscriber.stale and not changed:
            check_live(principal, now=now, policy=policy)
            return principal
    except NotAuthenticated:
        pass  # other requests may have kept the sign-in alive: the database decides
    subscriber.stale = False
    try:
        principal = await reload_principal(request, now)
    except NotAuthenticated:
        return None
    subscriber.viewer = principal.actor
    return principal


# ---- notifications -----------------------------------------------------------------------------


@router.get("/notifications", response_model=NotificationPage, **declare(Action.SELF, 400))
async def list_notifications(
    ctx: Ctx,
    unread_only: bool = False,
    limit: Annotated[int | None, Query(ge=1, le=200)] = None,
    cursor: Cursor = None,
) -> NotificationPage:
    """The caller's notifications, newest first."""
    page = page_request(limit, cursor)
    rows = await notifications.list_of(ctx.db, ctx.actor.user_id, page, unread_only=unread_only)
    items, nxt = page_of(rows, page)
    return NotificationPage(
        items=[NotificationOut.model_validate(n) for n in items], next_cursor=nxt
    )


@router.get("/notifications/unread-count", response_model=UnreadOut, **declare(Action.SELF))
async def unread_notifications(ctx: Ctx) -> UnreadOut:
    return UnreadOut(unread=await notifications.unread(ctx.db, ctx.actor.user_id))


@router.post(
    "/notifications/{notification_id}/read",
    response_model=NotificationOut,
    **declare(Action.SELF, 404),
)
async def read_notification(ctx: Ctx, notification_id: uuid.UUID) -> NotificationOut:
    """Mark one of the caller's notifications read; reading it again changes nothing."""
    found = await notifications.mark_read(ctx.db, ctx.actor.user_id, notification_id, ctx.now)
    return NotificationOut.model_validate(found)


@router.post("/notifications/read-all", response_model=UnreadOut, **declare(Action.SELF))
async def read_all_notifications(ctx: Ctx) -> UnreadOut:
    await notifications.mark_all_read(ctx.db, ctx.actor.user_id, ctx.now)
    return UnreadOut(unread=0)
