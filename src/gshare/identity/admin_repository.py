"""Queries of account-level administration: the users an admin reaches, and the super admin
rows locked in one fixed order."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import CompoundSelect, String, and_, cast, or_, select, union, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from gshare.identity.models import AdminGrant, Group, Membership, User


def users_reached(
    org_ids: frozenset[uuid.UUID], group_ids: frozenset[uuid.UUID]
) -> CompoundSelect[tuple[uuid.UUID]]:
    """Ids of the users in these organizations or groups: members and guests (expired guests
    too), and admins of the organizations or of groups in them."""
    members = (
        select(Membership.user_id)
        .join(Group, Group.id == Membership.group_id)
        .where(or_(Group.org_id.in_(org_ids), Group.id.in_(group_ids)))
    )
    admins = (
        select(AdminGrant.user_id)
        .outerjoin(Group, Group.id == AdminGrant.group_id)
        .where(
            or_(
                AdminGrant.org_id.in_(org_ids),
                Group.org_id.in_(org_ids),
                AdminGrant.group_id.in_(group_ids),
            )
        )
    )
    return union(members, admins)


def user_keys_reached(
    org_ids: frozenset[uuid.UUID], group_ids: frozenset[uuid.UUID]
) -> CompoundSelect[tuple[str]]:
    """The same users as text, once by id and once by email: audit entries name their target
    user by id, and a failed sign-in by the email that was typed."""
    reached = users_reached(org_ids, group_ids).scalar_subquery()
    return union_all(
        select(cast(User.id, String)).where(User.id.in_(reached)),
        select(User.email).where(User.id.in_(reached)),
    )


async def lock_super_admins(db: AsyncSession, also: uuid.UUID) -> Sequence[User]:
    """Lock every active super admin, and user `also`, in id order so that concurrent changes
    queue instead of deadlocking. A row changed by a transaction this one waited for is read
    again: a super admin revoked meanwhile is no longer among the rows returned."""
    query = (
        select(User)
        .where(or_(and_(User.is_super_admin.is_(True), User.active.is_(True)), User.id == also))
        .order_by(User.id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    return (await db.scalars(query)).all()
