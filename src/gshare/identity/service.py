"""Organizations, groups, users, memberships and admin grants, each change checked and audited."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import CompoundSelect, Select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from gshare.events.hub import Scopes
from gshare.identity import passwords, repository
from gshare.identity.authz import Context, audit, require
from gshare.identity.models import Group, LoginSession, Membership, Organization, User
from gshare.identity.permissions import Action, Scope, UserScope
from gshare.identity.principals import announce_tenancy_changed, announce_user_changed
from gshare.identity.repository import GrantView, MembershipView
from gshare.identity.signin import check_new_password, set_initial_password
from gshare.identity.throttle import LONGEST_WINDOW
from gshare.kit.errors import BadRequest, Conflict, NotFound
from gshare.kit.hooks import Guard, Hook
from gshare.kit.ids import new_id
from gshare.kit.pagination import PageRequest, page_of

# ---- deletion guards -----------------------------------------------------------------------

# Other domains refuse the deletion of an organization or group they still hold something of
# (credits in its wallet, say): a guard gets the kind ("org" or "group") and the id, and returns
# why not, or None. Domains above identity connect theirs when the app is built.
deletion_guard: Guard[[str, uuid.UUID]] = Guard("organization or group deletion")
# A user was deactivated (their console sign-ins are revoked in the same transaction).
deactivated: Hook[[uuid.UUID, datetime], None] = Hook("user deactivated")
# A user left a group, or their membership became one that has already ended (an expiry in the
# past); guests whose membership expires on its own are noticed by the worker instead.
membership_ended: Hook[[uuid.UUID, uuid.UUID, datetime], None] = Hook("membership ended")


async def _check_guards(ctx: Context, kind: str, owner_id: uuid.UUID) -> None:
    await deletion_guard.check(ctx.db, kind, owner_id)


# ---- organizations -------------------------------------------------------------------------


async def _org(ctx: Context, org_id: uuid.UUID, *, lock: bool = False) -> Organization:
    """The organization; `lock` holds its row until the transaction ends, so a concurrent
    deletion waits and then finds it gone."""
    org = await ctx.db.get(Organization, org_id, with_for_update=lock, populate_existing=lock)
    if org is None:
        raise NotFound("No such organization.", code="org_not_found")
    return org


async def _unique(ctx: Context, what: str, code: str = "already_exists") -> None:
    """Flush; a unique key taken meanwhile by a concurrent request is the same 409 (same code)
    that the request would get had it come second."""
    try:
        await ctx.db.flush()
    except IntegrityError as exc:
        raise Conflict(f"{what} already exists.", code=code) from exc


async def list_orgs(
    ctx: Context, q: str | None, page: PageRequest
) -> tuple[list[Organization], str | None]:
    require(ctx, Action.ORG_LIST)
    actor = ctx.actor
    visible: frozenset[uuid.UUID] | None = None
    if not actor.is_super_admin:
        visible = frozenset(
            actor.org_admin_of | set(actor.group_admin_of.values()) | set(actor.member_of.values())
        )
    return page_of(await repository.list_orgs(ctx.db, visible, q, page), page)


async def create_org(ctx: Context, name: str) -> Organization:
    require(ctx, Action.ORG_CREATE, target_type="org")
    org = Organization(id=new_id(), name=name, created_at=ctx.now)
    ctx.db.add(org)
    await _unique(ctx, f"An organization named {name!r}")
    await audit(
        ctx,
        Action.ORG_CREATE,
        target_type="org",
        target_id=org.id,
        org_id=org.id,
        detail={"name": name},
    )
    return org


async def get_org(ctx: Context, org_id: uuid.UUID) -> Organization:
    org = await _org(ctx, org_id)
    require(ctx, Action.ORG_READ, Scope(org_id=org.id), target_type="org", target_id=org.id)
    return org


async def update_org(ctx: Context, org_id: uuid.UUID, name: str | None) -> Organization:
    org = await _org(ctx, org_id)
    require(ctx, Action.ORG_UPDATE, Scope(org_id=org.id), target_type="org", target_id=org.id)
    if name is not None and name != org.name:
        old, org.name = org.name, name
        await _unique(ctx, f"An organization named {name!r}")
        await announce_tenancy_changed(ctx.db)
        await audit(
            ctx,
            Action.ORG_UPDATE,
            target_type="org",
            target_id=org.id,
            org_id=org.id,
            detail={"name": [old, name]},
        )
    return org


async def delete_org(ctx: Context, org_id: uuid.UUID) -> None:
    org = await _org(ctx, org_id, lock=True)
    require(ctx, Action.ORG_DELETE, Scope(org_id=org.id), target_type="org", target_id=org.id)
    if await repository.org_has_groups(ctx.db, org.id):
        raise Conflict("Delete the organization's groups first.", code="org_not_empty")
    await _check_guards(ctx, "org", org.id)
    await ctx.db.delete(org)
    await announce_tenancy_changed(ctx.db)
    await audit(
        ctx,
        Action.ORG_DELETE,
        target_type="org",
        target_id=org.id,
        org_id=org.id,
        detail={"name": org.name},
    )
    await ctx.db.flush()


# ---- groups --------------------------------------------------------------------------------


async def _group(ctx: Context, group_id: uuid.UUID, *, lock: bool = False) -> Group:
    group = await ctx.db.get(Group, group_id, with_for_update=lock, populate_existing=lock)
    if group is None:
        raise NotFound("No such group.", code="group_not_found")
    return group


def _group_scope(group: Group) -> Scope:
    return Scope.of_group(group.id, group.org_id)


async def list_groups(
    ctx: Context, org_id: uuid.UUID, page: PageRequest
) -> tuple[list[Group], str | None]:
    await get_org(ctx, org_id)
    actor = ctx.actor
    visible: frozenset[uuid.UUID] | None = None
    if not actor.is_super_admin and org_id not in actor.org_admin_of:
        visible = frozenset(set(actor.group_admin_of) | set(actor.member_of))
    return page_of(await repository.list_groups(ctx.db, org_id, visible, page), page)


async def create_group(ctx: Context, org_id: uuid.UUID, name: str) -> Group:
    org = await _org(ctx, org_id)
    require(ctx, Action.GROUP_CREATE, Scope(org_id=org.id), target_type="org", target_id=org.id)
    group = Group(id=new_id(), org_id=org.id, name=name, created_at=ctx.now)
    ctx.db.add(group)
    await _unique(ctx, f"A group named {name!r} in this organization")
    await audit(
        ctx,
        Action.GROUP_CREATE,
        target_type="group",
        target_id=group.id,
        org_id=org.id,
        group_id=group.id,
        detail={"name": name},
    )
    return group


async def get_group(ctx: Context, group_id: uuid.UUID) -> Group:
    group = await _group(ctx, group_id)
    require(ctx, Action.GROUP_READ, _group_scope(group), target_type="group", target_id=group.id)
    return group


async def update_group(ctx: Context, group_id: uuid.UUID, name: str | None) -> Group:
    group = await _group(ctx, group_id)
    require(ctx, Action.GROUP_UPDATE, _group_scope(group), target_type="group", target_id=group.id)
    if name is not None and name != group.name:
        old, group.name = group.name, name
        await _unique(ctx, f"A group named {name!r} in this organization")
        await announce_tenancy_changed(ctx.db)
        await audit(
            ctx,
            Action.GROUP_UPDATE,
            target_type="group",
            target_id=group.id,
            org_id=group.org_id,
            group_id=group.id,
            detail={"name": [old, name]},
        )
    return group


async def delete_group(ctx: Context, group_id: uuid.UUID) -> None:
    group = await _group(ctx, group_id, lock=True)
    require(ctx, Action.GROUP_DELETE, _group_scope(group), target_type="group", target_id=group.id)
    if await repository.group_has_members(ctx.db, group.id):
        raise Conflict("Remove the group's members first.", code="group_not_empty")
    await _check_guards(ctx, "group", group.id)
    await ctx.db.delete(group)
    await announce_tenancy_changed(ctx.db)
    await audit(
        ctx,
        Action.GROUP_DELETE,
        target_type="group",
        target_id=group.id,
        org_id=group.org_id,
        group_id=group.id,
        detail={"name": group.name},
    )
    await ctx.db.flush()


# ---- users ---------------------------------------------------------------------------------


async def _user(ctx: Context, user_id: uuid.UUID) -> tuple[User, UserScope]:
    user = await repository.user_by_id(ctx.db, user_id)
    if user is None:
        raise NotFound("No such user.", code="user_not_found")
    return user, await repository.user_scope(ctx.db, user)


async def list_users(
    ctx: Context,
    *,
    q: str | None,
    org_id: uuid.UUID | None,
    group_id: uuid.UUID | None,
    page: PageRequest,
) -> tuple[list[User], str | None]:
    require(ctx, Action.USER_LIST)
    rows = await repository.list_users(
        ctx.db, ctx.actor, q=q, org_id=org_id, group_id=group_id, page=page
    )
    return page_of(rows, page)


async def get_user(ctx: Context, user_id: uuid.UUID) -> User:
    user, scope = await _user(ctx, user_id)
    require(ctx, Action.USER_READ, Scope(user=scope), target_type="user", target_id=user.id)
    return user


async def create_user(
    ctx: Context,
    *,
    email: str,
    name: str,
    initial_password: str,
    group_id: uuid.UUID | None,
    role: str | None,
) -> User:
    group = await _group(ctx, group_id) if group_id is not None else None
    scope = _group_scope(group) if group else Scope()
    require(ctx, Action.USER_CREATE, scope, target_type="user", target_id=email)
    if group is None and role is not None:
        raise BadRequest("A role needs a group.", code="role_needs_group")
    if await repository.user_by_email(ctx.db, email) is not None:
        raise Conflict("A user with this email already exists.", code="email_taken")
    check_new_password(initial_password, email=email, name=name)
    user = User(
        id=new_id(),
        email=email,
        name=name,
        password_hash=await passwords.hash_password(initial_password),
        must_change_password=True,
        is_super_admin=False,
        active=True,
        created_at=ctx.now,
        password_changed_at=ctx.now,
    )
    ctx.db.add(user)
    await _unique(ctx, "A user with this email", code="email_taken")
    if group is not None:
        ctx.db.add(
            Membership(
                user_id=user.id,
                group_id=group.id,
                role=role or "member",
                expires_at=None,
                created_at=ctx.now,
            )
        )
        await ctx.db.flush()
    await audit(
        ctx,
        Action.USER_CREATE,
        target_type="user",
        target_id=user.id,
        org_id=group.org_id if group else None,
        group_id=group.id if group else None,
        detail={"email": email, "role": role or ("member" if group else None)},
    )
    return user


async def update_user(
    ctx: Context, user_id: uuid.UUID, *, name: str | None, active: bool | None
) -> User:
    user, scope = await _user(ctx, user_id)
    target = Scope(user=scope)
    # The route's own permission holds whatever the body carries, an empty body included;
    # a field that needs more adds its check on top.
    require(ctx, Action.USER_RENAME, target, target_type="user", target_id=user.id)
    if active is not None:
        require(ctx, Action.USER_SET_ACTIVE, target, target_type="user", target_id=user.id)
        if user.id == ctx.actor.user_id and not active:
            raise Conflict("You cannot deactivate yourself.", code="cannot_deactivate_self")
        if not active and user.is_super_admin:
            await ensure_another_super_admin(ctx.db, user.id)
    changes: dict[str, object] = {}
    if name is not None and name != user.name:
        changes["name"] = [user.name, name]
        user.name = name
    if active is not None and active != user.active:
        changes["active"] = [user.active, active]
        user.active = active
        if not active:
            await repository.revoke_login_sessions(ctx.db, user.id, ctx.now)
            await deactivated.results(ctx.db, user.id, ctx.now)
    if changes:
        await announce_user_changed(ctx.db, user.id)
        org_id, group_id = (None, None)
        if len(scope.groups) == 1:
            group_id, org_id = next(iter(scope.groups.items()))
        action = "user.deactivate" if changes.get("active") == [True, False] else "user.update"
        await audit(
            ctx,
            action,
            target_type="user",
            target_id=user.id,
            org_id=org_id,
            group_id=group_id,
            detail=changes,
        )
    await ctx.db.flush()
    return user


# ---- memberships ---------------------------------------------------------------------------


async def list_members(
    ctx: Context, group_id: uuid.UUID, page: PageRequest
) -> tuple[list[MembershipView], str | None]:
    group = await _group(ctx, group_id)
    require(ctx, Action.MEMBERS_READ, _group_scope(group), target_type="group", target_id=group.id)
    rows = await repository.memberships(ctx.db, group_id=group.id, page=page)
    return page_of(rows, page, lambda v: (v.membership.created_at, v.membership.user_id))


async def my_memberships(ctx: Context) -> list[MembershipView]:
    return await repository.memberships(ctx.db, user_id=ctx.actor.user_id)


async def put_member(
    ctx: Context,
    group_id: uuid.UUID,
    user_id: uuid.UUID,
    *,
    role: str,
    expires_at: datetime | None,
) -> MembershipView:
    group = await _group(ctx, group_id)
    scope = _group_scope(group)
    require(ctx, Action.MEMBERS_MANAGE, scope, target_type="user", target_id=user_id)
    user, user_scope = await _user(ctx, user_id)
    # An admin may add only people they can already see; the super admin anyone.
    require(ctx, Action.USER_READ, Scope(user=user_scope), target_type="user", target_id=user.id)
    if expires_at is not None and role != "guest":
        raise BadRequest("Only guest memberships expire.", code="only_guests_expire")
    if expires_at is not None and expires_at.tzinfo is None:
        raise BadRequest("expires_at needs a time zone.", code="naive_datetime")
    membership, changed = await repository.put_membership(
        ctx.db, user.id, group.id, role=role, expires_at=expires_at, now=ctx.now
    )
    if changed and expires_at is not None and expires_at <= ctx.now:
        await membership_ended.results(ctx.db, user.id, group.id, ctx.now)
    if changed:
        await announce_user_changed(ctx.db, user.id)
        await audit(
            ctx,
            "group.members.put",
            target_type="user",
            target_id=user.id,
            org_id=group.org_id,
            group_id=group.id,
            detail={"role": role, "expires_at": expires_at.isoformat() if expires_at else None},
        )
    org = await _org(ctx, group.org_id)
    return MembershipView(membership, user, group, org)


async def delete_member(ctx: Context, group_id: uuid.UUID, user_id: uuid.UUID) -> None:
    group = await _group(ctx, group_id)
    require(ctx, Action.MEMBERS_MANAGE, _group_scope(group), target_type="user", target_id=user_id)
    if not await repository.remove_membership(ctx.db, group.id, user_id):
        raise NotFound("That user is not a member of this group.", code="membership_not_found")
    await membership_ended.results(ctx.db, user_id, group.id, ctx.now)
    await announce_user_changed(ctx.db, user_id)
    await audit(
        ctx,
        "group.members.delete",
        target_type="user",
        target_id=user_id,
        org_id=group.org_id,
        group_id=group.id,
    )
    await ctx.db.flush()


# ---- admin grants --------------------------------------------------------------------------


async def list_org_admins(
    ctx: Context, org_id: uuid.UUID, page: PageRequest
) -> tuple[list[GrantView], str | None]:
    org = await _org(ctx, org_id)
    require(ctx, Action.ORG_ADMINS_READ, Scope(org_id=org.id), target_type="org", target_id=org.id)
    return page_of(await repository.grants(ctx.db, org_id=org.id, page=page), page, _grant_key)


async def list_group_admins(
    ctx: Context, group_id: uuid.UUID, page: PageRequest
) -> tuple[list[GrantView], str | None]:
    group = await _group(ctx, group_id)
    require(
        ctx, Action.GROUP_ADMINS_READ, _group_scope(group), target_type="group", target_id=group.id
    )
    rows = await repository.grants(ctx.db, group_id=group.id, page=page)
    return page_of(rows, page, _grant_key)


def _grant_key(view: GrantView) -> tuple[Any, ...]:
    return (view.grant.created_at, view.grant.id)


async def put_org_admin(ctx: Context, org_id: uuid.UUID, user_id: uuid.UUID) -> GrantView:
    org = await _org(ctx, org_id)
    require(
        ctx, Action.ORG_ADMINS_MANAGE, Scope(org_id=org.id), target_type="user", target_id=user_id
    )
    user, user_scope = await _user(ctx, user_id)
    require(ctx, Action.USER_READ, Scope(user=user_scope), target_type="user", target_id=user.id)
    return await _put_grant(ctx, user, "org_admin", org_id=org.id, group_id=None, scope_org=org.id)


async def put_group_admin(ctx: Context, group_id: uuid.UUID, user_id: uuid.UUID) -> GrantView:
    group = await _group(ctx, group_id)
    require(
        ctx, Action.GROUP_ADMINS_MANAGE, _group_scope(group), target_type="user", target_id=user_id
    )
    user, user_scope = await _user(ctx, user_id)
    require(ctx, Action.USER_READ, Scope(user=user_scope), target_type="user", target_id=user.id)
    return await _put_grant(
        ctx, user, "group_admin", org_id=None, group_id=group.id, scope_org=group.org_id
    )


async def _put_grant(
    ctx: Context,
    user: User,
    role: str,
    *,
    org_id: uuid.UUID | None,
    group_id: uuid.UUID | None,
    scope_org: uuid.UUID,
) -> GrantView:
    granted = await repository.put_grant(
        ctx.db,
        user.id,
        role,
        org_id=org_id,
        group_id=group_id,
        now=ctx.now,
        new_id=new_id(),
    )
    if granted:
        await announce_user_changed(ctx.db, user.id)
        await audit(
            ctx,
            f"{role}.grant",
            target_type="user",
            target_id=user.id,
            org_id=scope_org,
            group_id=group_id,
        )
    views = await repository.grants(ctx.db, user_id=user.id, org_id=org_id, group_id=group_id)
    return views[0]


async def delete_org_admin(ctx: Context, org_id: uuid.UUID, user_id: uuid.UUID) -> None:
    org = await _org(ctx, org_id)
    require(
        ctx, Action.ORG_ADMINS_MANAGE, Scope(org_id=org.id), target_type="user", target_id=user_id
    )
    await _delete_grant(ctx, user_id, "org_admin", org_id=org.id, group_id=None, scope_org=org.id)


async def delete_group_admin(ctx: Context, group_id: uuid.UUID, user_id: uuid.UUID) -> None:
    group = await _group(ctx, group_id)
    require(
        ctx, Action.GROUP_ADMINS_MANAGE, _group_scope(group), target_type="user", target_id=user_id
    )
    await _delete_grant(
        ctx, user_id, "group_admin", org_id=None, group_id=group.id, scope_org=group.org_id
    )


async def _delete_grant(
    ctx: Context,
    user_id: uuid.UUID,
    role: str,
    *,
    org_id: uuid.UUID | None,
    group_id: uuid.UUID | None,
    scope_org: uuid.UUID,
) -> None:
    if not await repository.remove_grant(ctx.db, user_id, org_id=org_id, group_id=group_id):
        raise NotFound("That user holds no such admin role.", code="grant_not_found")
    await announce_user_changed(ctx.db, user_id)
    await audit(
        ctx,
        f"{role}.revoke",
        target_type="user",
        target_id=user_id,
        org_id=scope_org,
        group_id=group_id,
    )
    await ctx.db.flush()


# ---- password reset, super admins, recovery ------------------------------------------------


def _only_group(scope: UserScope) -> tuple[uuid.UUID | None, uuid.UUID | None]:
    """The organization and group of a user in exactly one group, for their audit entries."""
    if len(scope.groups) == 1:
        group_id, org_id = next(iter(scope.groups.items()))
        return org_id, group_id
    return None, None


async def reset_password(ctx: Context, user_id: uuid.UUID, *, initial_password: str) -> User:
    """An admin who manages the user gives them a new initial password."""
    if user_id == ctx.actor.user_id:
        raise Conflict(
            "Change your own password with the password change instead.",
            code="cannot_reset_own_password",
        )
    user, scope = await _user(ctx, user_id)
    require(
        ctx, Action.USER_RESET_PASSWORD, Scope(user=scope), target_type="user", target_id=user.id
    )
    check_new_password(initial_password, email=user.email, name=user.name)
    await set_initial_password(ctx.db, user, initial_password, ctx.now)
    org_id, group_id = _only_group(scope)
    await audit(
        ctx,
        Action.USER_RESET_PASSWORD,
        target_type="user",
        target_id=user.id,
        org_id=org_id,
        group_id=group_id,
    )
    return user


async def grant_super_admin(ctx: Context, user_id: uuid.UUID) -> None:
    require(ctx, Action.SUPER_ADMIN_MANAGE, target_type="user", target_id=user_id)
    user, _ = await _user(ctx, user_id)
    if user.is_super_admin:
        return
    user.is_super_admin = True
    await announce_user_changed(ctx.db, user.id)
    await audit(ctx, "super_admin.grant", target_type="user", target_id=user.id)
    await ctx.db.flush()


async def revoke_super_admin(ctx: Context, user_id: uuid.UUID) -> None:
    """Refused for the last active super admin, also when two revokes race: both lock every
    active super admin first, so the second sees what the first did."""
    require(ctx, Action.SUPER_ADMIN_MANAGE, target_type="user", target_id=user_id)
    await ensure_another_super_admin(ctx.db, user_id)
    user, _ = await _user(ctx, user_id)
    if not user.is_super_admin:
        return
    user.is_super_admin = False
    await announce_user_changed(ctx.db, user.id)
    await audit(ctx, "super_admin.revoke", target_type="user", target_id=user.id)
    await ctx.db.flush()


async def ensure_another_super_admin(db: AsyncSession, user_id: uuid.UUID) -> None:
    """Raise 409 last_super_admin when `user_id` is the only active super admin. The rows stay
    locked until the transaction ends, so call this before revoking or deactivating them."""
    locked = await repository.lock_super_admins(db, also=user_id)
    target = next((u for u in locked if u.id == user_id), None)
    if target is None or not (target.is_super_admin and target.active):
        return
    if not any(u.id != user_id and u.is_super_admin and u.active for u in locked):
        raise Conflict(
            "This is the last active super admin; make someone else super admin first.",
            code="last_super_admin",
        )


# ---- for other domains ---------------------------------------------------------------------


async def group_org(db: AsyncSession, group_id: uuid.UUID) -> uuid.UUID | None:
    """The organization a group belongs to, or None when there is no such group."""
    group = await db.get(Group, group_id)
    return None if group is None else group.org_id


async def org_exists(db: AsyncSession, org_id: uuid.UUID) -> bool:
    return await db.get(Organization, org_id) is not None


async def scope_of_group(db: AsyncSession, group_id: uuid.UUID) -> Scope:
    """The scope of a group, for a permission check; NotFound when there is no such group."""
    org_id = await group_org(db, group_id)
    if org_id is None:
        raise NotFound("No such group.", code="group_not_found")
    return Scope.of_group(group_id, org_id)


async def user_scope_of(db: AsyncSession, user_id: uuid.UUID) -> UserScope | None:
    user = await repository.user_by_id(db, user_id)
    return None if user is None else await repository.user_scope(db, user)


async def names(db: AsyncSession, kind: str, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, str]:
    """Display names of organizations, groups or users by id."""
    return await repository.names(db, kind, ids)


async def groups_of_org(db: AsyncSession, org_id: uuid.UUID) -> list[Group]:
    return list(await repository.groups_in_org(db, org_id))


async def member_ids(db: AsyncSession, group_id: uuid.UUID, now: datetime) -> list[uuid.UUID]:
    """The group's members and guests at `now`: a guest whose membership expired is no member."""
    return await repository.member_ids(db, group_id, now)


async def full_member_ids(db: AsyncSession, group_id: uuid.UUID) -> list[uuid.UUID]:
    """The group's members, not its guests."""
    return await repository.full_member_ids(db, group_id)


async def member_scope_of(db: AsyncSession, user_id: uuid.UUID) -> UserScope:
    """A user's groups as a full member (no guest memberships): whose admins look after what
    is theirs alone, such as their wallet's alert."""
    return await repository.member_scope(db, user_id)


async def members_of_groups(
    db: AsyncSession, group_ids: Sequence[uuid.UUID], now: datetime | None = None
) -> dict[uuid.UUID, list[uuid.UUID]]:
    """Each group's member ids at `now` (expired guests left out), ordered by name, in one
    query; without `now`, expired guests too, for a caller that checks them itself."""
    return await repository.members_of_groups(db, group_ids, now)


async def emails(db: AsyncSession, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, str]:
    return await repository.emails(db, ids)


async def orgs_of_groups(db: AsyncSession, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, uuid.UUID]:
    """Each existing group's organization, in one query."""
    return await repository.orgs_of_groups(db, ids)


async def membership_org(
    db: AsyncSession, user_id: uuid.UUID, group_id: uuid.UUID, now: datetime
) -> uuid.UUID | None:
    """The organization of a group the user is in now (a guest until expiry), else None."""
    return await repository.membership_org(db, user_id, group_id, now)


async def active_among(db: AsyncSession, ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
    """Which of these users are active (not deactivated)."""
    return await repository.active_among(db, ids)


async def admin_ids(
    db: AsyncSession, *, org_id: uuid.UUID | None = None, group_id: uuid.UUID | None = None
) -> list[uuid.UUID]:
    """The active admins of an organization, or of a group (its own grants only), in a stable
    order."""
    found = await repository.grants(db, org_id=org_id, group_id=group_id)
    ids = sorted({view.user.id for view in found if view.user.active}, key=str)
    return ids


async def super_admin_ids(db: AsyncSession) -> list[uuid.UUID]:
    """The active super admins, to tell of what needs one of them."""
    return await repository.super_admin_ids(db)


async def forget_sign_in_failures(db: AsyncSession, now: datetime) -> None:
    """Failed sign-ins older than the longest throttling window no longer matter."""
    await repository.forget_failures_before(db, now - LONGEST_WINDOW)


async def current_memberships_among(
    db: AsyncSession, pairs: Sequence[tuple[uuid.UUID, uuid.UUID]], now: datetime
) -> set[tuple[uuid.UUID, uuid.UUID]]:
    """Which of these (user, group) pairs are memberships now."""
    return await repository.current_among(db, pairs, now)


async def is_current_member(
    db: AsyncSession, user_id: uuid.UUID, group_id: uuid.UUID, now: datetime
) -> bool:
    """Whether the user is in the group now (a guest until their membership expires)."""
    return await repository.is_current_member(db, user_id, group_id, now)


async def signed_in_email(
    db: AsyncSession, user_id: uuid.UUID, login_id: uuid.UUID, now: datetime
) -> str | None:
    """The user's email while they are active and still signed in with `login_id`, else None
    (other domains ask this, for instance before letting someone into a session's page)."""
    login = await db.get(LoginSession, login_id)
    if (
        login is None
        or login.user_id != user_id
        or login.revoked_at is not None
        or login.expires_at <= now
    ):
        return None
    user = await db.get(User, user_id)
    return user.email if user is not None and user.active else None


async def event_scopes(
    db: AsyncSession, user_ids: Sequence[uuid.UUID], group_ids: Sequence[uuid.UUID], now: datetime
) -> Scopes:
    """For the live stream: the groups each user is in now, and each group's organization."""
    return Scopes(
        user_groups=await repository.groups_of_users(db, user_ids, now) if user_ids else {},
        group_orgs=await repository.orgs_of_groups(db, group_ids) if group_ids else {},
    )


def user_keys_reached(
    org_ids: frozenset[uuid.UUID], group_ids: frozenset[uuid.UUID]
) -> CompoundSelect[tuple[str]]:
    """The users the admins of these organizations and groups reach, as a subquery of text
    keys (each by id and by email), for filtering rows that name a user either way."""
    return repository.user_keys_reached(org_ids, group_ids)


def groups_of_orgs(org_ids: frozenset[uuid.UUID]) -> Select[uuid.UUID]:
    """The groups of these organizations, as a subquery of ids."""
    return repository.groups_of_orgs(org_ids)
