"""Session routes: the owner's sessions and their lifecycle, the catalog, volumes, the
operator's status and utilization callbacks, the ingress access check and the entry link."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Literal

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import RedirectResponse

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
from gshare.kit.idempotency import IdempotencyKey, respond_once
from gshare.kit.web import AppSettings, DbSession, Now, client_of, declare
from gshare.sessions import access, catalog, entry, reaping, service, usage, views
from gshare.sessions.lifecycle import State
from gshare.sessions.models import InteractiveSession
from gshare.sessions.schemas import (
    ImageCreate,
    ImageList,
    ImageOut,
    ImageUpdate,
    SessionCreate,
    SessionEntryOut,
    SessionList,
    SessionOut,
    SessionUsageOut,
    SharedVolumeCreate,
    StatusAck,
    StatusReport,
    UtilizationAck,
    UtilizationReport,
    VolumeList,
    VolumeOut,
)


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
    with a live console sign-in, gets through.

    A request whose address carries a ticket is stopped even when allowed: the 401, without a
    body and with the cookie, has ingress-nginx send the browser to `auth-signin`, which sends
    it back without the ticket (`GET /api/v1/session-entry`)."""
    ticket = access.ticket_in(request.headers.get("x-original-url"))
    cookie = request.cookies.get(access.ACCESS_COOKIE)
    admitted = await entry.check_access(
        db,
        await internal_keys(request).for_tokens([ticket, cookie], now),
        session_id,
        ticket=ticket,
        cookie=cookie,
        now=now,
        client=client_of(request),
        route=str(getattr(request.state, ROUTE_STATE, "")),
    )
    if ticket is not None:
        response = Response(status_code=401)
    else:
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


@router.get(
    "/api/v1/session-entry",
    status_code=303,
    response_class=RedirectResponse,
    **declare(Action.PUBLIC, 400, 401),
)
async def session_entry(request: Request, db: DbSession) -> RedirectResponse:
    """ingress-nginx's `auth-signin` for session hosts: back to the address in `rd` without its
    ticket, once the access check has taken it and set the cookie. Only a session page's
    address is followed (400 otherwise); one without a ticket is refused (401), not looped."""
    address = access.return_address(request.url.query)
    target = await entry.address_without_ticket(db, address)
    return RedirectResponse(target, status_code=303)


@router.post(
    "/api/v1/sessions/{session_id}/entry",
    response_model=SessionEntryOut,
    **declare(Action.SESSION_ENTER, 404, 409),
)
async def enter_session(
    session_id: uuid.UUID, ctx: Ctx, principal: SignedIn, request: Request
) -> SessionEntryOut:
    """A one-minute link into the session's page, for its owner only."""
    url = await entry.entry_link(
        ctx, await internal_keys(request).get(ctx.now), session_id, principal.login_id
    )
    return SessionEntryOut(url=url)


@callbacks.post(
    "/internal/v1/clusters/{cluster_id}/utilization",
    response_model=UtilizationAck,
    **declare(Action.CLUSTER_CALLBACK, 404),
)
async def report_utilization(
    cluster_id: uuid.UUID,
    body: UtilizationReport,
    caller: CallingCluster,
    request: Request,
    db: DbSession,
    now: Now,
    settings: AppSettings,
) -> UtilizationAck:
    """GPU utilization of the cluster's sessions from its metrics source (or why it could not
    be read: then nothing on the cluster is reaped)."""
    if caller != cluster_id:
        raise refused_callback(request, now, "wrong_cluster")
    applied = await reaping.record_utilization(
        db, caller, body, now, threshold_percent=settings.idle_threshold_percent
    )
    return UtilizationAck(applied=applied)


# ---- the owner's sessions ------------------------------------------------------------------


async def _one(
    ctx: Ctx, settings: AppSettings, row: InteractiveSession, *, history: bool = False
) -> SessionOut:
    found = await views.sessions_out(ctx.db, [row], ctx.now, settings, with_history=history)
    return found[0]


@router.get("/api/v1/sessions", response_model=SessionList, **declare(Action.SESSION_READ_OWN))
async def list_sessions(
    ctx: Ctx,
    settings: AppSettings,
    scope: Literal["mine", "admin"] = "mine",
    state: list[State] | None = Query(default=None, max_length=10),
    group_id: uuid.UUID | None = None,
) -> SessionList:
    """Your sessions, newest first; `scope=admin`: every session in the groups you administer
    (the super admin: all), filtered by state and group."""
    rows = await service.list_sessions(ctx, admin=scope == "admin", states=state, group_id=group_id)
    return SessionList(items=await views.sessions_out(ctx.db, rows, ctx.now, settings))


async def _once(
    ctx: Ctx,
    key: str | None,
    operation: str,
    params: object,
    produce: Callable[[], Awaitable[SessionOut | None]],
    status_code: int = 200,
) -> Response:
    """A lifecycle call done once per Idempotency-Key, like the credits routes: the browser may
    send it again (a retry after a lost answer, a double click) without doing it twice."""
    return await respond_once(
        ctx.db,
        actor_id=ctx.actor.user_id,
        key=key,
        operation=operation,
        params=params,
        now=ctx.now,
        status_code=status_code,
        produce=produce,
    )


@router.post(
    "/api/v1/sessions",
    response_model=SessionOut,
    status_code=201,
    **declare(Action.SESSION_CREATE, 404, 409),
)
async def create_session(
    body: SessionCreate, ctx: Ctx, settings: AppSettings, idempotency_key: IdempotencyKey = None
) -> Response:
    """Start a session: admitted on a card now, or queued when every card is taken."""

    async def produce() -> SessionOut:
        return await _one(ctx, settings, await service.create(ctx, body, settings))

    params = body.model_dump(mode="json")
    return await _once(ctx, idempotency_key, "session.create", params, produce, 201)


@router.get(
    "/api/v1/sessions/{session_id}",
    response_model=SessionOut,
    **declare(Action.SESSION_READ_OWN, 404),
)
async def get_session(session_id: uuid.UUID, ctx: Ctx, settings: AppSettings) -> SessionOut:
    row = await service.get(ctx, session_id)
    return await _one(ctx, settings, row, history=True)


@router.get(
    "/api/v1/sessions/{session_id}/usage",
    response_model=SessionUsageOut,
    **declare(Action.SESSION_READ_OWN, 404),
)
async def get_session_usage(session_id: uuid.UUID, ctx: Ctx) -> SessionUsageOut:
    """GPU utilization and VRAM used over the session's life, thinned with age, and its cost
    so far; for its owner and the admins of its group."""
    return views.usage_out(await usage.usage(ctx, session_id))


_ACTIONS = {
    "pause": service.pause,
    "stop": service.stop,
    "keep-running": service.keep_running,
}


async def _act(
    ctx: Ctx, settings: AppSettings, session_id: uuid.UUID, action: str, key: str | None
) -> Response:
    async def produce() -> SessionOut:
        if action == "resume":
            row = await service.resume(ctx, session_id, settings)
        else:
            row = await _ACTIONS[action](ctx, session_id)
        return await _one(ctx, settings, row)

    return await _once(ctx, key, f"session.{action}", str(session_id), produce)


@router.post(
    "/api/v1/sessions/{session_id}/pause",
    response_model=SessionOut,
    **declare(Action.SESSION_CONTROL, 404, 409),
)
async def pause_session(
    session_id: uuid.UUID, ctx: Ctx, settings: AppSettings, idempotency_key: IdempotencyKey = None
) -> Response:
    """Tear the pod down and give the card back: billing stops; volumes stay."""
    return await _act(ctx, settings, session_id, "pause", idempotency_key)


@router.post(
    "/api/v1/sessions/{session_id}/resume",
    response_model=SessionOut,
    **declare(Action.SESSION_CONTROL, 404, 409),
)
async def resume_session(
    session_id: uuid.UUID, ctx: Ctx, settings: AppSettings, idempotency_key: IdempotencyKey = None
) -> Response:
    """Ask for a card again (it may queue) and rebuild the pod with the same volumes."""
    return await _act(ctx, settings, session_id, "resume", idempotency_key)


@router.post(
    "/api/v1/sessions/{session_id}/stop",
    response_model=SessionOut,
    **declare(Action.SESSION_CONTROL, 404, 409),
)
async def stop_session(
    session_id: uuid.UUID, ctx: Ctx, settings: AppSettings, idempotency_key: IdempotencyKey = None
) -> Response:
    """End the session for good; what it used is settled."""
    return await _act(ctx, settings, session_id, "stop", idempotency_key)


@router.post(
    "/api/v1/sessions/{session_id}/keep-running",
    response_model=SessionOut,
    **declare(Action.SESSION_CONTROL, 404, 409),
)
async def keep_session_running(
    session_id: uuid.UUID, ctx: Ctx, settings: AppSettings, idempotency_key: IdempotencyKey = None
) -> Response:
    """Defer an announced idle pause by the policy's keep-running limit."""
    return await _act(ctx, settings, session_id, "keep-running", idempotency_key)


@router.delete(
    "/api/v1/sessions/{session_id}",
    status_code=204,
    response_class=Response,
    **declare(Action.SESSION_CONTROL, 404, 409),
)
async def delete_session(
    session_id: uuid.UUID,
    ctx: Ctx,
    delete_home: bool = False,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    """Stop the session if needed and remove it from your list (its history and charges stay);
    `delete_home` deletes its home volume too."""

    async def produce() -> None:
        await service.delete(ctx, session_id, delete_home=delete_home)

    params = [str(session_id), delete_home]
    return await _once(ctx, idempotency_key, "session.delete", params, produce, 204)


# ---- catalog -------------------------------------------------------------------------------


@router.get("/api/v1/catalog", response_model=ImageList, **declare(Action.CATALOG_READ))
async def list_catalog(ctx: Ctx, include_disabled: bool = False) -> ImageList:
    rows = await catalog.list_images(ctx, all_images=include_disabled)
    return ImageList(items=[ImageOut.model_validate(r) for r in rows])


@router.post(
    "/api/v1/catalog",
    response_model=ImageOut,
    status_code=201,
    **declare(Action.CATALOG_MANAGE, 409),
)
async def add_catalog_image(body: ImageCreate, ctx: Ctx) -> ImageOut:
    return ImageOut.model_validate(await catalog.add_image(ctx, body))


@router.patch(
    "/api/v1/catalog/{image_id}",
    response_model=ImageOut,
    **declare(Action.CATALOG_MANAGE, 404, 409),
)
async def update_catalog_image(image_id: uuid.UUID, body: ImageUpdate, ctx: Ctx) -> ImageOut:
    return ImageOut.model_validate(await catalog.update_image(ctx, image_id, body))


# ---- volumes -------------------------------------------------------------------------------


@router.get("/api/v1/volumes", response_model=VolumeList, **declare(Action.VOLUME_READ_OWN))
async def list_volumes(ctx: Ctx) -> VolumeList:
    """Your home volumes and your groups' shared volumes, with the sessions using each."""
    rows, total = await catalog.my_volumes(ctx)
    return VolumeList(
        items=await views.volumes_out(ctx.db, rows, viewer=ctx.actor.user_id),
        home_total_gib=total,
        storage_limit_gib=await catalog.storage_limit(ctx),
    )


@router.delete(
    "/api/v1/volumes/{volume_id}",
    status_code=204,
    response_class=Response,
    **declare(Action.VOLUME_DELETE_OWN, 404, 409),
)
async def delete_volume(volume_id: uuid.UUID, ctx: Ctx) -> Response:
    await catalog.delete_my_volume(ctx, volume_id)
    return Response(status_code=204)


@router.get(
    "/api/v1/groups/{group_id}/volumes",
    response_model=VolumeList,
    **declare(Action.VOLUME_READ_GROUP, 404),
)
async def list_group_volumes(group_id: uuid.UUID, ctx: Ctx) -> VolumeList:
    rows, administers = await catalog.group_volumes(ctx, group_id)
    viewer = None if administers else ctx.actor.user_id
    return VolumeList(items=await views.volumes_out(ctx.db, rows, viewer=viewer), home_total_gib=0)


@router.post(
    "/api/v1/groups/{group_id}/volumes",
    response_model=VolumeOut,
    status_code=201,
    **declare(Action.VOLUME_MANAGE_GROUP, 404, 409),
)
async def create_group_volume(group_id: uuid.UUID, body: SharedVolumeCreate, ctx: Ctx) -> VolumeOut:
    """A shared volume the group's members may mount (ReadWriteMany or ReadOnlyMany)."""
    row = await catalog.create_shared_volume(ctx, group_id, body)
    return (await views.volumes_out(ctx.db, [row], viewer=None))[0]


@router.delete(
    "/api/v1/groups/{group_id}/volumes/{volume_id}",
    status_code=204,
    response_class=Response,
    **declare(Action.VOLUME_MANAGE_GROUP, 404, 409),
)
async def delete_group_volume(group_id: uuid.UUID, volume_id: uuid.UUID, ctx: Ctx) -> Response:
    await catalog.delete_shared_volume(ctx, group_id, volume_id)
    return Response(status_code=204)


router.include_router(callbacks)
router.include_router(access_checks)
