"""Session routes so far: the operator's status callback, the ingress access check, and the
console's entry link."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Request, Response

from gshare.clusters.callbacks import (
    ROUTE_STATE,
    CallingCluster,
    InternalRoute,
    OperatorCallbackRoute,
    internal_keys,
    refused_callback,
)
from gshare.identity.dependencies import Ctx, SignedIn
from gshare.identity.permissions import Action
from gshare.kit.errors import NotAuthenticated
from gshare.kit.web import DbSession, Now, client_of, declare
from gshare.sessions import access, service
from gshare.sessions.schemas import SessionEntryOut, StatusAck, StatusReport


async def entry_presented(request: Request) -> None:
    """A request to a session's page carries an entry ticket or an access cookie; which session
    it is for, and whether it is valid, is decided once the request is read."""
    ticket = access.ticket_in(request.headers.get("x-original-url"))
    if not ticket and not request.cookies.get(access.ACCESS_COOKIE):
        raise NotAuthenticated("Open the session from the console.", code="no_session_access")


class SessionAccessRoute(InternalRoute):
    """Called by ingress-nginx for each request to a session's page."""

    check = staticmethod(entry_presented)


router = APIRouter()
callbacks = APIRouter(route_class=OperatorCallbackRoute)
access_checks = APIRouter(route_class=SessionAccessRoute)


@callbacks.post(
    "/internal/v1/sessions/{session_id}/status",
    response_model=StatusAck,
    **declare(Action.CLUSTER_CALLBACK),
)
async def report_status(
    session_id: uuid.UUID,
    body: StatusReport,
    caller: CallingCluster,
    request: Request,
    db: DbSession,
    now: Now,
) -> StatusAck:
    """A session's status from the operator of the cluster it runs on. Reports older than the
    stored one (generation, then sequence) are acknowledged and ignored."""
    try:
        applied = await service.record_status(db, caller, session_id, body, now)
    except service.NotOwned:
        raise refused_callback(request, now, "not_owned") from None
    return StatusAck(applied=applied, sequence=body.sequence)


@access_checks.get(
    "/internal/v1/session-access/{session_id}",
    status_code=204,
    response_class=Response,
    **declare(Action.SESSION_ACCESS_CHECK),
)
async def session_access(
    session_id: uuid.UUID, request: Request, db: DbSession, now: Now
) -> Response:
    """ingress-nginx's `auth-url` for a session's host: 204 lets the request through to the
    session (with the user in X-GShare-User), 401 or 403 stops it. Only the session's owner,
    with a live console sign-in, gets through."""
    admitted = await service.check_access(
        db,
        internal_keys(request).get(now),
        session_id,
        ticket=access.ticket_in(request.headers.get("x-original-url")),
        cookie=request.cookies.get(access.ACCESS_COOKIE),
        now=now,
        client=client_of(request),
        route=str(getattr(request.state, ROUTE_STATE, "")),
    )
    response = Response(status_code=204, headers={"X-GShare-User": admitted.email})
    if admitted.cookie is not None:
        # No Domain attribute (and the __Host- name): the cookie belongs to this host alone.
        response.set_cookie(
            access.ACCESS_COOKIE,
            admitted.cookie,
            max_age=int(access.ACCESS_LIFETIME.total_seconds()),
            httponly=True,
            secure=True,
            samesite="lax",
            path="/",
        )
    return response


@router.post(
    "/api/v1/sessions/{session_id}/entry",
    response_model=SessionEntryOut,
    **declare(Action.SESSION_ENTER, 404, 409),
)
async def enter_session(
    session_id: uuid.UUID, ctx: Ctx, principal: SignedIn, request: Request
) -> SessionEntryOut:
    """A one-minute link into the session's page, for its owner only."""
    url = await service.entry_link(
        ctx, internal_keys(request).get(ctx.now), session_id, principal.login_id
    )
    return SessionEntryOut(url=url)


router.include_router(callbacks)
router.include_router(access_checks)
