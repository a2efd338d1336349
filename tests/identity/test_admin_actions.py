"""Password resets by an admin, and granting and revoking super admin, through the API."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from gshare.api.app import create_app
from gshare.identity.models import User
from gshare.kit.clock import FrozenClock
from gshare.kit.settings import Settings
from tests.builders import PASSWORD, Builder
from tests.eventually import eventually

LOGIN = "/api/v1/auth/login"
FRESH = "amber-walrus-compass-64"


@pytest.fixture
async def cached_app(
    settings: Settings, database_url: str, engine: AsyncEngine, clock: FrozenClock
) -> AsyncIterator[FastAPI]:
    """A second API process on the same database, with the caller cache on."""
    cached = settings.model_copy(update={"auth_cache_seconds": 15.0})
    app = create_app(cached, database_url=database_url, clock=clock, engine=engine)
    async with app.router.lifespan_context(app):
        yield app


@asynccontextmanager
async def _reader(app: FastAPI, email: str) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        response = await client.post(LOGIN, json={"email": email, "password": PASSWORD})
        assert response.status_code == 200
        yield client


async def _super_admins(sessions: async_sessionmaker[AsyncSession]) -> set[str]:
    async with sessions() as db:
        rows = await db.scalars(select(User.email).where(User.is_super_admin.is_(True)))
        return set(rows)


async def _audit(client: httpx.AsyncClient, action: str) -> list[dict[str, object]]:
    response = await client.get("/api/v1/audit", params={"action": action})
    assert response.status_code == 200
    items: list[dict[str, object]] = response.json()["items"]
    return items


# ---- password reset ------------------------------------------------------------------------


async def test_an_admin_resets_a_password_and_every_sign_in_of_the_user_ends(
    build: Builder,
) -> None:
    org = await build.org()
    group = await build.group(org)
    admin, user = await build.user(), await build.user("Reset Me")
    await build.org_admin(admin, org)
    await build.member(user, group)
    admin_client = await build.signed_in(admin)
    user_client = await build.signed_in(user)

    response = await admin_client.post(
        f"/api/v1/users/{user.id}/password-reset", json={"initial_password": FRESH}
    )
    assert response.status_code == 200, response.text
    assert response.json()["id"] == str(user.id)
    assert response.json()["must_change_password"] is True

    assert (await user_client.get("/api/v1/me")).status_code == 401
    old = await build.anonymous().post(LOGIN, json={"email": user.email, "password": PASSWORD})
    assert old.status_code == 401
    again = await build.signed_in(user, FRESH)
    blocked = await again.get("/api/v1/orgs")
    assert blocked.json()["error"]["code"] == "password_change_required"

    entries = await _audit(admin_client, "user.reset_password")
    assert [(e["outcome"], e["actor_email"], e["target_id"]) for e in entries] == [
        ("allowed", admin.email, str(user.id))
    ]
    assert entries[0]["org_id"] == str(org.id)


async def test_a_reset_password_must_pass_the_password_policy(build: Builder) -> None:
    admin, user = await build.user(super_admin=True), await build.user("Weak Target")
    client = await build.signed_in(admin)
    user_client = await build.signed_in(user)
    for weak in ("password1234", "weak target 2026"):
        response = await client.post(
            f"/api/v1/users/{user.id}/password-reset", json={"initial_password": weak}
        )
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "password_rejected"
    empty = await client.post(f"/api/v1/users/{user.id}/password-reset", json={})
    assert empty.status_code == 422
    assert (await user_client.get("/api/v1/me")).status_code == 200, "nothing changed"


async def test_nobody_resets_their_own_password_this_way(build: Builder) -> None:
    for super_admin in (True, False):
        me = await build.user(super_admin=super_admin)
        client = await build.signed_in(me)
        response = await client.post(
            f"/api/v1/users/{me.id}/password-reset", json={"initial_password": FRESH}
        )
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "cannot_reset_own_password"


async def test_who_may_reset_whom(build: Builder) -> None:
    org_a, org_b = await build.org(), await build.org()
    a1, b1 = await build.group(org_a), await build.group(org_b)
    admin_a = await build.user()
    await build.org_admin(admin_a, org_a)
    in_both, root_in_a = await build.user(), await build.user(super_admin=True)
    await build.member(in_both, a1)
    await build.member(in_both, b1)
    await build.member(root_in_a, a1)
    other_root = await build.user(super_admin=True)
    client = await build.signed_in(admin_a)
    for target in (in_both, root_in_a):
        response = await client.post(
            f"/api/v1/users/{target.id}/password-reset", json={"initial_password": FRESH}
        )
        assert response.status_code == 403, target.email
    denied = await _audit(await build.signed_in(other_root), "user.reset_password")
    assert {(e["outcome"], e["target_id"]) for e in denied} == {
        ("denied", str(in_both.id)),
        ("denied", str(root_in_a.id)),
    }
    root_client = await build.signed_in(other_root)
    response = await root_client.post(
        f"/api/v1/users/{root_in_a.id}/password-reset", json={"initial_password": FRESH}
    )
    assert response.status_code == 200
    nobody = await root_client.post(
        f"/api/v1/users/{org_a.id}/password-reset", json={"initial_password": FRESH}
    )
    assert nobody.status_code == 404


async def test_a_reset_ends_cached_reads_in_another_process_at_once(
    build: Builder, cached_app: FastAPI
) -> None:
    admin, user = await build.user(super_admin=True), await build.user()
    admin_client = await build.signed_in(admin)
    async with _reader(cached_app, user.email) as reader:
        assert (await reader.get("/api/v1/me")).status_code == 200
        response = await admin_client.post(
            f"/api/v1/users/{user.id}/password-reset", json={"initial_password": FRESH}
        )
        assert response.status_code == 200

        async def refused() -> bool:
            return (await reader.get("/api/v1/me")).status_code == 401

        await eventually(refused, "the reset to end cached reads", timeout=5, interval=0.02)


# ---- super admins --------------------------------------------------------------------------


async def test_a_super_admin_grants_and_revokes_super_admin(
    build: Builder, sessions: async_sessionmaker[AsyncSession]
) -> None:
    root, user = await build.user(super_admin=True), await build.user()
    client = await build.signed_in(root)
    for _ in range(2):  # granting twice is fine
        assert (await client.put(f"/api/v1/users/{user.id}/super-admin")).status_code == 204
    assert await _super_admins(sessions) == {root.email, user.email}
    promoted = await build.signed_in(user)
    assert (await promoted.get("/api/v1/me")).json()["user"]["is_super_admin"] is True
    for _ in range(2):
        assert (await client.delete(f"/api/v1/users/{user.id}/super-admin")).status_code == 204
    assert await _super_admins(sessions) == {root.email}
    entries = await _audit(client, "super_admin.grant") + await _audit(client, "super_admin.revoke")
    assert [(e["action"], e["actor_email"], e["target_id"]) for e in entries] == [
        ("super_admin.grant", root.email, str(user.id)),
        ("super_admin.revoke", root.email, str(user.id)),
    ]
    unknown = "00000000-0000-4000-8000-000000000000"
    assert (await client.put(f"/api/v1/users/{unknown}/super-admin")).status_code == 404


async def test_the_last_active_super_admin_cannot_be_revoked(
    build: Builder, sessions: async_sessionmaker[AsyncSession]
) -> None:
    root = await build.user(super_admin=True)
    await build.user(super_admin=True, active=False)
    client = await build.signed_in(root)
    response = await client.delete(f"/api/v1/users/{root.id}/super-admin")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "last_super_admin"
    assert root.email in await _super_admins(sessions)


@pytest.mark.parametrize("change", ["revoke", "deactivate"])
async def test_racing_changes_leave_one_active_super_admin(
    change: str,
    build: Builder,
    sessions: async_sessionmaker[AsyncSession],
    engine: AsyncEngine,
) -> None:
    """Two super admins each revoke (or deactivate) the other at the same moment."""
    first, second = await build.user(super_admin=True), await build.user(super_admin=True)
    clients = [await build.signed_in(first), await build.signed_in(second)]

    async def end(client: httpx.AsyncClient, other: User) -> httpx.Response:
        if change == "revoke":
            return await client.delete(f"/api/v1/users/{other.id}/super-admin")
        return await client.patch(f"/api/v1/users/{other.id}", json={"active": False})

    async with engine.connect() as blocker:
        # Hold both rows so that the two changes are under way together when they go.
        transaction = await blocker.begin()
        await blocker.execute(text("SELECT id FROM users WHERE is_super_admin FOR UPDATE"))
        both = asyncio.gather(end(clients[0], second), end(clients[1], first))

        async def both_waiting() -> bool:
            # A connection of its own: activity is read once per transaction.
            async with engine.connect() as watcher:
                waiting: int | None = await watcher.scalar(
                    text(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                        "AND datname = current_database()"
                    )
                )
            return waiting == 2

        await eventually(
            both_waiting, "both changes to wait on the locks", timeout=5, interval=0.02
        )
        await transaction.rollback()
        responses = await both
    statuses = sorted(r.status_code for r in responses)
    assert statuses[1] == 409, [r.text for r in responses]
    assert statuses[0] in (200, 204)
    refused = next(r for r in responses if r.status_code == 409)
    assert refused.json()["error"]["code"] == "last_super_admin"
    async with sessions() as db:
        active = await db.scalars(
            select(User.id).where(User.is_super_admin.is_(True), User.active.is_(True))
        )
        assert len(list(active)) == 1


async def test_only_a_super_admin_manages_super_admins(build: Builder) -> None:
    org = await build.org()
    admin, user = await build.user(), await build.user()
    await build.org_admin(admin, org)
    await build.member(user, await build.group(org))
    client = await build.signed_in(admin)
    assert (await client.put(f"/api/v1/users/{user.id}/super-admin")).status_code == 403
    assert (await client.put(f"/api/v1/users/{admin.id}/super-admin")).status_code == 403


async def test_a_grant_reaches_cached_reads_in_another_process_at_once(
    build: Builder, cached_app: FastAPI
) -> None:
    root, user = await build.user(super_admin=True), await build.user()
    client = await build.signed_in(root)
    async with _reader(cached_app, user.email) as reader:
        assert (await reader.get("/api/v1/me")).json()["user"]["is_super_admin"] is False
        assert (await client.put(f"/api/v1/users/{user.id}/super-admin")).status_code == 204

        async def promoted() -> bool:
            return (await reader.get("/api/v1/me")).json()["user"]["is_super_admin"] is True

        await eventually(promoted, "the grant to reach cached reads", timeout=5, interval=0.02)
