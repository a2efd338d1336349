"""The identity API: sign-in, the caller, organizations, groups, users, memberships, admins."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from gshare.identity import service, signin, views
from gshare.identity.dependencies import (
    COOKIE,
    Ctx,
    PendingOk,
    principal_cache,
    session_policy,
)
from gshare.identity.password_policy import MIN_LENGTH, judge_password
from gshare.identity.permissions import Action
from gshare.identity.schemas import (
    AdminGrantOut,
    AdminGrantPage,
    GroupCreate,
    GroupOut,
    GroupPage,
    GroupUpdate,
    LoginRequest,
    LoginResponse,
    MembershipOut,
    MembershipPage,
    MembershipPut,
    MeOut,
    OrgCreate,
    OrgOut,
    OrgPage,
    OrgUpdate,
    PasswordChangeRequest,
    PasswordCheckOut,
    PasswordCheckRequest,
    PasswordResetRequest,
    UserCreate,
    UserOut,
    UserPage,
    UserUpdate,
)
from gshare.kit.pagination import page_request
from gshare.kit.schemas import NO_NUL
from gshare.kit.web import (
    AppSettings,
    Cursor,
    DbSession,
    Now,
    client_of,
    declare,
    request_now,
    sessions_of,
)

router = APIRouter(prefix="/api/v1")
Limit = Annotated[int | None, Query(ge=1, le=200)]


# ---- sign-in and the caller ----------------------------------------------------------------


def _set_session_cookie(
    response: Response, request: Request, settings: AppSettings, token: str
) -> None:
    secure = settings.cookie_secure == "always" or (
        settings.cookie_secure == "auto" and request.url.scheme == "https"
    )
    response.set_cookie(
        COOKIE,
        token,
        max_age=int(session_policy(settings).absolute_timeout.total_seconds()),
        httponly=True,
        samesite="lax",
        secure=secure,
        path="/",
    )


@router.post("/auth/login", response_model=LoginResponse, **declare(Action.PUBLIC, 401, 429))
async def login(
    body: LoginRequest,
    request: Request,
    response: Response,
    session: DbSession,
    now: Now,
    settings: AppSettings,
) -> LoginResponse:
    policy = session_policy(settings)
    user, token, login_session = await signin.login(
        session,
        email=body.email,
        password=body.password,
        client=client_of(request),
        user_agent=request.headers.get("user-agent"),
        now=now,
        policy=policy,
    )
    _set_session_cookie(response, request, settings, token)
    return LoginResponse(
        user=UserOut.model_validate(user),
        csrf_token=login_session.csrf_token,
        must_change_password=user.must_change_password,
    )


@router.post("/auth/logout", status_code=204, **declare(Action.SELF))
async def logout(principal: PendingOk, session: DbSession, now: Now, response: Response) -> None:
    await signin.logout(session, principal, now=now)
    response.delete_cookie(COOKIE, path="/")


@router.post("/auth/password", response_model=MeOut, **declare(Action.SELF, 400, 429))
async def change_password(
    body: PasswordChangeRequest,
    principal: PendingOk,
    session: DbSession,
    now: Now,
    request: Request,
    response: Response,
    settings: AppSettings,
) -> MeOut:
    """Every sign-in of the user ends; this browser gets a new cookie and a new CSRF token
    (in the answer) in place of the old."""
    token, fresh = await signin.change_password(
        session,
        principal,
        current=body.current_password,
        new=body.new_password,
        now=now,
        policy=session_policy(settings),
        client=client_of(request),
        user_agent=request.headers.get("user-agent"),
    )
    _set_session_cookie(response, request, settings, token)
    renewed = replace(
        principal,
        must_change_password=False,
        login_id=fresh.id,
        csrf_token=fresh.csrf_token,
        login_expires_at=fresh.expires_at,
        last_seen_at=fresh.last_seen_at,
    )
    return await views.me_out(session, renewed, now)


@router.post("/auth/password-check", response_model=PasswordCheckOut, **declare(Action.SELF))
async def password_check(body: PasswordCheckRequest, principal: PendingOk) -> PasswordCheckOut:
    email = body.email if body.email is not None else principal.email
    name = body.name if body.name is not None else principal.name
    verdict = judge_password(body.password, email=email, name=name)
    return PasswordCheckOut(
        acceptable=verdict.acceptable,
        score=verdict.score,
        warning=verdict.warning,
        suggestions=verdict.suggestions,
        min_length=MIN_LENGTH,
    )


@router.get("/me", response_model=MeOut, **declare(Action.SELF))
async def me(request: Request, principal: PendingOk) -> Response:
    """The caller: account, roles, memberships and the CSRF token. Served from the cache when
    the caller's view has not changed since it was last built."""
    cache = principal_cache(request)
    key: bytes = request.state.principal_key
    now = await request_now(request)
    entry = cache.get(key, now)
    if entry is not None and entry.me_body is not None:
        return Response(entry.me_body, media_type="application/json")
    epoch = cache.epoch
    async with sessions_of(request)() as db:
        body = (await views.me_out(db, principal, now)).model_dump_json().encode()
    cache.remember_body(key, body, epoch)
    return Response(body, media_type="application/json")


# ---- organizations -------------------------------------------------------------------------


@router.get("/orgs", response_model=OrgPage, **declare(Action.ORG_LIST, 400))
async def list_orgs(
    ctx: Ctx,
    q: Annotated[str | None, Query(max_length=120, pattern=NO_NUL)] = None,
    limit: Limit = None,
    cursor: Cursor = None,
) -> OrgPage:
    items, nxt = await service.list_orgs(ctx, q, page_request(limit, cursor))
    return OrgPage(items=[OrgOut.model_validate(o) for o in items], next_cursor=nxt)


@router.post("/orgs", status_code=201, response_model=OrgOut, **declare(Action.ORG_CREATE, 409))
async def create_org(body: OrgCreate, ctx: Ctx) -> OrgOut:
    return OrgOut.model_validate(await service.create_org(ctx, body.name))


@router.get("/orgs/{org_id}", response_model=OrgOut, **declare(Action.ORG_READ, 404))
async def get_org(org_id: uuid.UUID, ctx: Ctx) -> OrgOut:
    return OrgOut.model_validate(await service.get_org(ctx, org_id))


@router.patch("/orgs/{org_id}", response_model=OrgOut, **declare(Action.ORG_UPDATE, 404, 409))
async def update_org(org_id: uuid.UUID, body: OrgUpdate, ctx: Ctx) -> OrgOut:
    return OrgOut.model_validate(await service.update_org(ctx, org_id, body.name))


@router.delete("/orgs/{org_id}", status_code=204, **declare(Action.ORG_DELETE, 404, 409))
async def delete_org(org_id: uuid.UUID, ctx: Ctx) -> None:
    await service.delete_org(ctx, org_id)


# ---- groups --------------------------------------------------------------------------------


@router.get("/orgs/{org_id}/groups", response_model=GroupPage, **declare(Action.ORG_READ, 400, 404))
async def list_groups(
    org_id: uuid.UUID, ctx: Ctx, limit: Limit = None, cursor: Cursor = None
) -> GroupPage:
    items, nxt = await service.list_groups(ctx, org_id, page_request(limit, cursor))
    return GroupPage(items=[GroupOut.model_validate(g) for g in items], next_cursor=nxt)


@router.post(
    "/orgs/{org_id}/groups",
    status_code=201,
    response_model=GroupOut,
    **declare(Action.GROUP_CREATE, 404, 409),
)
async def create_group(org_id: uuid.UUID, body: GroupCreate, ctx: Ctx) -> GroupOut:
    return GroupOut.model_validate(await service.create_group(ctx, org_id, body.name))


@router.get("/groups/{group_id}", response_model=GroupOut, **declare(Action.GROUP_READ, 404))
async def get_group(group_id: uuid.UUID, ctx: Ctx) -> GroupOut:
    return GroupOut.model_validate(await service.get_group(ctx, group_id))


@router.patch(
    "/groups/{group_id}", response_model=GroupOut, **declare(Action.GROUP_UPDATE, 404, 409)
)
async def update_group(group_id: uuid.UUID, body: GroupUpdate, ctx: Ctx) -> GroupOut:
    return GroupOut.model_validate(await service.update_group(ctx, group_id, body.name))


@router.delete("/groups/{group_id}", status_code=204, **declare(Action.GROUP_DELETE, 404, 409))
async def delete_group(group_id: uuid.UUID, ctx: Ctx) -> None:
    await service.delete_group(ctx, group_id)


# ---- users ---------------------------------------------------------------------------------


@router.get("/users", response_model=UserPage, **declare(Action.USER_LIST, 400))
async def list_users(
    ctx: Ctx,
    q: Annotated[str | None, Query(max_length=320, pattern=NO_NUL)] = None,
    org_id: uuid.UUID | None = None,
    group_id: uuid.UUID | None = None,
    limit: Limit = None,
    cursor: Cursor = None,
) -> UserPage:
    items, nxt = await service.list_users(
        ctx, q=q, org_id=org_id, group_id=group_id, page=page_request(limit, cursor)
    )
    return UserPage(items=[UserOut.model_validate(u) for u in items], next_cursor=nxt)


@router.post(
    "/users",
    status_code=201,
    response_model=UserOut,
    **declare(Action.USER_CREATE, 400, 404, 409),
)
async def create_user(body: UserCreate, ctx: Ctx) -> UserOut:
    user = await service.create_user(
        ctx,
        email=body.email,
        name=body.name,
        initial_password=body.initial_password,
        group_id=body.group_id,
        role=body.role,
    )
    return UserOut.model_validate(user)


@router.get("/users/{user_id}", response_model=UserOut, **declare(Action.USER_READ, 404))
async def get_user(user_id: uuid.UUID, ctx: Ctx) -> UserOut:
    return UserOut.model_validate(await service.get_user(ctx, user_id))


@router.patch("/users/{user_id}", response_model=UserOut, **declare(Action.USER_RENAME, 404, 409))
async def update_user(user_id: uuid.UUID, body: UserUpdate, ctx: Ctx) -> UserOut:
    user = await service.update_user(ctx, user_id, name=body.name, active=body.active)
    return UserOut.model_validate(user)


# ---- memberships ---------------------------------------------------------------------------


@router.get(
    "/groups/{group_id}/members",
    response_model=MembershipPage,
    **declare(Action.MEMBERS_READ, 400, 404),
)
async def list_members(
    group_id: uuid.UUID, ctx: Ctx, limit: Limit = None, cursor: Cursor = None
) -> MembershipPage:
    items, nxt = await service.list_members(ctx, group_id, page_request(limit, cursor))
    return MembershipPage(items=[views.membership_out(v, ctx.now) for v in items], next_cursor=nxt)


@router.put(
    "/groups/{group_id}/members/{user_id}",
    response_model=MembershipOut,
    **declare(Action.MEMBERS_MANAGE, 400, 404),
)
async def put_member(
    group_id: uuid.UUID, user_id: uuid.UUID, body: MembershipPut, ctx: Ctx
) -> MembershipOut:
    view = await service.put_member(
        ctx, group_id, user_id, role=body.role, expires_at=body.expires_at
    )
    return views.membership_out(view, ctx.now)


@router.delete(
    "/groups/{group_id}/members/{user_id}",
    status_code=204,
    **declare(Action.MEMBERS_MANAGE, 404),
)
async def delete_member(group_id: uuid.UUID, user_id: uuid.UUID, ctx: Ctx) -> None:
    await service.delete_member(ctx, group_id, user_id)


# ---- admin grants --------------------------------------------------------------------------


@router.get(
    "/orgs/{org_id}/admins",
    response_model=AdminGrantPage,
    **declare(Action.ORG_ADMINS_READ, 400, 404),
)
async def list_org_admins(
    org_id: uuid.UUID, ctx: Ctx, limit: Limit = None, cursor: Cursor = None
) -> AdminGrantPage:
    items, nxt = await service.list_org_admins(ctx, org_id, page_request(limit, cursor))
    return AdminGrantPage(items=[views.grant_out(v) for v in items], next_cursor=nxt)


@router.put(
    "/orgs/{org_id}/admins/{user_id}",
    response_model=AdminGrantOut,
    **declare(Action.ORG_ADMINS_MANAGE, 404),
)
async def put_org_admin(org_id: uuid.UUID, user_id: uuid.UUID, ctx: Ctx) -> AdminGrantOut:
    return views.grant_out(await service.put_org_admin(ctx, org_id, user_id))


@router.delete(
    "/orgs/{org_id}/admins/{user_id}",
    status_code=204,
    **declare(Action.ORG_ADMINS_MANAGE, 404),
)
async def delete_org_admin(org_id: uuid.UUID, user_id: uuid.UUID, ctx: Ctx) -> None:
    await service.delete_org_admin(ctx, org_id, user_id)


@router.get(
    "/groups/{group_id}/admins",
    response_model=AdminGrantPage,
    **declare(Action.GROUP_ADMINS_READ, 400, 404),
)
async def list_group_admins(
    group_id: uuid.UUID, ctx: Ctx, limit: Limit = None, cursor: Cursor = None
) -> AdminGrantPage:
    items, nxt = await service.list_group_admins(ctx, group_id, page_request(limit, cursor))
    return AdminGrantPage(items=[views.grant_out(v) for v in items], next_cursor=nxt)


@router.put(
    "/groups/{group_id}/admins/{user_id}",
    response_model=AdminGrantOut,
    **declare(Action.GROUP_ADMINS_MANAGE, 404),
)
async def put_group_admin(group_id: uuid.UUID, user_id: uuid.UUID, ctx: Ctx) -> AdminGrantOut:
    return views.grant_out(await service.put_group_admin(ctx, group_id, user_id))


@router.delete(
    "/groups/{group_id}/admins/{user_id}",
    status_code=204,
    **declare(Action.GROUP_ADMINS_MANAGE, 404),
)
async def delete_group_admin(group_id: uuid.UUID, user_id: uuid.UUID, ctx: Ctx) -> None:
    await service.delete_group_admin(ctx, group_id, user_id)


# ---- password reset and super admins -------------------------------------------------------


@router.post(
    "/users/{user_id}/password-reset",
    response_model=UserOut,
    **declare(Action.USER_RESET_PASSWORD, 400, 404, 409),
)
async def reset_password(user_id: uuid.UUID, body: PasswordResetRequest, ctx: Ctx) -> UserOut:
    """A new initial password, to be changed at the next sign-in; every sign-in of the user
    ends. Not for one's own password: use the password change."""
    user = await service.reset_password(ctx, user_id, initial_password=body.initial_password)
    return UserOut.model_validate(user)


@router.put(
    "/users/{user_id}/super-admin", status_code=204, **declare(Action.SUPER_ADMIN_MANAGE, 404)
)
async def grant_super_admin(user_id: uuid.UUID, ctx: Ctx) -> None:
    await service.grant_super_admin(ctx, user_id)


@router.delete(
    "/users/{user_id}/super-admin",
    status_code=204,
    **declare(Action.SUPER_ADMIN_MANAGE, 404, 409),
)
async def revoke_super_admin(user_id: uuid.UUID, ctx: Ctx) -> None:
    """409 last_super_admin when no other active super admin would remain."""
    await service.revoke_super_admin(ctx, user_id)


__all__ = ["router"]
