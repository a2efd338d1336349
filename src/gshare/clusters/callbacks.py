"""Who may call the internal routes, checked before anything else about the request.

Internal routes (`/internal/...`) are called by machines, not signed-in people: operators with
their cluster's short-lived token, and ingress-nginx asking whether a browser may enter a
session. Each is an `InternalRoute` whose caller check runs before FastAPI reads the path, query
or body, so a caller without credentials gets 401 and learns nothing about what the route
expects. Refusals are counted per source, reason and window, and only the first of each window
is audited (see `service.record_refusal`).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from datetime import datetime
from typing import Annotated, Any

from fastapi import Depends, Request, Response
from fastapi.routing import APIRoute, iter_route_contexts
from starlette.routing import BaseRoute

from gshare.clusters import service
from gshare.clusters.keystore import KeyRing, key_store_for
from gshare.clusters.tokens import InvalidToken
from gshare.kit.errors import DurableWrite, NotAuthenticated
from gshare.kit.web import client_of, request_now, sessions_of

log = logging.getLogger(__name__)

CALLBACK_ACTION = "cluster.callback"
CALLER_STATE = "calling_cluster"
ROUTE_STATE = "internal_route"


def key_ring_of(app: Any) -> KeyRing:
    """The app's view of the internal key set, shared with the worker and other replicas."""
    keys: KeyRing | None = getattr(app.state, "internal_keys", None)
    if keys is None:
        keys = KeyRing(key_store_for(app.state.settings))
        app.state.internal_keys = keys
    return keys


def internal_keys(request: Request) -> KeyRing:
    return key_ring_of(request.app)


def _target(request: Request) -> tuple[str | None, uuid.UUID | None]:
    """The route's subject as the path names it, when it is a well-formed id: never the raw
    text, which the caller chose."""
    for name, value in request.path_params.items():
        if name.endswith("_id"):
            try:
                return name.removesuffix("_id"), uuid.UUID(str(value))
            except ValueError:
                return name.removesuffix("_id"), None
    return None, None


def _route_of(request: Request) -> str:
    return str(getattr(request.state, ROUTE_STATE, "")) or "internal"


def refusal(request: Request, reason: str, *, actor_id: uuid.UUID | None = None) -> service.Refusal:
    target_type, target_id = _target(request)
    return service.Refusal(
        action=CALLBACK_ACTION,
        reason=reason,
        route=_route_of(request),
        client=client_of(request),
        target_type=target_type,
        target_id=target_id,
        actor_id=actor_id,
    )


def invalid_token(*, durable: list[DurableWrite] | None = None) -> NotAuthenticated:
    return NotAuthenticated(
        "The callback's token is not valid.", code="invalid_token", durable=durable
    )


def refused_callback(request: Request, now: datetime, reason: str) -> NotAuthenticated:
    """The 401 for a callback refused inside its request: counted after the rollback."""
    return invalid_token(durable=[service.refusal_later(refusal(request, reason), now)])


async def _record_now(request: Request, found: service.Refusal, now: datetime) -> None:
    """Count a refusal that happened before the request had a transaction of its own."""
    try:
        async with sessions_of(request)() as db, db.begin():
            await service.record_refusal(db, found, now)
    except Exception:  # the caller is refused either way
        log.exception("cannot record a refused internal call")


async def operator_token(request: Request) -> None:
    """The caller presents a valid operator token: its cluster goes to `calling_cluster`."""
    now = await request_now(request)
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    try:
        if scheme.lower() != "bearer" or not token.strip():
            raise InvalidToken("no bearer token", "no_token")
        keys = await internal_keys(request).for_tokens([token.strip()], now)
        claimed = keys.verify(token.strip(), now)
        cluster_id = uuid.UUID(claimed)
    except InvalidToken as exc:
        await _record_now(request, refusal(request, exc.reason), now)
        raise invalid_token() from None
    except ValueError:
        await _record_now(request, refusal(request, "invalid_claims"), now)
        raise invalid_token() from None
    setattr(request.state, CALLER_STATE, cluster_id)


CallerCheck = Callable[[Request], Awaitable[None]]


class InternalRoute(APIRoute):
    """A route whose caller is checked before the request is parsed. Subclasses name the check;
    every route under /internal/ must be one (the app refuses to start otherwise)."""

    check: CallerCheck | None = None

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        check, template = type(self).check, self.path
        if check is None:
            raise TypeError(f"{type(self).__name__} names no caller check")

        async def checked_first(request: Request) -> Response:
            setattr(request.state, ROUTE_STATE, template)
            await check(request)
            return await handler(request)

        return checked_first


class OperatorCallbackRoute(InternalRoute):
    """Called by a cluster's operator with its token."""

    check = staticmethod(operator_token)


def internal_routes(routes: Sequence[BaseRoute]) -> list[tuple[str, BaseRoute]]:
    """Every route under /internal/, with its full path, included routers' routes too."""
    return [
        (str(context.path), context.original_route)
        for context in iter_route_contexts(routes)
        if str(context.path or "").startswith("/internal/")
    ]


def unchecked_internal_routes(routes: Sequence[BaseRoute]) -> list[str]:
    """Paths under /internal/ that are not InternalRoutes (should be none)."""
    return [path for path, route in internal_routes(routes) if not isinstance(route, InternalRoute)]


async def calling_cluster(request: Request) -> uuid.UUID:
    """The cluster whose token the InternalRoute check accepted."""
    cluster_id: uuid.UUID = getattr(request.state, CALLER_STATE)
    return cluster_id


CallingCluster = Annotated[uuid.UUID, Depends(calling_cluster)]
