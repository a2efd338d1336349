"""The pure permission rules."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from gshare.identity.permissions import RULES, Action, Actor, Scope, UserScope, is_allowed

ORG_A, ORG_B = uuid.uuid4(), uuid.uuid4()
A1, A2, B1 = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
GROUP_ORG = {A1: ORG_A, A2: ORG_A, B1: ORG_B}


def actor(**kw: object) -> Actor:
    return Actor(user_id=uuid.uuid4(), email="a@example.org", **kw)  # type: ignore[arg-type]


actors = st.builds(
    lambda orgs, admin_groups, member_groups, guest_groups: actor(
        org_admin_of=frozenset(orgs),
        group_admin_of={g: GROUP_ORG[g] for g in admin_groups},
        member_of={g: GROUP_ORG[g] for g in member_groups},
        guest_of={g: GROUP_ORG[g] for g in guest_groups},
    ),
    st.sets(st.sampled_from([ORG_A, ORG_B])),
    st.sets(st.sampled_from([A1, A2, B1])),
    st.sets(st.sampled_from([A1, A2, B1])),
    st.sets(st.sampled_from([A1, A2, B1])),
)


@given(actors, st.sampled_from(list(Action)))
def test_nothing_in_organization_b_without_a_role_there(who: Actor, action: Action) -> None:
    """Roles held only in A never open anything scoped to B."""
    if ORG_B in who.org_admin_of or B1 in {**who.group_admin_of, **who.member_of}:
        return
    scope = Scope.of_group(B1, ORG_B)
    if RULES[action] is RULES[Action.SELF]:
        # Open to anyone signed in, about their own things: the service checks whose they are.
        return
    if RULES[action] is RULES[Action.AUDIT_READ]:
        # Any admin may ask (the audit log, the queue, the sessions, the policies of their
        # scope): the query keeps to what they administer, tested route by route.
        return
    assert not is_allowed(who, action, scope)
    assert not is_allowed(who, action, Scope(org_id=ORG_B))


@given(actors, st.sampled_from(list(Action)))
def test_guest_roles_add_nothing(who: Actor, action: Action) -> None:
    without_guest = Actor(
        user_id=who.user_id,
        email=who.email,
        org_admin_of=who.org_admin_of,
        group_admin_of=who.group_admin_of,
        member_of=who.member_of,
    )
    for scope in (Scope.of_group(A1, ORG_A), Scope(org_id=ORG_A)):
        assert is_allowed(who, action, scope) == is_allowed(without_guest, action, scope)


@given(st.sampled_from(list(Action)))
def test_the_super_admin_may_do_everything(action: Action) -> None:
    assert is_allowed(actor(is_super_admin=True), action, Scope.of_group(B1, ORG_B))


def test_a_member_sees_fellow_members_but_not_strangers() -> None:
    me = actor(member_of={A1: ORG_A})
    fellow = UserScope(user_id=uuid.uuid4(), groups={A1: ORG_A})
    stranger = UserScope(user_id=uuid.uuid4(), groups={A2: ORG_A})
    assert is_allowed(me, Action.USER_READ, Scope(user=fellow))
    assert not is_allowed(me, Action.USER_READ, Scope(user=stranger))


def test_a_group_admin_manages_only_users_wholly_in_their_groups() -> None:
    admin = actor(group_admin_of={A1: ORG_A})
    inside = UserScope(user_id=uuid.uuid4(), groups={A1: ORG_A})
    straddling = UserScope(user_id=uuid.uuid4(), groups={A1: ORG_A, B1: ORG_B})
    org_admin = UserScope(user_id=uuid.uuid4(), groups={A1: ORG_A}, org_admin_of=frozenset({ORG_A}))
    assert is_allowed(admin, Action.USER_SET_ACTIVE, Scope(user=inside))
    assert not is_allowed(admin, Action.USER_SET_ACTIVE, Scope(user=straddling))
    assert not is_allowed(admin, Action.USER_SET_ACTIVE, Scope(user=org_admin))
    assert is_allowed(admin, Action.USER_READ, Scope(user=straddling))


def test_nobody_but_the_super_admin_creates_organizations() -> None:
    assert not is_allowed(actor(org_admin_of=frozenset({ORG_A})), Action.ORG_CREATE)
