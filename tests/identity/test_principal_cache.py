"""The caller cache: reads reuse a caller's view, and a change in any process ends it at once."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine

from gshare.api.app import create_app
from gshare.identity.models import User
from gshare.identity.permissions import Actor
from gshare.identity.principals import Principal, PrincipalCache
from gshare.kit.clock import FrozenClock
from gshare.kit.settings import Settings
from tests.builders import PASSWORD, Builder
from tests.eventually import eventually

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def principal(user_id: uuid.UUID | None = None, **kw: object) -> Principal:
    uid = user_id or uuid.uuid4()
    fields: dict[str, object] = {
        "login_id": uuid.uuid4(),
        "csrf_token": "t",
        "login_expires_at": NOW + timedelta(days=7),
        "last_seen_at": NOW,
        "user_id": uid,
        "email": "a@example.org",
        "name": "A",
        "is_super_admin": False,
        "must_change_password": False,
        "active": True,
        "created_at": NOW,
        "actor": Actor(user_id=uid, email="a@example.org"),
    } | kw
    return Principal(**fields)  # type: ignore[arg-type]


def connected_cache() -> PrincipalCache:
    cache = PrincipalCache(ttl=timedelta(seconds=15))
    cache.connection_changed(True)
    return cache


def test_entries_expire_after_the_ttl_or_when_the_view_changes_by_itself() -> None:
    cache = connected_cache()
    cache.put(b"k", principal(), NOW, cache.epoch)
    assert cache.get(b"k", NOW + timedelta(seconds=14)) is not None
    assert cache.get(b"k", NOW + timedelta(seconds=15)) is None
    cache.put(b"g", principal(changes_at=NOW + timedelta(seconds=5)), NOW, cache.epoch)
    assert cache.get(b"g", NOW + timedelta(seconds=5)) is None


def test_a_change_during_a_load_keeps_the_stale_view_out() -> None:
    cache = connected_cache()
    epoch = cache.epoch  # a request starts reading the database
    cache.invalidate(f"user:{uuid.uuid4()}")  # meanwhile something changes
    cache.put(b"k", principal(), NOW, epoch)
    assert cache.get(b"k", NOW) is None


def test_invalidation_drops_only_that_users_entries() -> None:
    cache = connected_cache()
    alice, bob = uuid.uuid4(), uuid.uuid4()
    cache.put(b"a1", principal(alice), NOW, cache.epoch)
    cache.put(b"a2", principal(alice), NOW, cache.epoch)
    cache.put(b"b", principal(bob), NOW, cache.epoch)
    cache.invalidate(f"user:{alice}")
    assert cache.get(b"a1", NOW) is None
    assert cache.get(b"a2", NOW) is None
    assert cache.get(b"b", NOW) is not None
    cache.invalidate("all")
    assert cache.get(b"b", NOW) is None


def test_the_cache_is_off_while_notifications_cannot_arrive() -> None:
    cache = connected_cache()
    cache.put(b"k", principal(), NOW, cache.epoch)
    cache.connection_changed(False)
    assert cache.get(b"k", NOW) is None
    cache.put(b"k", principal(), NOW, cache.epoch)
    assert cache.get(b"k", NOW) is None


@pytest.fixture
async def second_app(
    settings: Settings, database_url: str, engine: AsyncEngine, clock: FrozenClock
) -> AsyncIterator[FastAPI]:
    """Another API process on the same database, with the cache on."""
    cached = settings.model_copy(update={"auth_cache_seconds": 15.0})
    app = create_app(cached, database_url=database_url, clock=clock, engine=engine)
    async with app.router.lifespan_context(app):
        yield app


@asynccontextmanager
async def _client(app: FastAPI, user: User) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        response = await client.post(
            "/api/v1/auth/login", json={"email": user.email, "password": PASSWORD}
        )
        assert response.status_code == 200
        client.headers["X-CSRF-Token"] = response.json()["csrf_token"]
        yield client


async def test_deactivation_in_one_process_ends_reads_in_another(
    build: Builder, second_app: FastAPI
) -> None:
    admin = await build.user(super_admin=True)
    user = await build.user()
    admin_client = await build.signed_in(admin)
    async with _client(second_app, user) as reader:
        assert (await reader.get("/api/v1/me")).status_code == 200
        response = await admin_client.patch(f"/api/v1/users/{user.id}", json={"active": False})
        assert response.status_code == 200

        async def refused() -> bool:
            return (await reader.get("/api/v1/me")).status_code == 401

        await eventually(
            refused, "the deactivation to reach the other process", timeout=5, interval=0.02
        )


async def test_reads_are_served_from_the_cache_until_a_change_is_announced(
    build: Builder, second_app: FastAPI, sessions
) -> None:
    user = await build.user("Cached Name")
    async with _client(second_app, user) as reader:
        assert (await reader.get("/api/v1/me")).json()["user"]["name"] == "Cached Name"
        # A write that announces nothing is not seen by reads for the cache's lifetime ...
        async with sessions() as db, db.begin():
            await db.execute(update(User).where(User.id == user.id).values(name="Quiet"))
        assert (await reader.get("/api/v1/me")).json()["user"]["name"] == "Cached Name"
        # ... while a change made through the API is announced and seen at once.
        renamed = await reader.patch(f"/api/v1/users/{user.id}", json={"name": "Loud Name"})
        assert renamed.status_code == 200

        async def renamed_seen() -> bool:
            return (await reader.get("/api/v1/me")).json()["user"]["name"] == "Loud Name"

        await eventually(
            renamed_seen, "the rename to reach the other process", timeout=5, interval=0.02
        )
