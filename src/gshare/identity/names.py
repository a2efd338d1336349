"""Who and what an id names, as selectables another domain joins in its own list query."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Subquery, select

from gshare.identity.models import Group, Organization, User


@dataclass(frozen=True)
class NameTables:
    """`users` has columns id, name, email; `orgs` and `groups` have id, name. Each is a
    plain projection PostgreSQL inlines, so a join on id still uses the primary key."""

    users: Subquery
    orgs: Subquery
    groups: Subquery


def name_tables() -> NameTables:
    return NameTables(
        users=select(User.id, User.name, User.email).subquery("named_users"),
        orgs=select(Organization.id, Organization.name).subquery("named_orgs"),
        groups=select(Group.id, Group.name).subquery("named_groups"),
    )
