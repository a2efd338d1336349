"""What the console may offer a caller: the actions `is_allowed` grants them, asked scope by scope.

Nothing here decides on its own. Each capability is the answer of `permissions.is_allowed` for
one action in one scope, so the console hides exactly the controls the API would refuse:

- `actions`: allowed whatever the organization or group (the super admin's reach, or actions
  that need no scope), plus `admin_mode` for anyone holding an admin role;
- `orgs`: per organization the caller belongs to, what is allowed for it and in every group of it;
- `groups`: per group the caller belongs to, what is allowed in that group.

Actions about a user are asked for a user who belongs to that scope only; whether one particular
user lies wholly in the caller's reach is still the server's call when the action is tried.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from gshare.identity.permissions import GLOBAL, Action, Actor, Scope, UserScope, is_allowed

ADMIN_MODE = "admin_mode"

# No grant, group or user ever carries the nil id, so an action allowed there is allowed anywhere.
NOWHERE = uuid.UUID(int=0)

# Grouped by the scope the services ask about them in.
GLOBAL_ACTIONS = (
    Action.ORG_CREATE,
    Action.USER_CREATE,  # without a group
    Action.AUDIT_READ,
    Action.CREDITS_CHECK,
    Action.CLUSTERS_MANAGE,
    Action.SUPER_ADMIN_MANAGE,
    Action.CAPACITY_READ,
    Action.CAPACITY_MANAGE,
    Action.POLICY_READ_GLOBAL,
    Action.POLICY_SET_GLOBAL,
    Action.QUEUE_READ_SCOPE,
    Action.SESSION_READ_SCOPE,
    Action.CATALOG_MANAGE,
    Action.WORKER_HEALTH,
    Action.ISOLATION_MANAGE,
)
ORG_ACTIONS = (
    Action.ORG_UPDATE,
    Action.ORG_DELETE,
    Action.ORG_ADMINS_READ,
    Action.ORG_ADMINS_MANAGE,
    Action.GROUP_CREATE,
    Action.WALLET_TREE,
    Action.CREDITS_MINT,
    Action.CREDITS_MOVE_ORG_GROUP,
    Action.GRANT_SET_ORG,
    Action.GRANT_SET_GROUP,
    Action.POLICY_READ_ORG,
    Action.POLICY_SET_ORG,
    Action.POLICY_SET_GROUP,
    Action.ISOLATION_AUDIT,
)
GROUP_ACTIONS = (
    Action.GROUP_UPDATE,
    Action.GROUP_DELETE,
    Action.GROUP_ADMINS_READ,
    Action.GROUP_ADMINS_MANAGE,
    Action.MEMBERS_MANAGE,
    Action.USER_CREATE,  # into the group
    Action.CREDITS_MOVE_GROUP_USER,
    Action.GRANT_SET_USER,
    Action.POLICY_READ_GROUP,
    Action.VOLUME_MANAGE_GROUP,
    Action.BOOKING_MANAGE,
)
USER_ACTIONS = (
    Action.USER_SET_ACTIVE,
    Action.USER_RESET_PASSWORD,
    Action.POLICY_READ_USER,
    Action.POLICY_SET_USER,
)


@dataclass(frozen=True)
class OrgCapabilities:
    org_id: uuid.UUID
    actions: list[str]


@dataclass(frozen=True)
class GroupCapabilities:
    group_id: uuid.UUID
    org_id: uuid.UUID
    actions: list[str]


@dataclass(frozen=True)
class Capabilities:
    actions: list[str]
    orgs: list[OrgCapabilities]
    groups: list[GroupCapabilities]


def _user_in(group_id: uuid.UUID, org_id: uuid.UUID) -> Scope:
    return Scope(user=UserScope(user_id=NOWHERE, groups={group_id: org_id}))


def _allowed(actor: Actor, asks: Iterable[tuple[Action, Scope]]) -> list[str]:
    names: list[str] = []
    for action, scope in asks:
        if is_allowed(actor, action, scope) and action.value not in names:
            names.append(action.value)
    return names


def _in_org(org_id: uuid.UUID, group_id: uuid.UUID) -> list[tuple[Action, Scope]]:
    """Org actions for `org_id`, group and user actions for `group_id` inside it."""
    asks: list[tuple[Action, Scope]] = [(a, Scope(org_id=org_id)) for a in ORG_ACTIONS]
    asks += [(a, Scope.of_group(group_id, org_id)) for a in GROUP_ACTIONS]
    asks += [(a, _user_in(group_id, org_id)) for a in USER_ACTIONS]
    return asks


def capabilities_of(actor: Actor) -> Capabilities:
    """Every console-relevant action `actor` may take, by scope, sorted for a stable answer."""
    anywhere = _allowed(actor, [(a, GLOBAL) for a in GLOBAL_ACTIONS] + _in_org(NOWHERE, NOWHERE))
    if actor.is_admin:
        anywhere.append(ADMIN_MODE)

    groups = {**actor.guest_of, **actor.member_of, **actor.group_admin_of}
    org_ids = actor.org_admin_of | set(groups.values())
    # A group id that is nowhere stands for "every group of the organization".
    orgs = [OrgCapabilities(o, _allowed(actor, _in_org(o, NOWHERE))) for o in sorted(org_ids)]
    in_groups = [
        GroupCapabilities(
            g,
            o,
            _allowed(
                actor,
                [(a, Scope.of_group(g, o)) for a in GROUP_ACTIONS]
                + [(a, _user_in(g, o)) for a in USER_ACTIONS],
            ),
        )
        for g, o in sorted(groups.items())
    ]
    return Capabilities(
        actions=sorted(anywhere),
        orgs=[entry for entry in orgs if entry.actions],
        groups=[entry for entry in in_groups if entry.actions],
    )
