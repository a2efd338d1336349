"""Who may see an event: the pure decision, against the read rules it mirrors."""

from __future__ import annotations

import uuid

from gshare.events.audience import may_see
from gshare.events.outbox import Audience
from gshare.identity.permissions import Actor

ORG, OTHER_ORG = uuid.uuid4(), uuid.uuid4()
GROUP, OTHER_GROUP = uuid.uuid4(), uuid.uuid4()
OWNER = uuid.uuid4()


def actor(**roles: object) -> Actor:
    return Actor(user_id=uuid.uuid4(), email="a@example.org", **roles)  # type: ignore[arg-type]


def sees(viewer: Actor, audience: Audience, user_groups: dict | None = None) -> bool:
    return may_see(viewer, audience, user_groups=user_groups or {}, group_org=ORG)


def test_a_personal_event_is_seen_by_its_user_and_the_admins_of_their_groups_only() -> None:
    wallet = Audience(user_id=OWNER)
    groups = {GROUP: ORG}
    owner = Actor(user_id=OWNER, email="o@example.org")
    assert sees(owner, wallet, groups)
    assert sees(actor(group_admin_of={GROUP: ORG}), wallet, groups)
    assert sees(actor(org_admin_of=frozenset({ORG})), wallet, groups)
    assert sees(actor(is_super_admin=True), wallet, groups)
    assert not sees(actor(member_of={GROUP: ORG}), wallet, groups)  # a fellow member
    assert not sees(actor(group_admin_of={OTHER_GROUP: ORG}), wallet, groups)
    assert not sees(actor(org_admin_of=frozenset({OTHER_ORG})), wallet, groups)


def test_a_private_event_is_seen_by_its_user_alone() -> None:
    note = Audience.only(OWNER)
    assert sees(Actor(user_id=OWNER, email="o@example.org"), note, {GROUP: ORG})
    assert not sees(actor(is_super_admin=True), note, {GROUP: ORG})
    assert not sees(actor(org_admin_of=frozenset({ORG})), note, {GROUP: ORG})


def test_group_and_organization_events_go_to_their_admins() -> None:
    group_wallet, org_wallet = Audience(group_id=GROUP), Audience(org_id=ORG)
    assert sees(actor(group_admin_of={GROUP: ORG}), group_wallet)
    assert sees(actor(org_admin_of=frozenset({ORG})), group_wallet)
    assert not sees(actor(member_of={GROUP: ORG}), group_wallet)
    assert not sees(actor(group_admin_of={GROUP: ORG}), org_wallet)
    assert sees(actor(org_admin_of=frozenset({ORG})), org_wallet)
    assert not sees(actor(org_admin_of=frozenset({OTHER_ORG})), org_wallet)
    assert not sees(actor(), Audience())  # no audience: super admins only
    assert sees(actor(is_super_admin=True), Audience())


def test_a_users_request_in_one_group_is_not_the_business_of_their_other_groups_admins() -> None:
    request = Audience(user_id=OWNER, group_id=GROUP)
    groups = {GROUP: ORG, OTHER_GROUP: OTHER_ORG}  # the owner is in a group of another org too
    assert sees(Actor(user_id=OWNER, email="o@example.org"), request, groups)
    assert sees(actor(group_admin_of={GROUP: ORG}), request, groups)
    assert sees(actor(org_admin_of=frozenset({ORG})), request, groups)
    assert not sees(actor(group_admin_of={OTHER_GROUP: OTHER_ORG}), request, groups)
    assert not sees(actor(org_admin_of=frozenset({OTHER_ORG})), request, groups)


def test_an_event_for_everyone_is_seen_by_anyone_signed_in_one_with_no_audience_by_few() -> None:
    for viewer in (actor(), actor(member_of={OTHER_GROUP: OTHER_ORG}), actor(is_super_admin=True)):
        assert sees(viewer, Audience.signed_in())
    assert not sees(actor(member_of={GROUP: ORG}), Audience())
    assert sees(actor(is_super_admin=True), Audience())
