"""Who and what an id names, as selectables another domain joins in its own list query."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Subquery, or_, select

from gshare.identity.models import Group, Organization, User
from gshare.identity.permissions import Actor
from gshare.identity.repository import users_reached


@dataclass(frozen=True)
class NameTables:
    """`users` has columns id, name, email; `orgs` and `groups` have id, name. Each is a
    plain projection PostgreSQL inlines, so a join on id still uses the primary key."""

    users: Subquery
    orgs: Subquery
    groups: Subquery


def name_tables(reader: Actor) -> NameTables:
    """The names `reader` may be told: everything for a super admin; for anyone else the users
    their admin roles reach (as the audit log counts them) and the organizations and groups
    they see. A row may name an id outside that (a denied attempt names whatever it was
    about); joined here, it stays unnamed rather than telling who or what it is today."""
    users = select(User.id, User.name, User.email)
    orgs = select(Organization.id, Organization.name)
    groups = select(Group.id, Group.name)
    if not reader.is_super_admin:
        admin_of = frozenset(reader.group_admin_of)
        users = users.where(User.id.in_(users_reached(reader.org_admin_of, admin_of)))
        orgs = orgs.where(
            Organization.id.in_(
                reader.org_admin_of
                | set(reader.group_admin_of.values())
                | set(reader.member_of.values())
            )
        )
        groups = groups.where(
            or_(
                Group.id.in_(admin_of | set(reader.member_of)),
                Group.org_id.in_(reader.org_admin_of),
            )
        )
    return NameTables(
        users=users.subquery("named_users"),
        orgs=orgs.subquery("named_orgs"),
        groups=groups.subquery("named_groups"),
    )
