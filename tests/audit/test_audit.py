"""The audit log records every change and every denial, and admins read it within their scope."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from tests.builders import PASSWORD, Builder


async def test_changes_and_denials_are_recorded(build: Builder) -> None:
    root = await build.user("Root", super_admin=True)
    root_client = await build.signed_in(root)
    org = (await root_client.post("/api/v1/orgs", json={"name": "Astronomy"})).json()
    nosy = await build.user("Nosy")
    nosy_client = await build.signed_in(nosy)
    assert (
        await nosy_client.patch(f"/api/v1/orgs/{org['id']}", json={"name": "Mine"})
    ).status_code == 403
    entries = (await root_client.get("/api/v1/audit")).json()["items"]
    summary = [(e["action"], e["outcome"], e["actor_email"]) for e in entries]
    assert ("org.update", "denied", nosy.email) in summary
    assert ("org.create", "allowed", root.email) in summary
    denied = next(e for e in entries if e["outcome"] == "denied")
    assert denied["target_type"] == "org"
    assert denied["target_id"] == org["id"]
    assert denied["org_id"] == org["id"]
    created = next(e for e in entries if e["action"] == "org.create")
    assert created["detail"] == {"name": "Astronomy"}


async def test_admins_read_only_their_scope(build: Builder) -> None:
    root = await build.user(super_admin=True)
    root_client = await build.signed_in(root)
    a = (await root_client.post("/api/v1/orgs", json={"name": "A"})).json()
    assert (await root_client.post("/api/v1/orgs", json={"name": "B"})).status_code == 201
    admin_a = await build.user()
    granted = await root_client.put(f"/api/v1/orgs/{a['id']}/admins/{admin_a.id}")
    assert granted.status_code == 200
    client = await build.signed_in(admin_a)
    entries = (await client.get("/api/v1/audit")).json()["items"]
    assert entries, "the org admin sees their organization's entries"
    scoped = [e for e in entries if e["org_id"] or e["group_id"]]
    assert {e["org_id"] for e in scoped} == {a["id"]}
    # Entries of no organization: only the org admin's own sign-in, as a user of A.
    assert {(e["action"], e["target_id"]) for e in entries if e not in scoped} == {
        ("auth.login", str(admin_a.id))
    }
    filtered = (await client.get("/api/v1/audit", params={"action": "org.create"})).json()["items"]
    assert [e["action"] for e in filtered] == ["org.create"]


async def test_filters_and_pagination(build: Builder) -> None:
    root = await build.user(super_admin=True)
    client = await build.signed_in(root)
    for name in ("One", "Two", "Three"):
        await client.post("/api/v1/orgs", json={"name": name})
    page = (await client.get("/api/v1/audit", params={"action": "org.create", "limit": 2})).json()
    assert [e["detail"]["name"] for e in page["items"]] == ["Three", "Two"]
    rest = (
        await client.get(
            "/api/v1/audit", params={"action": "org.create", "cursor": page["next_cursor"]}
        )
    ).json()
    assert [e["detail"]["name"] for e in rest["items"]] == ["One"]
    assert rest["next_cursor"] is None
    naive = await client.get("/api/v1/audit", params={"since": "2026-01-01T00:00:00"})
    assert naive.status_code == 422


async def test_members_cannot_read_the_audit_log(build: Builder) -> None:
    user = await build.user()
    client = await build.signed_in(user)
    assert (await client.get("/api/v1/audit")).status_code == 403


async def test_the_audit_table_is_append_only(build: Builder) -> None:
    root = await build.user(super_admin=True)
    await build.signed_in(root)
    async with build.sessions() as db:
        with pytest.raises(DBAPIError, match="cannot be changed"):
            await db.execute(text("DELETE FROM audit_entries"))


async def test_admins_see_the_sign_ins_of_their_users_only(build: Builder) -> None:
    org_a, org_b = await build.org("A"), await build.org("B")
    a1, b1 = await build.group(org_a), await build.group(org_b)
    alice, bob = await build.user("Alice"), await build.user("Bob")
    await build.member(alice, a1)
    await build.member(bob, b1)
    admin_a, admin_a1 = await build.user(), await build.user()
    await build.org_admin(admin_a, org_a)
    await build.group_admin(admin_a1, a1)
    for user in (alice, bob):
        wrong = {"email": user.email, "password": "not-the-password-9"}
        assert (await build.anonymous().post("/api/v1/auth/login", json=wrong)).status_code == 401
        client = await build.signed_in(user)
        changed = await client.post(
            "/api/v1/auth/password",
            json={"current_password": PASSWORD, "new_password": "quartz-meadow-lantern-58"},
        )
        assert changed.status_code == 200
        client.headers["X-CSRF-Token"] = changed.json()["csrf_token"]
        assert (await client.post("/api/v1/auth/logout")).status_code == 204
    unknown = {"email": "nobody@example.org", "password": "not-the-password-9"}
    await build.anonymous().post("/api/v1/auth/login", json=unknown)

    expected = {
        ("auth.login", "failed", alice.email),
        ("auth.login", "allowed", str(alice.id)),
        ("auth.password_change", "allowed", str(alice.id)),
        ("auth.logout", "allowed", str(alice.id)),
    }
    about_alice_or_bob = {alice.email, str(alice.id), bob.email, str(bob.id), unknown["email"]}
    for admin in (admin_a, admin_a1):
        client = await build.signed_in(admin)
        entries = (await client.get("/api/v1/audit", params={"target_type": "user"})).json()
        seen = {
            (e["action"], e["outcome"], e["target_id"])
            for e in entries["items"]
            if e["target_id"] in about_alice_or_bob
        }
        assert seen == expected, admin.name


async def test_entries_name_their_actor_and_target(build: Builder) -> None:
    root = await build.user("Root", super_admin=True)
    client = await build.signed_in(root)
    org = (await client.post("/api/v1/orgs", json={"name": "Astronomy"})).json()
    gone = (await client.post("/api/v1/orgs", json={"name": "Short-lived"})).json()
    assert (await client.delete(f"/api/v1/orgs/{gone['id']}")).status_code == 204
    entries = (await client.get("/api/v1/audit", params={"target_type": "org"})).json()["items"]
    created = {e["target_id"]: e for e in entries if e["action"] == "org.create"}
    assert created[org["id"]]["actor_name"] == "Root"
    assert created[org["id"]]["target_name"] == "Astronomy"
    # A deleted organization names nothing now; the entry keeps its id and what it recorded.
    assert created[gone["id"]]["target_name"] is None
    assert created[gone["id"]]["detail"] == {"name": "Short-lived"}


async def test_a_failed_sign_in_names_the_email_typed_never_the_password(build: Builder) -> None:
    root = await build.user(super_admin=True)
    alice = await build.user("Alice")
    anonymous = build.anonymous()
    wrong = "not-the-password-9"
    assert (
        await anonymous.post("/api/v1/auth/login", json={"email": alice.email, "password": wrong})
    ).status_code == 401
    typed = "Mallory\u202e@Example.org\u200b\x1b[2J" + "x" * 280
    assert (
        await anonymous.post("/api/v1/auth/login", json={"email": typed, "password": wrong})
    ).status_code == 401
    client = await build.signed_in(root)
    page = await client.get("/api/v1/audit", params={"action": "auth.login", "outcome": "failed"})
    assert wrong not in page.text
    by_email = {e["actor_email"]: e for e in page.json()["items"]}
    known = by_email[alice.email]
    assert known["actor_id"] is None
    assert (known["target_name"], known["target_email"]) == ("Alice", alice.email)
    shown = "mallory@example.org[2j" + "x" * 232
    assert len(shown) == 254
    assert by_email[shown]["target_id"] == shown
    assert by_email[shown]["target_name"] is None
    assert by_email[shown]["detail"]["reason"] == "unknown_email"


async def test_the_log_reads_oldest_first_across_pages(build: Builder) -> None:
    root = await build.user(super_admin=True)
    client = await build.signed_in(root)
    for name in ("One", "Two", "Three"):
        await client.post("/api/v1/orgs", json={"name": name})
    params = {"action": "org.create", "sort": "at", "limit": 2}
    first = (await client.get("/api/v1/audit", params=params)).json()
    assert [e["detail"]["name"] for e in first["items"]] == ["One", "Two"]
    rest = (
        await client.get("/api/v1/audit", params={**params, "cursor": first["next_cursor"]})
    ).json()
    assert [e["detail"]["name"] for e in rest["items"]] == ["Three"]
    for bad in ("name", "-id", "at; DROP TABLE users", "\x00"):
        response = await client.get("/api/v1/audit", params={"sort": bad})
        assert response.status_code == 422, bad


async def test_admins_are_told_no_names_of_users_outside_their_reach(build: Builder) -> None:
    """An entry in an admin's scope may name anyone (a denied attempt names whoever it was
    about): the admin sees the id or email recorded, never who it is today."""
    org_x, org_y = await build.org("X"), await build.org("Y")
    g, elsewhere = await build.group(org_x, "Lab"), await build.group(org_y, "Hidden group")
    admin, group_admin = await build.user("Admin X"), await build.user("Group admin")
    await build.org_admin(admin, org_x)
    await build.group_admin(group_admin, g)
    puppet, victor = await build.user("Puppet"), await build.user("Victor Outside")
    await build.member(puppet, g)
    await build.member(victor, elsewhere)
    client = await build.signed_in(puppet)
    # Denied, and recorded in the group's scope, about a user outside it (by id, by email).
    assert (await client.put(f"/api/v1/groups/{g.id}/admins/{victor.id}")).status_code == 403
    assert (
        await client.put(f"/api/v1/groups/{g.id}/members/{victor.id}", json={"role": "member"})
    ).status_code == 403
    create = {
        "email": victor.email,
        "name": "Anyone",
        "initial_password": "quartz-meadow-lantern-58",
        "group_id": str(g.id),
    }
    assert (await client.post("/api/v1/users", json=create)).status_code == 403
    for reader in (admin, group_admin):
        entries = (
            await (await build.signed_in(reader)).get("/api/v1/audit", params={"outcome": "denied"})
        ).json()["items"]
        about_victor = [e for e in entries if e["target_id"] in (str(victor.id), victor.email)]
        assert len(about_victor) == 3, reader.name
        for entry in about_victor:
            assert (entry["target_name"], entry["target_email"]) == (None, None), entry
            assert entry["actor_name"] == "Puppet"  # the puppet is within reach
    root = await build.signed_in(await build.user(super_admin=True))
    everything = (await root.get("/api/v1/audit", params={"outcome": "denied"})).json()["items"]
    assert {e["target_name"] for e in everything if e["target_id"] == str(victor.id)} == {
        "Victor Outside"
    }
