"""Every identity query lives here."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import (
    ColumnElement,
    CompoundSelect,
    Select,
    SQLColumnExpression,
    String,
    and_,
    cast,
    delete,
    exists,
    func,
    literal,
    or_,
    select,
    text,
    true,
    tuple_,
    union,
    union_all,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from gshare.identity.models import (
    AdminGrant,
    Group,
    LoginSession,
    Membership,
    Organization,
    SignInFailure,
    User,
)
from gshare.identity.permissions import Actor, UserScope
from gshare.kit.pagination import PageRequest


async def user_by_email(db: AsyncSession, email: str) -> User | None:
    return await db.scalar(select(User).where(User.email == email.lower()))


async def orgs_of_groups(db: AsyncSession, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, uuid.UUID]:
    if not ids:
        return {}
    rows = await db.execute(select(Group.id, Group.org_id).where(Group.id.in_(list(set(ids)))))
    return {r[0]: r[1] for r in rows}


_MEMBERSHIP_ORG = text(
    "SELECT g.org_id FROM groups g JOIN memberships m ON m.group_id = g.id "
    "WHERE g.id = :group_id AND m.user_id = :user_id "
    "AND (m.expires_at IS NULL OR m.expires_at > :now)"
)


async def membership_org(
    db: AsyncSession, user_id: uuid.UUID, group_id: uuid.UUID, now: datetime
) -> uuid.UUID | None:
    """The group's organization while the user is in the group now, else None (one query)."""
    found = await db.execute(
        _MEMBERSHIP_ORG, {"user_id": user_id, "group_id": group_id, "now": now}
    )
    row = found.first()
    return None if row is None else row[0]


async def super_admin_ids(db: AsyncSession) -> list[uuid.UUID]:
    found = await db.scalars(
        select(User.id).where(User.is_super_admin, User.active).order_by(User.id)
    )
    return list(found)


async def active_among(db: AsyncSession, ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
    if not ids:
        return set()
    return set(await db.scalars(select(User.id).where(User.id.in_(list(ids)), User.active)))


async def user_by_id(db: AsyncSession, user_id: uuid.UUID) -> User | None:
    return await db.get(User, user_id)


async def any_super_admin(db: AsyncSession) -> bool:
    return bool(await db.scalar(select(exists().where(User.is_super_admin.is_(True)))))


async def session_with_user(
    db: AsyncSession, token_hash: bytes
) -> tuple[LoginSession, User] | None:
    row = (
        await db.execute(
            select(LoginSession, User)
            .join(User, User.id == LoginSession.user_id)
            .where(LoginSession.token_hash == token_hash)
        )
    ).first()
    return (row[0], row[1]) if row else None


async def touch_login_session(db: AsyncSession, login_id: uuid.UUID, now: datetime) -> None:
    await db.execute(
        update(LoginSession).where(LoginSession.id == login_id).values(last_seen_at=now)
    )


async def revoke_login_sessions(
    db: AsyncSession, user_id: uuid.UUID, now: datetime, *, keep: uuid.UUID | None = None
) -> None:
    query = update(LoginSession).where(
        LoginSession.user_id == user_id, LoginSession.revoked_at.is_(None)
    )
    if keep is not None:
        query = query.where(LoginSession.id != keep)
    await db.execute(query.values(revoked_at=now))


@dataclass(frozen=True)
class RoleRow:
    kind: str  # "org_admin" | "group_admin" | "member" | "guest"
    org_id: uuid.UUID
    group_id: uuid.UUID | None
    expires_at: datetime | None


async def role_rows(db: AsyncSession, user_id: uuid.UUID) -> list[RoleRow]:
    """Every admin grant and membership of a user, in one round trip."""
    grants = (
        select(
            AdminGrant.role.label("kind"),
            func.coalesce(AdminGrant.org_id, Group.org_id).label("org_id"),
            AdminGrant.group_id.label("group_id"),
            literal(None).label("expires_at"),
        )
        .select_from(AdminGrant)
        .outerjoin(Group, Group.id == AdminGrant.group_id)
        .where(AdminGrant.user_id == user_id)
    )
    members = (
        select(
            Membership.role.label("kind"),
            Group.org_id.label("org_id"),
            Membership.group_id.label("group_id"),
            Membership.expires_at.label("expires_at"),
        )
        .join(Group, Group.id == Membership.group_id)
        .where(Membership.user_id == user_id)
    )
    rows = (await db.execute(grants.union_all(members))).all()
    return [RoleRow(r.kind, r.org_id, r.group_id, r.expires_at) for r in rows]


def actor_from_rows(user: User, rows: list[RoleRow], now: datetime) -> Actor:
    org_admin: set[uuid.UUID] = set()
    group_admin: dict[uuid.UUID, uuid.UUID] = {}
    member: dict[uuid.UUID, uuid.UUID] = {}
    guest: dict[uuid.UUID, uuid.UUID] = {}
    for row in rows:
        if row.kind == "org_admin":
            org_admin.add(row.org_id)
        elif row.group_id is None:
            continue
        elif row.kind == "group_admin":
            group_admin[row.group_id] = row.org_id
        elif row.kind == "member":
            member[row.group_id] = row.org_id
        elif row.kind == "guest" and (row.expires_at is None or row.expires_at > now):
            guest[row.group_id] = row.org_id
    return Actor(
        user_id=user.id,
        email=user.email,
        is_super_admin=user.is_super_admin,
        org_admin_of=frozenset(org_admin),
        group_admin_of=group_admin,
        member_of=member,
        guest_of=guest,
    )


async def user_scope(db: AsyncSession, user: User) -> UserScope:
    """Where a target user stands, counting expired guest memberships too."""
    rows = await role_rows(db, user.id)
    return UserScope(
        user_id=user.id,
        groups={r.group_id: r.org_id for r in rows if r.kind in ("member", "guest") and r.group_id},
        org_admin_of=frozenset(r.org_id for r in rows if r.kind == "org_admin"),
        group_admin_of={
            r.group_id: r.org_id for r in rows if r.kind == "group_admin" and r.group_id
        },
        is_super_admin=user.is_super_admin,
    )


async def member_scope(db: AsyncSession, user_id: uuid.UUID) -> UserScope:
    """Where a user stands as a full member: the groups they belong to as a member (never as a
    guest, current or expired), and no admin grants of their own."""
    rows = await role_rows(db, user_id)
    return UserScope(
        user_id=user_id,
        groups={r.group_id: r.org_id for r in rows if r.kind == "member" and r.group_id},
    )


async def full_member_ids(db: AsyncSession, group_id: uuid.UUID) -> list[uuid.UUID]:
    """The group's members, its guests left out."""
    rows = await db.scalars(
        select(Membership.user_id).where(
            Membership.group_id == group_id, Membership.role == "member"
        )
    )
    return list(rows)


async def failure_times(
    db: AsyncSession,
    *,
    email_key: str | None = None,
    client: str | None = None,
    since: datetime,
) -> list[datetime]:
    """When sign-ins failed since `since`, for one account or one client."""
    key = SignInFailure.email_key == email_key if email_key else SignInFailure.client == client
    rows = await db.scalars(
        select(SignInFailure.at).where(key, SignInFailure.at >= since).order_by(SignInFailure.at)
    )
    return list(rows)


async def add_failure(
    db: AsyncSession, email_key: str, client: str, at: datetime, *, keep: timedelta
) -> None:
    """Record a failure, and forget this account's and client's failures older than `keep`."""
    await db.execute(
        delete(SignInFailure).where(
            or_(SignInFailure.email_key == email_key, SignInFailure.client == client),
            SignInFailure.at < at - keep,
        )
    )
    db.add(SignInFailure(email_key=email_key, client=client, at=at))
    await db.flush()


def _after(
    page: PageRequest, created: SQLColumnExpression[datetime], ident: SQLColumnExpression[uuid.UUID]
) -> ColumnElement[bool]:
    after = page.after_time_and_id()
    assert after is not None
    at, after_id = after
    return tuple_(created, ident) > tuple_(literal(at), literal(after_id))


async def list_orgs(
    db: AsyncSession, visible: frozenset[uuid.UUID] | None, q: str | None, page: PageRequest
) -> Sequence[Organization]:
    query = select(Organization)
    if visible is not None:
        query = query.where(Organization.id.in_(visible))
    if q:
        query = query.where(Organization.name.ilike(f"%{_escape_like(q)}%", escape="\\"))
    if page.after is not None:
        query = query.where(_after(page, Organization.created_at, Organization.id))
    query = query.order_by(Organization.created_at, Organization.id).limit(page.limit + 1)
    return (await db.scalars(query)).all()


async def org_has_groups(db: AsyncSession, org_id: uuid.UUID) -> bool:
    return bool(await db.scalar(select(exists().where(Group.org_id == org_id))))


async def list_groups(
    db: AsyncSession,
    org_id: uuid.UUID,
    visible: frozenset[uuid.UUID] | None,
    page: PageRequest,
) -> Sequence[Group]:
    query = select(Group).where(Group.org_id == org_id)
    if visible is not None:
        query = query.where(Group.id.in_(visible))
    if page.after is not None:
        query = query.where(_after(page, Group.created_at, Group.id))
    query = query.order_by(Group.created_at, Group.id).limit(page.limit + 1)
    return (await db.scalars(query)).all()


async def group_has_members(db: AsyncSession, group_id: uuid.UUID) -> bool:
    return bool(await db.scalar(select(exists().where(Membership.group_id == group_id))))


def _escape_like(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


async def list_users(
    db: AsyncSession,
    actor: Actor,
    *,
    q: str | None,
    org_id: uuid.UUID | None,
    group_id: uuid.UUID | None,
    page: PageRequest,
) -> Sequence[User]:
    """The users `actor` may see. The group and organization filters match only memberships in
    groups the actor may see, so naming someone else's group or organization finds nobody
    rather than revealing who belongs to it."""
    query = select(User)
    # Groups whose memberships the actor may see: all of it for the super admin.
    seen_group: ColumnElement[bool] = true()
    if not actor.is_super_admin:
        admin_groups = set(actor.group_admin_of)
        seen_groups = admin_groups | set(actor.member_of)
        seen_group = or_(Group.org_id.in_(actor.org_admin_of), Group.id.in_(seen_groups))
        in_groups = exists().where(
            Membership.user_id == User.id, Membership.group_id == Group.id, seen_group
        )
        granted = exists().where(
            AdminGrant.user_id == User.id,
            or_(AdminGrant.org_id.in_(actor.org_admin_of), AdminGrant.group_id.in_(admin_groups)),
        )
        query = query.where(or_(User.id == actor.user_id, in_groups, granted))
    if q:
        pattern = f"%{_escape_like(q.lower())}%"
        query = query.where(
            or_(User.email.like(pattern, escape="\\"), User.name.ilike(pattern, escape="\\"))
        )
    if group_id is not None:
        query = query.where(
            exists().where(
                Membership.user_id == User.id,
                Membership.group_id == Group.id,
                Group.id == group_id,
                seen_group,
            )
        )
    if org_id is not None:
        query = query.where(
            exists().where(
                Membership.user_id == User.id,
                Membership.group_id == Group.id,
                Group.org_id == org_id,
                seen_group,
            )
        )
    if page.after is not None:
        query = query.where(_after(page, User.created_at, User.id))
    query = query.order_by(User.created_at, User.id).limit(page.limit + 1)
    return (await db.scalars(query)).all()


@dataclass(frozen=True)
class MembershipView:
    membership: Membership
    user: User
    group: Group
    org: Organization


async def memberships(
    db: AsyncSession,
    *,
    user_id: uuid.UUID | None = None,
    group_id: uuid.UUID | None = None,
    page: PageRequest | None = None,
) -> list[MembershipView]:
    query = (
        select(Membership, User, Group, Organization)
        .join(User, User.id == Membership.user_id)
        .join(Group, Group.id == Membership.group_id)
        .join(Organization, Organization.id == Group.org_id)
    )
    if user_id is not None:
        query = query.where(Membership.user_id == user_id)
    if group_id is not None:
        query = query.where(Membership.group_id == group_id)
    if page is not None:
        if page.after is not None:
            query = query.where(_after(page, Membership.created_at, Membership.user_id))
        query = query.order_by(Membership.created_at, Membership.user_id).limit(page.limit + 1)
    else:
        query = query.order_by(Organization.name, Group.name)
    rows = (await db.execute(query)).all()
    return [MembershipView(r[0], r[1], r[2], r[3]) for r in rows]


@dataclass(frozen=True)
class GrantView:
    grant: AdminGrant
    user: User
    org_name: str | None
    group_name: str | None
    org_id: uuid.UUID


async def grants(
    db: AsyncSession,
    *,
    user_id: uuid.UUID | None = None,
    org_id: uuid.UUID | None = None,
    group_id: uuid.UUID | None = None,
    page: PageRequest | None = None,
) -> list[GrantView]:
    org_of_grant = func.coalesce(AdminGrant.org_id, Group.org_id)
    query = (
        select(AdminGrant, User, Organization.name, Group.name, org_of_grant)
        .join(User, User.id == AdminGrant.user_id)
        .outerjoin(Group, Group.id == AdminGrant.group_id)
        .join(Organization, Organization.id == org_of_grant)
    )
    if user_id is not None:
        query = query.where(AdminGrant.user_id == user_id)
    if org_id is not None:
        query = query.where(AdminGrant.org_id == org_id)
    if group_id is not None:
        query = query.where(AdminGrant.group_id == group_id)
    if page is not None and page.after is not None:
        query = query.where(_after(page, AdminGrant.created_at, AdminGrant.id))
    query = query.order_by(AdminGrant.created_at, AdminGrant.id)
    if page is not None:
        query = query.limit(page.limit + 1)
    rows = (await db.execute(query)).all()
    return [GrantView(r[0], r[1], r[2], r[3], r[4]) for r in rows]


async def put_membership(
    db: AsyncSession,
    user_id: uuid.UUID,
    group_id: uuid.UUID,
    *,
    role: str,
    expires_at: datetime | None,
    now: datetime,
) -> tuple[Membership, bool]:
    """Set a membership in one statement, whoever else sets it at the same time; returns it
    and whether anything changed. A racing writer waits on the row instead of failing on the
    key, and setting what is already there changes nothing."""
    insert = pg_insert(Membership).values(
        user_id=user_id, group_id=group_id, role=role, expires_at=expires_at, created_at=now
    )
    excluded = insert.excluded
    changed = await db.scalar(
        insert.on_conflict_do_update(
            index_elements=[Membership.user_id, Membership.group_id],
            set_={"role": excluded.role, "expires_at": excluded.expires_at},
            where=tuple_(Membership.role, Membership.expires_at).is_distinct_from(
                tuple_(excluded.role, excluded.expires_at)
            ),
        ).returning(Membership.user_id)
    )
    # populate_existing: an instance loaded earlier in this transaction would hold old values.
    rows = await db.scalars(
        select(Membership)
        .where(Membership.user_id == user_id, Membership.group_id == group_id)
        .execution_options(populate_existing=True)
    )
    return rows.one(), changed is not None


async def put_grant(
    db: AsyncSession,
    user_id: uuid.UUID,
    role: str,
    *,
    org_id: uuid.UUID | None,
    group_id: uuid.UUID | None,
    now: datetime,
    new_id: uuid.UUID,
) -> bool:
    """Grant an admin role unless it is held already; returns whether it was granted now. A
    racing grant of the same role waits on the row and then finds it there."""
    column = AdminGrant.org_id if org_id is not None else AdminGrant.group_id
    granted = await db.scalar(
        pg_insert(AdminGrant)
        .values(
            id=new_id,
            user_id=user_id,
            role=role,
            org_id=org_id,
            group_id=group_id,
            created_at=now,
        )
        .on_conflict_do_nothing(index_elements=[AdminGrant.user_id, column])
        .returning(AdminGrant.id)
    )
    return granted is not None


async def remove_membership(db: AsyncSession, group_id: uuid.UUID, user_id: uuid.UUID) -> bool:
    """Whether this call removed the membership: of two racing removals one finds it gone."""
    removed = await db.scalar(
        delete(Membership)
        .where(Membership.user_id == user_id, Membership.group_id == group_id)
        .returning(Membership.user_id)
    )
    return removed is not None


async def remove_grant(
    db: AsyncSession,
    user_id: uuid.UUID,
    *,
    org_id: uuid.UUID | None = None,
    group_id: uuid.UUID | None = None,
) -> bool:
    """Whether this call revoked the admin grant: of two racing revocations one finds it gone."""
    scope = AdminGrant.org_id == org_id if org_id is not None else AdminGrant.group_id == group_id
    removed = await db.scalar(
        delete(AdminGrant).where(AdminGrant.user_id == user_id, scope).returning(AdminGrant.id)
    )
    return removed is not None


async def names(db: AsyncSession, kind: str, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, str]:
    columns = {
        "org": (Organization.id, Organization.name),
        "group": (Group.id, Group.name),
        "user": (User.id, User.name),
    }[kind]
    rows = await db.execute(select(*columns).where(columns[0].in_(list(ids))))
    return {r[0]: r[1] for r in rows}


async def groups_in_org(db: AsyncSession, org_id: uuid.UUID) -> Sequence[Group]:
    return (
        await db.scalars(select(Group).where(Group.org_id == org_id).order_by(Group.name))
    ).all()


def _current(now: datetime) -> ColumnElement[bool]:
    """A membership that holds at `now`: a guest's ends when it expires."""
    return or_(Membership.expires_at.is_(None), Membership.expires_at > now)


async def member_ids(db: AsyncSession, group_id: uuid.UUID, now: datetime) -> list[uuid.UUID]:
    """The group's members and guests at `now` (expired guests left out)."""
    rows = await db.scalars(
        select(Membership.user_id)
        .join(User, User.id == Membership.user_id)
        .where(Membership.group_id == group_id, _current(now))
        .order_by(User.name)
    )
    return list(rows)


async def emails(db: AsyncSession, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, str]:
    rows = await db.execute(select(User.id, User.email).where(User.id.in_(list(ids))))
    return {r[0]: r[1] for r in rows}


async def forget_failures_before(db: AsyncSession, cutoff: datetime) -> None:
    await db.execute(delete(SignInFailure).where(SignInFailure.at < cutoff))


async def current_among(
    db: AsyncSession, pairs: Sequence[tuple[uuid.UUID, uuid.UUID]], now: datetime
) -> set[tuple[uuid.UUID, uuid.UUID]]:
    """Which (user, group) pairs are memberships now (a guest's until it expires)."""
    if not pairs:
        return set()
    users = sorted({u for u, _ in pairs})
    groups = sorted({g for _, g in pairs})
    found = await db.execute(
        select(Membership.user_id, Membership.group_id).where(
            Membership.user_id.in_(users),
            Membership.group_id.in_(groups),
            _current(now),
        )
    )
    wanted = set(pairs)
    return {(r[0], r[1]) for r in found} & wanted


async def is_current_member(
    db: AsyncSession, user_id: uuid.UUID, group_id: uuid.UUID, now: datetime
) -> bool:
    found = await db.scalar(
        select(Membership.user_id).where(
            Membership.user_id == user_id,
            Membership.group_id == group_id,
            _current(now),
        )
    )
    return found is not None


# ---- account-level administration ------------------------------------------------------------
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


def groups_of_orgs(org_ids: frozenset[uuid.UUID]) -> Select[uuid.UUID]:
    """The ids of these organizations' groups, as a subquery."""
    return select(Group.id).where(Group.org_id.in_(org_ids))


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


async def members_of_groups(
    db: AsyncSession, group_ids: Sequence[uuid.UUID], now: datetime | None = None
) -> dict[uuid.UUID, list[uuid.UUID]]:
    """Each group's member ids at `now` (expired guests left out), ordered by name as
    `member_ids` orders them, in one query. Without `now`, every membership row, expired guests
    too: only for a caller that checks them itself."""
    found: dict[uuid.UUID, list[uuid.UUID]] = {g: [] for g in group_ids}
    query = (
        select(Membership.group_id, Membership.user_id)
        .join(User, User.id == Membership.user_id)
        .where(Membership.group_id.in_(list(group_ids)))
        .order_by(User.name, User.id)
    )
    rows = await db.execute(query if now is None else query.where(_current(now)))
    for group_id, user_id in rows:
        found[group_id].append(user_id)
    return found


async def groups_of_users(
    db: AsyncSession, user_ids: Sequence[uuid.UUID], now: datetime
) -> dict[uuid.UUID, dict[uuid.UUID, uuid.UUID]]:
    """Each user's current groups (group -> organization), expired guests left out."""
    found: dict[uuid.UUID, dict[uuid.UUID, uuid.UUID]] = {u: {} for u in user_ids}
    rows = await db.execute(
        select(Membership.user_id, Membership.group_id, Group.org_id)
        .join(Group, Group.id == Membership.group_id)
        .where(
            Membership.user_id.in_(list(user_ids)),
            _current(now),
        )
    )
    for user_id, group_id, org_id in rows:
        found[user_id][group_id] = org_id
    return found


_SEEN_CLIENT = text(
    "SELECT EXISTS (SELECT 1 FROM login_sessions WHERE user_id = :user) AS before, "
    "EXISTS (SELECT 1 FROM login_sessions WHERE user_id = :user AND client = :client "
    "AND user_agent IS NOT DISTINCT FROM :agent) AS same"
)


async def signs_in_from_new_client(
    db: AsyncSession, user_id: uuid.UUID, client: str, user_agent: str | None
) -> bool:
    """Whether a user who has signed in before never did from this address and browser."""
    row = (
        await db.execute(
            _SEEN_CLIENT,
            {"user": user_id, "client": client[:64], "agent": user_agent},
        )
    ).one()
    return bool(row.before and not row.same)
