"""Who may do what, as data: every action, and one pure decision `is_allowed(actor, action, scope)`.

Routes declare their action; services call `require` (in `authz.py`), which asks this module.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum


class Action(StrEnum):
    PUBLIC = "public"  # no sign-in needed (sign-in itself, health)
    SELF = "self"  # any signed-in user, about themself

    ORG_LIST = "org.list"
    ORG_CREATE = "org.create"
    ORG_READ = "org.read"
    ORG_UPDATE = "org.update"
    ORG_DELETE = "org.delete"
    ORG_ADMINS_READ = "org.admins.read"
    ORG_ADMINS_MANAGE = "org.admins.manage"

    GROUP_CREATE = "group.create"
    GROUP_READ = "group.read"
    GROUP_UPDATE = "group.update"
    GROUP_DELETE = "group.delete"
    GROUP_ADMINS_READ = "group.admins.read"
    GROUP_ADMINS_MANAGE = "group.admins.manage"
    MEMBERS_READ = "group.members.read"
    MEMBERS_MANAGE = "group.members.manage"

    USER_LIST = "user.list"
    USER_CREATE = "user.create"
    USER_READ = "user.read"
    USER_RENAME = "user.rename"
    USER_SET_ACTIVE = "user.set_active"
    USER_RESET_PASSWORD = "user.reset_password"
    SUPER_ADMIN_MANAGE = "user.super_admin.manage"

    AUDIT_READ = "audit.read"

    WALLET_READ_OWN = "wallet.read_own"
    WALLET_READ_ORG = "wallet.read_org"
    WALLET_READ_GROUP = "wallet.read_group"
    WALLET_READ_USER = "wallet.read_user"
    WALLET_TREE = "wallet.tree"
    WALLET_ALERT_SET = "wallet.alert_set"
    CREDITS_MINT = "credits.mint"
    CREDITS_MOVE_ORG_GROUP = "credits.move_org_group"
    CREDITS_MOVE_GROUP_USER = "credits.move_group_user"
    GRANT_SET_ORG = "credits.grant_org"
    GRANT_SET_GROUP = "credits.grant_group"
    GRANT_SET_USER = "credits.grant_user"
    CREDITS_CHECK = "credits.check"

    # The GPU inventory, pools, MIG layouts, models, tiers and prices (the super admin's).
    CAPACITY_READ = "capacity.read"
    CAPACITY_MANAGE = "capacity.manage"
    TIERS_READ = "tiers.read"  # the tiers one may use, with their prices
    POLICY_READ_GLOBAL = "policy.read_global"
    POLICY_SET_GLOBAL = "policy.set_global"
    POLICY_READ_ORG = "policy.read_org"
    POLICY_SET_ORG = "policy.set_org"
    POLICY_READ_GROUP = "policy.read_group"
    POLICY_SET_GROUP = "policy.set_group"
    POLICY_READ_USER = "policy.read_user"
    POLICY_SET_USER = "policy.set_user"
    ADMISSION_PREVIEW = "admission.preview"  # for oneself, in a group one is in
    QUEUE_READ_OWN = "queue.read_own"
    QUEUE_READ_SCOPE = "queue.read_scope"  # every request in the groups one administers
    QUEUE_CANCEL = "queue.cancel"  # one's own request, or one in a group one administers

    CLUSTERS_READ = "clusters.read"
    CLUSTERS_MANAGE = "clusters.manage"
    # Which nodes are whose, and what each cluster offers to isolation levels.
    ISOLATION_MANAGE = "isolation.manage"
    # An organization's isolation level, where its sessions ran and what left its level.
    ISOLATION_AUDIT = "isolation.audit"
    # Calls from a cluster's operator: a signed token, not a user, is the caller.
    CLUSTER_CALLBACK = "cluster.callback"

    # Entering one's own session's page; the service lets the session's owner alone through.
    SESSION_ENTER = "session.enter"
    # ingress-nginx asking whether a request may reach a session: the session access cookie,
    # not a console sign-in, is the credential.
    SESSION_ACCESS_CHECK = "session.access_check"
    # One's own sessions: the service answers 404 for anybody else's.
    SESSION_CREATE = "session.create"
    SESSION_READ_OWN = "session.read_own"
    SESSION_CONTROL = "session.control"  # pause, resume, stop, delete, keep running
    SESSION_READ_SCOPE = "session.read_scope"  # every session in the groups one administers
    CATALOG_READ = "catalog.read"
    CATALOG_MANAGE = "catalog.manage"
    VOLUME_READ_OWN = "volume.read_own"
    VOLUME_DELETE_OWN = "volume.delete_own"
    VOLUME_READ_GROUP = "volume.read_group"  # a group's shared volumes: its members
    VOLUME_MANAGE_GROUP = "volume.manage_group"  # create and delete them: its admins
    WORKER_HEALTH = "worker.health"  # how the worker's loops and the clusters' metrics fare
    # Bookings: the service shows each caller the bookings of their groups, and a calendar
    # of booked and free capacity (no group, no title) to anyone.
    BOOKING_READ = "booking.read"
    BOOKING_MANAGE = "booking.manage"  # book, edit and cancel for a group one administers
    # A group's GPU use against its share, beside its organization's other groups (their names
    # and numbers, no people: so that members see where their group stands): whoever sees the
    # group, and its guests. Each member's use within it: the group's admins.
    FAIR_SHARE_READ = "fair_share.read"
    FAIR_SHARE_USERS_READ = "fair_share.users_read"
    # GPU time, idle time and credits used: anyone their own; admins what they administer.
    USAGE_READ = "usage.read"


@dataclass(frozen=True)
class Actor:
    """A signed-in user and every role they hold right now (expired guest memberships left out)."""

    user_id: uuid.UUID
    email: str
    is_super_admin: bool = False
    org_admin_of: frozenset[uuid.UUID] = frozenset()
    group_admin_of: Mapping[uuid.UUID, uuid.UUID] = field(default_factory=dict)  # group -> org
    member_of: Mapping[uuid.UUID, uuid.UUID] = field(default_factory=dict)  # group -> org
    guest_of: Mapping[uuid.UUID, uuid.UUID] = field(default_factory=dict)  # group -> org

    @property
    def is_admin(self) -> bool:
        return self.is_super_admin or bool(self.org_admin_of) or bool(self.group_admin_of)

    def administers_group(self, group_id: uuid.UUID, org_id: uuid.UUID) -> bool:
        return group_id in self.group_admin_of or org_id in self.org_admin_of

    def sees_group(self, group_id: uuid.UUID, org_id: uuid.UUID) -> bool:
        return self.administers_group(group_id, org_id) or group_id in self.member_of

    def sees_org(self, org_id: uuid.UUID) -> bool:
        return (
            org_id in self.org_admin_of
            or org_id in self.group_admin_of.values()
            or org_id in self.member_of.values()
        )


@dataclass(frozen=True)
class UserScope:
    """Where a target user stands: their groups (group -> org), org admin grants, super admin."""

    user_id: uuid.UUID
    groups: Mapping[uuid.UUID, uuid.UUID] = field(default_factory=dict)
    org_admin_of: frozenset[uuid.UUID] = frozenset()
    group_admin_of: Mapping[uuid.UUID, uuid.UUID] = field(default_factory=dict)
    is_super_admin: bool = False


@dataclass(frozen=True)
class Scope:
    """What an action is about. Fill in what applies."""

    org_id: uuid.UUID | None = None
    group_id: uuid.UUID | None = None
    user: UserScope | None = None

    @classmethod
    def of_group(cls, group_id: uuid.UUID, org_id: uuid.UUID) -> Scope:
        return cls(org_id=org_id, group_id=group_id)


GLOBAL = Scope()
Rule = Callable[[Actor, Scope], bool]


def _never(actor: Actor, scope: Scope) -> bool:
    return False


def _signed_in(actor: Actor, scope: Scope) -> bool:
    return True


def _any_admin(actor: Actor, scope: Scope) -> bool:
    return actor.is_admin


def _org_admin(actor: Actor, scope: Scope) -> bool:
    return scope.org_id is not None and scope.org_id in actor.org_admin_of


def _sees_org(actor: Actor, scope: Scope) -> bool:
    return scope.org_id is not None and actor.sees_org(scope.org_id)


def _group_admin(actor: Actor, scope: Scope) -> bool:
    return (
        scope.group_id is not None
        and scope.org_id is not None
        and actor.administers_group(scope.group_id, scope.org_id)
    )


def _sees_group(actor: Actor, scope: Scope) -> bool:
    return (
        scope.group_id is not None
        and scope.org_id is not None
        and actor.sees_group(scope.group_id, scope.org_id)
    )


def _in_group(actor: Actor, scope: Scope) -> bool:
    """Whoever sees the group, and its guests: they queue in it too."""
    return _sees_group(actor, scope) or (
        scope.group_id is not None and scope.group_id in actor.guest_of
    )


def _sees_user(actor: Actor, scope: Scope) -> bool:
    target = scope.user
    if target is None:
        return False
    if target.user_id == actor.user_id:
        return True
    admin_reach = {**target.groups, **target.group_admin_of}
    if any(actor.administers_group(g, o) for g, o in admin_reach.items()):
        return True
    if target.org_admin_of & actor.org_admin_of:
        return True
    # A member sees fellow members of their groups; a guest sees only themself.
    return any(g in actor.member_of for g in target.groups)


def _manages_user(actor: Actor, scope: Scope) -> bool:
    """An admin manages a user only when everything the user belongs to lies in their reach."""
    target = scope.user
    if target is None or target.is_super_admin or target.user_id == actor.user_id:
        return False
    groups = {**target.groups, **target.group_admin_of}
    if not groups and not target.org_admin_of:
        return False
    in_reach = all(actor.administers_group(g, o) for g, o in groups.items())
    orgs_in_reach = target.org_admin_of <= actor.org_admin_of
    return in_reach and orgs_in_reach


def _renames_user(actor: Actor, scope: Scope) -> bool:
    return (scope.user is not None and scope.user.user_id == actor.user_id) or _manages_user(
        actor, scope
    )


def _self_or_user_admin(actor: Actor, scope: Scope) -> bool:
    """A personal wallet: its owner and the admins of the groups or organizations they are in."""
    target = scope.user
    if target is None:
        return False
    if target.user_id == actor.user_id:
        return True
    return any(actor.administers_group(g, o) for g, o in target.groups.items())


def _keeps_wallet(actor: Actor, scope: Scope) -> bool:
    """Who may set a wallet's alert: whoever may read it (its owner for a personal wallet, and
    the admins over it)."""
    if scope.user is not None:
        return _self_or_user_admin(actor, scope)
    if scope.group_id is not None:
        return _group_admin(actor, scope)
    return _org_admin(actor, scope)


def _admin_in_org(actor: Actor, scope: Scope) -> bool:
    return scope.org_id is not None and (
        scope.org_id in actor.org_admin_of or scope.org_id in actor.group_admin_of.values()
    )


def _org_admin_over_user(actor: Actor, scope: Scope) -> bool:
    """A user's own policy loosens or tightens their groups': only an admin of every
    organization the user is in may set it, never for themself or a super admin."""
    target = scope.user
    if target is None or target.is_super_admin or target.user_id == actor.user_id:
        return False
    orgs = set(target.groups.values()) | set(target.group_admin_of.values()) | target.org_admin_of
    return bool(orgs) and orgs <= actor.org_admin_of


def _creates_user(actor: Actor, scope: Scope) -> bool:
    # Outside the super admin, a new user must land in a group the creator administers.
    return _group_admin(actor, scope)


RULES: dict[Action, Rule] = {
    Action.PUBLIC: _signed_in,
    Action.SELF: _signed_in,
    Action.ORG_LIST: _signed_in,
    Action.ORG_CREATE: _never,
    Action.ORG_READ: _sees_org,
    Action.ORG_UPDATE: _org_admin,
    Action.ORG_DELETE: _never,
    Action.ORG_ADMINS_READ: _org_admin,
    Action.ORG_ADMINS_MANAGE: _org_admin,
    Action.GROUP_CREATE: _org_admin,
    Action.GROUP_READ: _sees_group,
    Action.GROUP_UPDATE: _group_admin,
    Action.GROUP_DELETE: _org_admin,
    Action.GROUP_ADMINS_READ: _group_admin,
    Action.GROUP_ADMINS_MANAGE: _org_admin,
    Action.MEMBERS_READ: _sees_group,
    Action.MEMBERS_MANAGE: _group_admin,
    Action.USER_LIST: _signed_in,
    Action.USER_CREATE: _creates_user,
    Action.USER_READ: _sees_user,
    Action.USER_RENAME: _renames_user,
    Action.USER_SET_ACTIVE: _manages_user,
    Action.USER_RESET_PASSWORD: _manages_user,
    Action.SUPER_ADMIN_MANAGE: _never,
    Action.AUDIT_READ: _any_admin,
    Action.WALLET_READ_OWN: _signed_in,
    Action.WALLET_READ_ORG: _org_admin,
    Action.WALLET_READ_GROUP: _group_admin,
    Action.WALLET_READ_USER: _self_or_user_admin,
    Action.WALLET_TREE: _admin_in_org,
    Action.WALLET_ALERT_SET: _keeps_wallet,
    Action.CREDITS_MINT: _never,
    Action.CREDITS_MOVE_ORG_GROUP: _org_admin,
    Action.CREDITS_MOVE_GROUP_USER: _group_admin,
    Action.GRANT_SET_ORG: _never,
    Action.GRANT_SET_GROUP: _org_admin,
    Action.GRANT_SET_USER: _group_admin,
    Action.CREDITS_CHECK: _never,
    Action.CAPACITY_READ: _never,
    Action.CAPACITY_MANAGE: _never,
    Action.TIERS_READ: _signed_in,
    Action.POLICY_READ_GLOBAL: _any_admin,
    Action.POLICY_SET_GLOBAL: _never,
    Action.POLICY_READ_ORG: _admin_in_org,
    Action.POLICY_SET_ORG: _never,
    Action.POLICY_READ_GROUP: _group_admin,
    Action.POLICY_SET_GROUP: _org_admin,
    Action.POLICY_READ_USER: _self_or_user_admin,
    Action.POLICY_SET_USER: _org_admin_over_user,
    Action.ADMISSION_PREVIEW: _signed_in,
    Action.QUEUE_READ_OWN: _signed_in,
    Action.QUEUE_READ_SCOPE: _any_admin,
    Action.QUEUE_CANCEL: _signed_in,
    Action.CLUSTERS_READ: _never,
    Action.CLUSTERS_MANAGE: _never,
    Action.ISOLATION_MANAGE: _never,
    Action.ISOLATION_AUDIT: _org_admin,
    Action.CLUSTER_CALLBACK: _never,
    Action.SESSION_ENTER: _signed_in,
    Action.SESSION_ACCESS_CHECK: _never,
    Action.SESSION_CREATE: _signed_in,
    Action.SESSION_READ_OWN: _signed_in,
    Action.SESSION_CONTROL: _signed_in,
    Action.SESSION_READ_SCOPE: _any_admin,
    Action.CATALOG_READ: _signed_in,
    Action.CATALOG_MANAGE: _never,
    Action.VOLUME_READ_OWN: _signed_in,
    Action.VOLUME_DELETE_OWN: _signed_in,
    Action.VOLUME_READ_GROUP: _sees_group,
    Action.VOLUME_MANAGE_GROUP: _group_admin,
    Action.WORKER_HEALTH: _never,
    Action.BOOKING_READ: _signed_in,
    Action.BOOKING_MANAGE: _group_admin,
    Action.FAIR_SHARE_READ: _in_group,
    Action.FAIR_SHARE_USERS_READ: _group_admin,
    Action.USAGE_READ: _signed_in,
}


def is_allowed(actor: Actor, action: Action, scope: Scope = GLOBAL) -> bool:
    """The one decision. The super admin may do everything."""
    if actor.is_super_admin:
        return True
    return RULES[action](actor, scope)
