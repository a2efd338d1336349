"""Identity responses: memberships, admin grants and the caller in the API's shapes."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from gshare.identity import repository
from gshare.identity.capabilities import capabilities_of
from gshare.identity.principals import Principal
from gshare.identity.repository import GrantView, MembershipView
from gshare.identity.schemas import (
    AdminGrantOut,
    CapabilitiesOut,
    MembershipOut,
    MeOut,
    RoleGrantOut,
    UserOut,
)


def membership_out(view: MembershipView, now: datetime) -> MembershipOut:
    m = view.membership
    return MembershipOut(
        user_id=view.user.id,
        user_email=view.user.email,
        user_name=view.user.name,
        group_id=view.group.id,
        group_name=view.group.name,
        org_id=view.org.id,
        org_name=view.org.name,
        role=m.role,
        expires_at=m.expires_at,
        active=m.expires_at is None or m.expires_at > now,
        created_at=m.created_at,
    )


def grant_out(view: GrantView) -> AdminGrantOut:
    g = view.grant
    return AdminGrantOut(
        user_id=view.user.id,
        user_email=view.user.email,
        user_name=view.user.name,
        role=g.role,
        org_id=g.org_id,
        group_id=g.group_id,
        created_at=g.created_at,
    )


async def me_out(db: AsyncSession, principal: Principal, now: datetime) -> MeOut:
    """The caller: account, roles, memberships and capabilities, in two queries."""
    roles = [RoleGrantOut(role="super_admin")] if principal.is_super_admin else []
    for view in await repository.grants(db, user_id=principal.user_id):
        roles.append(
            RoleGrantOut(
                role=view.grant.role,
                org_id=view.org_id,
                group_id=view.grant.group_id,
                org_name=view.org_name,
                group_name=view.group_name,
            )
        )
    memberships = await repository.memberships(db, user_id=principal.user_id)
    return MeOut(
        user=UserOut(
            id=principal.user_id,
            email=principal.email,
            name=principal.name,
            active=principal.active,
            must_change_password=principal.must_change_password,
            is_super_admin=principal.is_super_admin,
            created_at=principal.created_at,
        ),
        roles=roles,
        memberships=[membership_out(v, now) for v in memberships],
        capabilities=CapabilitiesOut.model_validate(capabilities_of(principal.actor)),
        csrf_token=principal.csrf_token,
        must_change_password=principal.must_change_password,
    )
