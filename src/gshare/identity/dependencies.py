"""Who is calling: the login-session cookie, the forced password change and CSRF."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Annotated

from fastapi import Depends, Request

from gshare.identity import repository
from gshare.identity.authz import Context
from gshare.identity.principals import Principal, PrincipalCache
from gshare.identity.signin import (
    SessionPolicy,
    authenticate,
    check_live,
    csrf_matches,
    needs_touch,
    token_hash,
)
from gshare.kit.errors import Forbidden, NotAuthenticated
from gshare.kit.settings import Settings
from gshare.kit.web import DbSession, Now, client_of, request_now, sessions_of, settings_of

COOKIE = "gshare_session"
CSRF_HEADER = "X-CSRF-Token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def session_policy(settings: Settings) -> SessionPolicy:
    return SessionPolicy(settings.session_idle_timeout, settings.session_absolute_timeout)


def principal_cache(request: Request) -> PrincipalCache:
    cache: PrincipalCache = request.app.state.principals
    return cache


async def _load(request: Request, key: bytes, now: datetime, policy: SessionPolicy) -> Principal:
    """From the cache for reads, else from the database in a short transaction of its own."""
    cache = principal_cache(request)
    reading = request.method in SAFE_METHODS
    if reading:
        entry = cache.get(key, now)
        if entry is not None:
            try:
                check_live(entry.principal, now=now, policy=policy)
                return entry.principal
            except NotAuthenticated:
                pass  # the database has the last word
    epoch = cache.epoch
    async with sessions_of(request)() as db, db.begin():
        principal = await authenticate(db, key, now=now, policy=policy)
    if reading:
        cache.put(key, principal, now, epoch)
    return principal


async def _principal(
    request: Request, *, allow_pending_password: bool, touch: bool = True
) -> Principal:
    now = await request_now(request)
    token = request.cookies.get(COOKIE)
    if not token or len(token) > 128:
        raise NotAuthenticated()
    key = token_hash(token)
    policy = session_policy(settings_of(request))
    principal = await _load(request, key, now, policy)
    if touch and needs_touch(principal, now):
        async with sessions_of(request)() as db, db.begin():
            await repository.touch_login_session(db, principal.login_id, now)
        principal_cache(request).touched(key, now)
        principal = replace(principal, last_seen_at=now)
    if request.method not in SAFE_METHODS and not csrf_matches(
        principal, request.headers.get(CSRF_HEADER)
    ):
        raise Forbidden("Missing or wrong X-CSRF-Token header.", code="csrf_failed")
    if principal.must_change_password and not allow_pending_password:
        raise Forbidden(
            "Change your password before doing anything else.", code="password_change_required"
        )
    request.state.principal_key = key
    return principal


async def signed_in(request: Request) -> Principal:
    return await _principal(request, allow_pending_password=False)


async def signed_in_pending_ok(request: Request) -> Principal:
    """For the few calls allowed before the first password change."""
    return await _principal(request, allow_pending_password=True)


async def context(
    request: Request,
    session: DbSession,
    now: Now,
    principal: Annotated[Principal, Depends(signed_in)],
) -> Context:
    return Context(db=session, actor=principal.actor, now=now, client=client_of(request))


async def signed_in_passively(request: Request) -> Principal:
    """For a live-update stream: an open tab is not activity, so it keeps no sign-in alive."""
    return await _principal(request, allow_pending_password=False, touch=False)


async def reload_principal(request: Request, now: datetime) -> Principal:
    """The caller's sign-in read again from the database (raises NotAuthenticated when it has
    ended); for a long-lived request that must notice sign-out or a change of roles."""
    key: bytes = request.state.principal_key
    policy = session_policy(settings_of(request))
    async with sessions_of(request)() as db, db.begin():
        return await authenticate(db, key, now=now, policy=policy)


SignedIn = Annotated[Principal, Depends(signed_in)]
PendingOk = Annotated[Principal, Depends(signed_in_pending_ok)]
Ctx = Annotated[Context, Depends(context)]
