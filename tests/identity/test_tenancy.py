"""Organizations, groups, users and memberships: who sees what, and what each change does."""

from __future__ import annotations

from datetime import timedelta

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
