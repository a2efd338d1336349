"""A group's use against its share: the numbers the queue and preemption use, its
organization's groups beside it without people, each member's use for its admins only."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from gshare.capacity import admission, repository, shares
from gshare.identity.authz import Context
from gshare.identity.models import Group, Membership, User
from gshare.identity.permissions import Actor
from gshare.kit.errors import Forbidden, NotFound
from tests.capacity.builders import admit, another_group, capacity_world, set_policy


async def _share(sessions, actor: Actor, group_id, now, settings) -> shares.GroupShare:
    async with sessions() as db:
        return await shares.group_share(Context(db, actor, now), group_id, settings)


async def test_a_member_sees_the_groups_use_against_its_share_and_the_orgs_groups(
    sessions, clock
) -> None:
    t0 = clock.now()
    w = await capacity_world(sessions, t0 - timedelta(hours=3), n_cards=4, users=2)
    async with sessions() as db, db.begin():
        org_id = (await db.get(Group, w.group_id)).org_id  # type: ignore[union-attr]
        quiet = Group(id=uuid.uuid4(), org_id=org_id, name="A quiet group", created_at=t0)
        db.add(quiet)
        await repository.store_usage(
            db,
            [
                {"subject_kind": "group", "subject_id": w.group_id, "usage": 0.8, "sampled_at": t0},
                {"subject_kind": "org", "subject_id": org_id, "usage": 0.8, "sampled_at": t0},
                {
                    "subject_kind": "user",
                    "subject_id": w.user_ids[0],
                    "usage": 0.5,
                    "sampled_at": t0,
                },
            ],
        )
    # Two hours ago one member started a whole card, an hour ago the other a quarter.
    assert (
        await admit(sessions, w.ask(0, "exclusive"), t0 - timedelta(hours=2), w.settings)
    ).allocation
    assert (await admit(sessions, w.ask(1, "1/4"), t0 - timedelta(hours=1), w.settings)).allocation
    # A group of another organization runs too: the cards split between the two.
    other = await another_group(sessions, t0)
    assert (await admit(sessions, other.ask(w, 0, "exclusive"), t0, w.settings)).allocation

    # What the queue weighs now: the stored usage with each admission's entry penalty.
    async with sessions() as db:
        weighed = await repository.usage_of(db, "group", [w.group_id])
        people = await repository.usage_of(db, "user", w.user_ids)
    assert weighed[w.group_id] > 0.8

    member = Actor(w.user_ids[1], "member@example.org", member_of={w.group_id: org_id})
    found = await _share(sessions, member, w.group_id, t0, w.settings)
    mine = found.group
    assert (mine.usage, mine.in_use, mine.share, mine.weight) == (
        weighed[w.group_id],
        1.25,
        2.0,
        1.0,
    )
    # Two organizations run: each has half the cards; the group is its organization's only
    # one running, so its share is all of its organization's.
    assert (found.cards, found.active_orgs, found.active_groups) == (4, 2, 1)
    assert found.org == shares.OrgStanding(
        org_id, found.org_name, weighed[w.group_id], 1.25, 2.0, 1.0
    )
    # The organization's groups, by name, without the other organization's; no people.
    assert [(g.name, g.share) for g in found.groups] == sorted(
        [(mine.name, 2.0), ("A quiet group", None)], key=lambda p: p[0].lower()
    )
    assert found.members is None
    # The chart: the last point runs 1.25 cards, and usage grew towards it.
    assert found.history[-1].in_use == 1.25
    assert found.history[0].usage < found.history[-1].usage < 1.25
    assert found.history[0].at >= t0 - 2 * found.settings.half_life
    words = shares.in_words(found)
    assert f"{found.org_name} runs 1.25 cards now; its share is 2.00 of 4 cards" in words
    assert "among the 2 organizations running or waiting" in words
    assert f"{mine.name} runs 1.25 cards now; its share is 2.00 of its organization's" in words
    assert f"is {weighed[w.group_id]:.2f} cards for {found.org_name}" in words
    assert f"{found.org_name} runs below its share" in words
    assert "Within its organization it runs below its share" in words

    # A guest of the group queues in it, so sees it too; not its members.
    guest = Actor(uuid.uuid4(), "guest@example.org", guest_of={w.group_id: org_id})
    assert (await _share(sessions, guest, w.group_id, t0, w.settings)).members is None
    # A guest whose membership expired is no member to list.
    async with sessions() as db, db.begin():
        gone = User(
            id=uuid.uuid4(),
            email="gone@example.org",
            name="Gone",
            password_hash="x",
            must_change_password=False,
            created_at=t0,
            password_changed_at=t0,
        )
        db.add(gone)
        await db.flush()
        db.add(
            Membership(
                user_id=gone.id,
                group_id=w.group_id,
                role="guest",
                expires_at=t0 - timedelta(days=1),
                created_at=t0 - timedelta(days=9),
            )
        )

    # The group's admin also sees each current member's use, most first.
    admin = Actor(uuid.uuid4(), "admin@example.org", group_admin_of={w.group_id: org_id})
    members = (await _share(sessions, admin, w.group_id, t0, w.settings)).members
    assert members is not None
    assert [(m.user_id, m.usage, m.in_use) for m in members] == [
        (w.user_ids[0], people[w.user_ids[0]], 1.0),
        (w.user_ids[1], people[w.user_ids[1]], 0.25),
    ]


async def test_a_group_not_seen_is_forbidden_and_one_that_is_not_there_not_found(
    sessions, clock
) -> None:
    t0 = clock.now()
    w = await capacity_world(sessions, t0, n_cards=1, users=1)
    stranger = Actor(uuid.uuid4(), "stranger@example.org")
    with pytest.raises(Forbidden):
        await _share(sessions, stranger, w.group_id, t0, w.settings)
    with pytest.raises(NotFound):
        await _share(sessions, stranger, uuid.uuid4(), t0, w.settings)


async def test_the_groups_share_is_its_part_of_its_organizations_share(sessions, clock) -> None:
    """A super admin weighs the organization 3 against another's 1; within it, its admins
    weigh a second group 2 against the first's 1: the cards split 3 to 1 between the
    organizations, the organization's 3 as 1 to 2 between its groups."""
    t0 = clock.now()
    w = await capacity_world(sessions, t0, n_cards=4, users=2)
    async with sessions() as db, db.begin():
        org_id = (await db.get(Group, w.group_id)).org_id  # type: ignore[union-attr]
        second = Group(id=uuid.uuid4(), org_id=org_id, name="Second", created_at=t0)
        db.add(second)
        await db.flush()
        db.add(Membership(user_id=w.user_ids[1], group_id=second.id, role="member", created_at=t0))
    await set_policy(sessions, t0, "organization", org_id, {"org_weight": 3.0})
    await set_policy(sessions, t0, "group", second.id, {"queue_weight": 2.0})
    assert (await admit(sessions, w.ask(0, "1/4"), t0, w.settings)).allocation
    in_second = admission.Ask(uuid.uuid4(), w.user_ids[1], second.id, w.tiers["1/4"].id)
    assert (await admit(sessions, in_second, t0, w.settings)).allocation
    other = await another_group(sessions, t0)
    assert (await admit(sessions, other.ask(w, 0, "exclusive"), t0, w.settings)).allocation

    member = Actor(w.user_ids[1], "member@example.org", member_of={second.id: org_id})
    found = await _share(sessions, member, second.id, t0, w.settings)
    assert (found.org.share, found.org.weight, found.org.in_use) == (3.0, 3.0, 0.5)
    assert (found.active_orgs, found.active_groups) == (2, 2)
    assert {(g.name, g.share, g.weight) for g in found.groups} == {
        (found.group.name, 2.0, 2.0),
        (next(g.name for g in found.groups if g.group_id == w.group_id), 1.0, 1.0),
    }
