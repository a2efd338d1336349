"""Organizations, groups, users and memberships: who sees what, and what each change does."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from sqlalchemy import func, select

from gshare.audit.models import AuditEntry
from gshare.identity import service as identity
from gshare.identity.models import AdminGrant, Membership
from tests.builders import Builder

STRONG = "saffron-kettle-orbit-93"


async def test_super_admin_builds_a_tenant_end_to_end(build: Builder) -> None:
    admin = await build.user("Root", super_admin=True)
    client = await build.signed_in(admin)
    org = (await client.post("/api/v1/orgs", json={"name": "Physics"})).json()
    group = (await client.post(f"/api/v1/orgs/{org['id']}/groups", json={"name": "Optics"})).json()
    created = await client.post(
        "/api/v1/users",
        json={
            "email": "Marie.Curie@Example.org",
            "name": "Marie Curie",
            "initial_password": STRONG,
            "group_id": group["id"],
            "role": "member",
        },
    )
    assert created.status_code == 201, created.text
    user = created.json()
    assert user["email"] == "marie.curie@example.org"
    assert user["must_change_password"] is True
    members = (await client.get(f"/api/v1/groups/{group['id']}/members")).json()["items"]
    assert [(m["user_email"], m["role"], m["org_name"]) for m in members] == [
        ("marie.curie@example.org", "member", "Physics")
    ]
    duplicate = await client.post(
        "/api/v1/users",
        json={"email": "marie.curie@example.org", "name": "M", "initial_password": STRONG},
    )
    assert duplicate.status_code == 409
    assert duplicate.json()["error"]["code"] == "email_taken"
    same_name = await client.post("/api/v1/orgs", json={"name": "physics"})
    assert same_name.status_code == 409


async def test_weak_initial_passwords_are_refused(build: Builder) -> None:
    admin = await build.user(super_admin=True)
    client = await build.signed_in(admin)
    for weak in ("short", "password12345", "ada.lovelace.example"):
        response = await client.post(
            "/api/v1/users",
            json={"email": "ada.lovelace@example.org", "name": "Ada", "initial_password": weak},
        )
        assert response.status_code == 400, weak
        assert response.json()["error"]["code"] == "password_rejected"


async def test_org_admin_must_place_new_users_in_their_own_groups(build: Builder) -> None:
    org_a, org_b = await build.org(), await build.org()
    a1, b1 = await build.group(org_a), await build.group(org_b)
    admin = await build.user()
    await build.org_admin(admin, org_a)
    client = await build.signed_in(admin)
    body = {"email": "new@example.org", "name": "New", "initial_password": STRONG}
    assert (await client.post("/api/v1/users", json=body)).status_code == 403
    assert (
        await client.post("/api/v1/users", json=body | {"group_id": str(b1.id)})
    ).status_code == 403
    ok = await client.post("/api/v1/users", json=body | {"group_id": str(a1.id), "role": "guest"})
    assert ok.status_code == 201
    members = (await client.get(f"/api/v1/groups/{a1.id}/members")).json()["items"]
    assert [m["role"] for m in members] == ["guest"]


async def test_members_see_their_groups_and_fellow_members(build: Builder) -> None:
    org = await build.org("Biology")
    mine, other = await build.group(org, "Genetics"), await build.group(org, "Ecology")
    me, fellow, stranger = await build.user("Me"), await build.user("Fellow"), await build.user()
    await build.member(me, mine)
    await build.member(fellow, mine)
    await build.member(stranger, other)
    client = await build.signed_in(me)
    orgs = (await client.get("/api/v1/orgs")).json()["items"]
    assert [o["name"] for o in orgs] == ["Biology"]
    groups = (await client.get(f"/api/v1/orgs/{org.id}/groups")).json()["items"]
    assert [g["name"] for g in groups] == ["Genetics"]
    users = (await client.get("/api/v1/users")).json()["items"]
    assert {u["id"] for u in users} == {str(me.id), str(fellow.id)}
    assert (await client.get(f"/api/v1/users/{stranger.id}")).status_code == 403
    assert (await client.get(f"/api/v1/groups/{other.id}")).status_code == 403


async def test_an_expired_guest_is_no_member_wherever_a_groups_members_are_listed(
    build: Builder,
) -> None:
    group = await build.group(await build.org())
    member, guest, gone = await build.user(), await build.user(), await build.user()
    now = build.clock.now()
    await build.member(member, group)
    await build.member(guest, group, "guest", now + timedelta(days=1))
    await build.member(gone, group, "guest", now - timedelta(minutes=1))
    current = {member.id, guest.id}
    async with build.sessions() as db:
        assert set(await identity.member_ids(db, group.id, now)) == current
        assert set((await identity.members_of_groups(db, [group.id], now))[group.id]) == current
        pairs = [(u, group.id) for u in (member.id, guest.id, gone.id)]
        assert await identity.current_memberships_among(db, pairs, now) == set(pairs[:2])
        assert not await identity.is_current_member(db, gone.id, group.id, now)
        assert await identity.membership_org(db, gone.id, group.id, now) is None
        scopes = await identity.event_scopes(db, [gone.id], [], now)
        assert scopes.user_groups[gone.id] == {}


async def test_a_guest_sees_only_themself(build: Builder) -> None:
    org = await build.org()
    group = await build.group(org)
    guest, member = await build.user("Guest"), await build.user("Member")
    await build.member(guest, group, "guest", build.clock.now() + timedelta(days=3))
    await build.member(member, group)
    client = await build.signed_in(guest)
    users = (await client.get("/api/v1/users")).json()["items"]
    assert [u["id"] for u in users] == [str(guest.id)]
    assert (await client.get("/api/v1/orgs")).json()["items"] == []
    assert (await client.get(f"/api/v1/groups/{group.id}/members")).status_code == 403
    me = (await client.get("/api/v1/me")).json()
    assert [(m["role"], m["active"]) for m in me["memberships"]] == [("guest", True)]


async def test_an_expired_guest_membership_grants_nothing(build: Builder) -> None:
    org = await build.org()
    group = await build.group(org)
    admin, guest = await build.user(), await build.user()
    await build.group_admin(admin, group)
    admin_client = await build.signed_in(admin)
    expires = (build.clock.now() + timedelta(hours=1)).isoformat()
    response = await admin_client.put(
        f"/api/v1/groups/{group.id}/members/{guest.id}",
        json={"role": "guest", "expires_at": expires},
    )
    # The admin cannot see an outsider, so cannot add them.
    assert response.status_code == 403
    await build.member(guest, group, "guest", build.clock.now() + timedelta(hours=1))
    guest_client = await build.signed_in(guest)
    assert (await guest_client.get(f"/api/v1/users/{guest.id}")).status_code == 200
    build.clock.advance(timedelta(hours=2))
    me = (await guest_client.get("/api/v1/me")).json()
    assert [m["active"] for m in me["memberships"]] == [False]
    # Expiry is only for guests.
    member_expiring = await admin_client.put(
        f"/api/v1/groups/{group.id}/members/{guest.id}",
        json={"role": "member", "expires_at": expires},
    )
    assert member_expiring.status_code == 400
    assert member_expiring.json()["error"]["code"] == "only_guests_expire"


async def test_an_org_admin_cannot_touch_another_organization(build: Builder) -> None:
    org_a, org_b = await build.org("A"), await build.org("B")
    b1 = await build.group(org_b)
    admin = await build.user()
    await build.org_admin(admin, org_a)
    client = await build.signed_in(admin)
    assert (await client.get(f"/api/v1/orgs/{org_b.id}")).status_code == 403
    assert (
        await client.patch(f"/api/v1/orgs/{org_b.id}", json={"name": "Mine"})
    ).status_code == 403
    assert (
        await client.post(f"/api/v1/orgs/{org_b.id}/groups", json={"name": "X"})
    ).status_code == 403
    assert (await client.delete(f"/api/v1/groups/{b1.id}")).status_code == 403
    assert [o["name"] for o in (await client.get("/api/v1/orgs")).json()["items"]] == ["A"]


async def test_deleting_needs_empty_containers(build: Builder) -> None:
    admin = await build.user(super_admin=True)
    client = await build.signed_in(admin)
    org = await build.org()
    group = await build.group(org)
    member = await build.user()
    await build.member(member, group)
    response = await client.delete(f"/api/v1/orgs/{org.id}")
    assert (response.status_code, response.json()["error"]["code"]) == (409, "org_not_empty")
    response = await client.delete(f"/api/v1/groups/{group.id}")
    assert (response.status_code, response.json()["error"]["code"]) == (409, "group_not_empty")
    assert (
        await client.delete(f"/api/v1/groups/{group.id}/members/{member.id}")
    ).status_code == 204
    assert (await client.delete(f"/api/v1/groups/{group.id}")).status_code == 204
    assert (await client.delete(f"/api/v1/orgs/{org.id}")).status_code == 204
    assert (await client.get(f"/api/v1/orgs/{org.id}")).status_code == 404


async def test_admin_grants_show_in_me_and_can_be_revoked(build: Builder) -> None:
    admin = await build.user(super_admin=True)
    client = await build.signed_in(admin)
    org = await build.org("Chemistry")
    group = await build.group(org, "Catalysis")
    user = await build.user()
    await build.member(user, group)
    assert (await client.put(f"/api/v1/orgs/{org.id}/admins/{user.id}")).status_code == 200
    assert (await client.put(f"/api/v1/groups/{group.id}/admins/{user.id}")).status_code == 200
    again = await client.put(f"/api/v1/orgs/{org.id}/admins/{user.id}")
    assert again.status_code == 200  # idempotent
    user_client = await build.signed_in(user)
    roles = (await user_client.get("/api/v1/me")).json()["roles"]
    assert sorted((r["role"], r["org_name"], r["group_name"]) for r in roles) == [
        ("group_admin", "Chemistry", "Catalysis"),
        ("org_admin", "Chemistry", None),
    ]
    admins = (await client.get(f"/api/v1/orgs/{org.id}/admins")).json()["items"]
    assert [a["user_id"] for a in admins] == [str(user.id)]
    assert (await client.delete(f"/api/v1/orgs/{org.id}/admins/{user.id}")).status_code == 204
    assert (await user_client.get(f"/api/v1/orgs/{org.id}/admins")).status_code == 403


async def test_users_cannot_deactivate_themselves_or_a_super_admin(build: Builder) -> None:
    root = await build.user(super_admin=True)
    other_root = await build.user(super_admin=True)
    client = await build.signed_in(root)
    response = await client.patch(f"/api/v1/users/{root.id}", json={"active": False})
    assert response.status_code == 409
    org = await build.org()
    group = await build.group(org)
    org_admin = await build.user()
    await build.org_admin(org_admin, org)
    await build.member(other_root, group)
    admin_client = await build.signed_in(org_admin)
    response = await admin_client.patch(f"/api/v1/users/{other_root.id}", json={"active": False})
    assert response.status_code == 403


async def test_a_user_may_rename_themself(build: Builder) -> None:
    user = await build.user("Old Name")
    client = await build.signed_in(user)
    response = await client.patch(f"/api/v1/users/{user.id}", json={"name": "  New Name "})
    assert response.status_code == 200
    assert response.json()["name"] == "New Name"
    assert (await client.patch(f"/api/v1/users/{user.id}", json={"name": ""})).status_code == 422


async def test_an_empty_patch_is_checked_like_any_other(build: Builder) -> None:
    org = await build.org()
    group = await build.group(org)
    stranger, target = await build.user("Stranger"), await build.user("Target")
    await build.member(target, group)
    client = await build.signed_in(stranger)
    for body in ({}, {"name": None}, {"active": None}):
        response = await client.patch(f"/api/v1/users/{target.id}", json=body)
        assert response.status_code == 403, (body, response.text)
        assert "email" not in response.text


async def _ids(client, **params: object) -> set[str]:
    response = await client.get("/api/v1/users", params=params)
    assert response.status_code == 200, response.text
    return {user["id"] for user in response.json()["items"]}


async def test_user_list_filters_never_reach_past_what_the_caller_sees(build: Builder) -> None:
    org_a, org_b = await build.org(), await build.org()
    a1, a2 = await build.group(org_a), await build.group(org_a)
    b1, b2 = await build.group(org_b), await build.group(org_b)
    me, fellow, in_both = await build.user("Me"), await build.user("Fellow"), await build.user()
    await build.member(me, a1)
    await build.member(me, b1)
    await build.member(fellow, a1)
    await build.member(fellow, b2)  # in org B too, through a group that is not mine
    await build.member(in_both, a1)
    await build.member(in_both, a2)
    client = await build.signed_in(me)
    # Another tenant's group, and groups of my organizations that I am not in.
    assert await _ids(client, group_id=str(b2.id)) == set()
    assert await _ids(client, group_id=str(a2.id)) == set()
    # An organization I see counts only the groups of it that I see.
    assert await _ids(client, org_id=str(org_b.id)) == {str(me.id)}
    assert await _ids(client, org_id=str(org_a.id)) == {str(me.id), str(fellow.id), str(in_both.id)}
    assert await _ids(client, group_id=str(a1.id)) == {str(me.id), str(fellow.id), str(in_both.id)}
    stranger = await build.signed_in(await build.user())
    assert await _ids(stranger, org_id=str(org_a.id)) == set()
    assert await _ids(stranger, group_id=str(a1.id)) == set()
    # An org admin sees every group of their organization, and nothing of another's.
    admin = await build.user()
    await build.org_admin(admin, org_a)
    admin_client = await build.signed_in(admin)
    assert await _ids(admin_client, group_id=str(a2.id)) == {str(in_both.id)}
    assert await _ids(admin_client, org_id=str(org_b.id)) == set()
    root = await build.signed_in(await build.user(super_admin=True))
    assert await _ids(root, group_id=str(b2.id)) == {str(fellow.id)}


async def _audit_count(sessions, action: str, target_id: str) -> int:
    async with sessions() as db:
        count = await db.scalar(
            select(func.count()).where(
                AuditEntry.action == action, AuditEntry.target_id == target_id
            )
        )
    return count or 0


async def test_the_same_put_sent_twice_at_once_is_one_change(build: Builder, sessions) -> None:
    org = await build.org()
    group = await build.group(org)
    root = await build.signed_in(await build.user(super_admin=True))
    for _ in range(3):
        user = await build.user()
        for path, body, action in (
            (
                f"/api/v1/groups/{group.id}/members/{user.id}",
                {"role": "member"},
                "group.members.put",
            ),
            (f"/api/v1/orgs/{org.id}/admins/{user.id}", None, "org_admin.grant"),
            (f"/api/v1/groups/{group.id}/admins/{user.id}", None, "group_admin.grant"),
        ):
            both = await asyncio.gather(root.put(path, json=body), root.put(path, json=body))
            assert [r.status_code for r in both] == [200, 200], [r.text for r in both]
            assert both[0].json() == both[1].json()
            assert await _audit_count(sessions, action, str(user.id)) == 1
        async with sessions() as db:
            memberships = await db.scalar(select(func.count()).where(Membership.user_id == user.id))
            grants = await db.scalar(select(func.count()).where(AdminGrant.user_id == user.id))
        assert (memberships, grants) == (1, 2)
        # Removing twice at once: one removal, and the other finds nothing to remove.
        for path, action in (
            (f"/api/v1/groups/{group.id}/members/{user.id}", "group.members.delete"),
            (f"/api/v1/orgs/{org.id}/admins/{user.id}", "org_admin.revoke"),
            (f"/api/v1/groups/{group.id}/admins/{user.id}", "group_admin.revoke"),
        ):
            both = await asyncio.gather(root.delete(path), root.delete(path))
            assert sorted(r.status_code for r in both) == [204, 404], [r.text for r in both]
            assert await _audit_count(sessions, action, str(user.id)) == 1


async def test_a_membership_put_that_changes_nothing_records_nothing(
    build: Builder, sessions
) -> None:
    org = await build.org()
    group = await build.group(org)
    user = await build.user()
    root = await build.signed_in(await build.user(super_admin=True))
    path = f"/api/v1/groups/{group.id}/members/{user.id}"
    until = (build.clock.now() + timedelta(days=3)).isoformat()
    for body in ({"role": "member"}, {"role": "member"}, {"role": "guest", "expires_at": until}):
        response = await root.put(path, json=body)
        assert response.status_code == 200, response.text
        assert response.json()["role"] == body["role"]
    assert await _audit_count(sessions, "group.members.put", str(user.id)) == 2


async def test_the_same_user_created_four_times_at_once_is_one_user(build: Builder) -> None:
    root = await build.signed_in(await build.user(super_admin=True))
    body = {
        "email": "race@example.org",
        "name": "Race",
        "initial_password": "saffron-kettle-orbit-93",
        "group_id": None,
    }
    responses = await asyncio.gather(*(root.post("/api/v1/users", json=body) for _ in range(4)))
    assert sorted(r.status_code for r in responses) == [201, 409, 409, 409]
    # A request that lost the race gets what it would have got coming second.
    codes = {r.json()["error"]["code"] for r in responses if r.status_code == 409}
    assert codes == {"email_taken"}


async def test_lists_open_to_any_admin_keep_to_what_they_administer(build: Builder) -> None:
    """Any admin may ask for the sessions and the audit log of their scope; an admin of A
    asking about B's group, or about everything, sees nothing of B's."""
    org_a, org_b = await build.org("A"), await build.org("B")
    group_a, group_b = await build.group(org_a, "A1"), await build.group(org_b, "B1")
    alice, bob = await build.user("Alice"), await build.user("Bob")
    await build.org_admin(alice, org_a)
    theirs = await build.interactive_session(bob, None, group=group_b)
    await build.interactive_session(alice, None, group=group_a)
    client = await build.signed_in(alice)
    everything = await client.get("/api/v1/sessions", params={"scope": "admin"})
    assert everything.status_code == 200, everything.text
    assert str(theirs.id) not in {s["id"] for s in everything.json()["items"]}
    asked = await client.get(
        "/api/v1/sessions", params={"scope": "admin", "group_id": str(group_b.id)}
    )
    assert asked.status_code == 200
    assert asked.json()["items"] == []
    root = await build.signed_in(await build.user("Root", super_admin=True))
    made = await root.post(f"/api/v1/orgs/{org_b.id}/groups", json={"name": "B2"})
    assert made.status_code == 201, made.text
    assert (await root.get("/api/v1/audit", params={"org_id": str(org_b.id)})).json()["items"]
    audit = await client.get("/api/v1/audit", params={"org_id": str(org_b.id)})
    assert audit.status_code == 200, audit.text
    assert audit.json()["items"] == []
