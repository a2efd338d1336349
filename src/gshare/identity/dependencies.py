"""Who is calling: the login-session cookie, the forced password change and CSRF."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from gshare.identity.authz import Context
from gshare.identity.signin import Authenticated, SessionPolicy, authenticate, csrf_matches
from gshare.kit.errors import Forbidden
from gshare.kit.settings import Settings
from gshare.kit.web import DbSession, Now, client_of, settings_of

COOKIE = "gshare_session"
CSRF_HEADER = "X-CSRF-Token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def session_policy(settings: Settings) -> SessionPolicy:
    return SessionPolicy(settings.session_idle_timeout, settings.session_absolute_timeout)


async def _authenticated(
    request: Request, session: DbSession, now: Now, *, allow_pending_password: bool
) -> Authenticated:
    auth = await authenticate(
        session,
        request.cookies.get(COOKIE),
        now=now,
        policy=session_policy(settings_of(request)),
    )
    if request.method not in SAFE_METHODS and not csrf_matches(
        auth.login, request.headers.get(CSRF_HEADER)
    ):
        raise Forbidden("Missing or wrong X-CSRF-Token header.", code="csrf_failed")
    if auth.user.must_change_password and not allow_pending_password:
        raise Forbidden(
            "Change your password before doing anything else.", code="password_change_required"
        )
    request.state.actor_id = auth.user.id
    return auth


async def signed_in(request: Request, session: DbSession, now: Now) -> Authenticated:
    return await _authenticated(request, session, now, allow_pending_password=False)


async def signed_in_pending_ok(request: Request, session: DbSession, now: Now) -> Authenticated:
    """For the few calls allowed before the first password change."""
    return await _authenticated(request, session, now, allow_pending_password=True)


async def context(
    request: Request,
    session: DbSession,
    now: Now,
    auth: Annotated[Authenticated, Depends(signed_in)],
) -> Context:
    return Context(session=session, actor=auth.actor, now=now, client=client_of(request))


Auth = Annotated[Authenticated, Depends(signed_in)]
PendingAuth = Annotated[Authenticated, Depends(signed_in_pending_ok)]
Ctx = Annotated[Context, Depends(context)]
