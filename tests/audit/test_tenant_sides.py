"""Entries about two tenants are filed once per side: each side's admins read their own entry,
in their own organization and group, and none of the other side's ids."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy import select

from gshare.capacity.models import Notice
from gshare.identity.models import Group, Organization, User
from tests.builders import Builder
from tests.capacity.builders import set_policy
from tests.sessions.world import API, SessionWorld, admission_loop_turn, session_world

NOTICED = "session.preemption_noticed"


async def _admins(build: Builder, org: Organization, group: Group) -> list[httpx.AsyncClient]:
    """A signed-in admin of the organization, and one of the group."""
    org_admin, group_admin = await build.user(), await build.user()
    await build.org_admin(org_admin, org)
    await build.group_admin(group_admin, group)
    return [await build.signed_in(org_admin), await build.signed_in(group_admin)]


async def _noticed(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    response = await client.get(f"{API}/audit", params={"action": NOTICED})
    assert response.status_code == 200, response.text
    return list(response.json()["items"])


@dataclass
class Preempted:
    w: SessionWorld
    victim_org: Organization
    victim_group: Group
    claimant_org: Organization
    claimant_group: Group
    victim: dict[str, Any]  # the session given notice
    waiting: dict[str, Any]  # the session whose request claims its card
    notice: Notice


async def _preempted_across(build: Builder, *, same_org: bool) -> Preempted:
    """One card: member 0's session runs in the world's group; member 1 (priority high), also a
    member of another group (of another organization unless `same_org`), asks there for it."""
    w = await session_world(build, n_cards=1)
    async with build.sessions() as db:
        victim_group = await db.get(Group, w.group_id)
        assert victim_group is not None
        victim_org = await db.get(Organization, victim_group.org_id)
        assert victim_org is not None
        claimant_user = await db.get(User, w.capacity.user_ids[1])
        assert claimant_user is not None
    claimant_org = victim_org if same_org else await build.org("Other")
    claimant_group = await build.group(claimant_org, "Claimants")
    await build.member(claimant_user, claimant_group)
    await set_policy(
        build.sessions, build.clock.now(), "user", claimant_user.id, {"priority": "high"}
    )
    victim = await w.running(0, "exclusive")
    waiting = await w.create(1, "exclusive", group_id=str(claimant_group.id))
    assert waiting["state"] == "queued", waiting
    await admission_loop_turn(w.build)
    async with build.sessions() as db:
        [notice] = list(await db.scalars(select(Notice)))
    assert notice.request_id is not None
    return Preempted(
        w, victim_org, victim_group, claimant_org, claimant_group, victim, waiting, notice
    )


async def test_each_side_of_a_preemption_reads_only_its_own_entry(build: Builder) -> None:
    p = await _preempted_across(build, same_org=False)
    notice, victim, victim_group = p.notice, p.victim, p.victim_group
    deadline = notice.deadline.isoformat()
    victim_user, claimant_user = p.w.capacity.user_ids
    victim_side = {
        "side": "victim",
        "session_id": victim["id"],
        "user_id": str(victim_user),
        "card_id": str(notice.card_id),
        "reason": "priority",
        "deadline": deadline,
    }
    claimant_side = {
        "side": "claimant",
        "request_id": str(notice.request_id),
        "user_id": str(claimant_user),
        "card_id": str(notice.card_id),
        "deadline": deadline,
    }
    theirs = {
        "victim": {str(claimant_user), str(notice.request_id), p.waiting["id"]},
        "claimant": {str(victim_user), victim["id"], str(victim_group.id)},
    }
    sides = (
        ("victim", p.victim_org, victim_group, victim_side, "session", victim["id"]),
        ("claimant", p.claimant_org, p.claimant_group, claimant_side, "admission_request", None),
    )
    for side, org, group, detail, target_type, target_id in sides:
        for admin in await _admins(build, org, group):
            [entry] = await _noticed(admin)
            assert entry["org_id"] == str(org.id)
            assert entry["group_id"] == str(group.id)
            assert entry["target_type"] == target_type
            assert entry["target_id"] == (target_id or str(notice.request_id))
            assert entry["detail"] == detail
            # The other organization is not named at all, by any id.
            seen = json.dumps(entry)
            assert not [key for key in theirs[side] if key in seen], (side, entry)
    # The super admin reads both.
    root = await build.signed_in(await build.user(super_admin=True))
    assert sorted(e["detail"]["side"] for e in await _noticed(root)) == ["claimant", "victim"]


async def test_within_one_organization_the_victim_side_names_the_claiming_group(
    build: Builder,
) -> None:
    p = await _preempted_across(build, same_org=True)
    claimant_group = p.claimant_group
    org_admin, victim_admin = await _admins(build, p.victim_org, p.victim_group)
    entries = {e["detail"]["side"]: e for e in await _noticed(org_admin)}
    assert set(entries) == {"victim", "claimant"}
    assert entries["victim"]["detail"]["for_group_id"] == str(claimant_group.id)
    assert "for_group_id" not in entries["claimant"]["detail"]
    [own] = await _noticed(victim_admin)
    assert own["detail"]["for_group_id"] == str(claimant_group.id)
    assert own["detail"]["session_id"] == p.victim["id"]
    assert str(p.notice.request_id) not in json.dumps(own)
    assert str(p.w.capacity.user_ids[1]) not in json.dumps(own)


async def test_org_admins_read_the_entries_of_their_groups(build: Builder) -> None:
    """An entry filed with a group only (a session created in it) is its organization's too."""
    w = await session_world(build, n_cards=1)
    created = await w.create(0, "exclusive")
    async with build.sessions() as db:
        group = await db.get(Group, w.group_id)
        assert group is not None
        org = await db.get(Organization, group.org_id)
        assert org is not None
    other_org = await build.org("Other")
    [ours, _] = await _admins(build, org, group)
    [theirs, _] = await _admins(build, other_org, await build.group(other_org))
    params = {"action": "session.create"}
    [entry] = (await ours.get(f"{API}/audit", params=params)).json()["items"]
    assert entry["target_id"] == created["id"]
    assert entry["group_id"] == str(w.group_id)
    assert (await theirs.get(f"{API}/audit", params=params)).json()["items"] == []
    assert uuid.UUID(entry["target_id"])


async def _notices(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    response = await client.get(f"{API}/notices")
    assert response.status_code == 200, response.text
    return list(response.json()["items"])


async def test_each_side_of_a_preemption_reads_only_its_own_side_of_the_notice(
    build: Builder,
) -> None:
    """The notices list, as the audit log: across organizations, each side's admins read their
    own side and nothing of the other's, not even its group."""
    p = await _preempted_across(build, same_org=False)
    notice, victim_user, claimant_user = p.notice, *p.w.capacity.user_ids
    victims = await _admins(build, p.victim_org, p.victim_group)
    claimants = await _admins(build, p.claimant_org, p.claimant_group)
    for admin in victims:
        [seen] = await _notices(admin)
        assert seen["session_id"] == p.victim["id"]
        assert seen["user_id"] == str(victim_user)
        assert seen["group_id"] == str(p.victim_group.id)
        assert seen["for_group_id"] is None
        assert seen["request_id"] is None
        assert str(claimant_user) not in json.dumps(seen)
    for admin in claimants:
        [seen] = await _notices(admin)
        assert seen["for_group_id"] == str(p.claimant_group.id)
        assert seen["request_id"] == str(notice.request_id)
        assert seen["session_id"] is None
        assert seen["user_id"] is None
        assert seen["group_id"] is None
        assert str(victim_user) not in json.dumps(seen)
    # The super admin reads both sides whole.
    root = await build.signed_in(await build.user(super_admin=True))
    [whole] = await _notices(root)
    assert whole["group_id"] == str(p.victim_group.id)
    assert whole["for_group_id"] == str(p.claimant_group.id)
    assert whole["session_id"] == p.victim["id"]


async def test_within_one_organization_each_side_of_a_notice_reads_the_other_group(
    build: Builder,
) -> None:
    p = await _preempted_across(build, same_org=True)
    victim_admin = (await _admins(build, p.victim_org, p.victim_group))[1]
    claimant_admin = (await _admins(build, p.claimant_org, p.claimant_group))[1]
    [seen] = await _notices(victim_admin)
    assert seen["for_group_id"] == str(p.claimant_group.id)
    assert seen["request_id"] is None  # the other group's member's request
    [seen] = await _notices(claimant_admin)
    assert seen["group_id"] == str(p.victim_group.id)
    assert seen["session_id"] is None
