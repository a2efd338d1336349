"""Test fixtures: one real PostgreSQL per run, a fresh migrated database per test, the real app."""

from __future__ import annotations

import asyncio
import itertools
import tempfile
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from gshare.api.app import create_app
from gshare.kit.clock import FrozenClock
from gshare.kit.db import make_engine, make_sessionmaker
from gshare.kit.embedded_db import (
    EmbeddedPostgres,
    drop_database,
    ensure_database,
    start_embedded,
)
from gshare.kit.schema_version import upgrade
from gshare.kit.settings import Settings
from tests.builders import Builder

TEMPLATE = "gshare_template"
_numbers = itertools.count()


@pytest.fixture(scope="session")
def postgres() -> Iterator[EmbeddedPostgres]:
    root = Path(tempfile.mkdtemp(prefix="gshare-test-"))
    server = start_embedded(root / "pg", delete_on_stop=True)
    asyncio.run(ensure_database(server.url(), TEMPLATE))
    upgrade(server.url(TEMPLATE))
    yield server
    server.stop()


@pytest.fixture
async def database_url(postgres: EmbeddedPostgres) -> AsyncIterator[str]:
    """A fresh database cloned from the migrated template: every test starts empty."""
    name = f"test_{next(_numbers)}"
    await ensure_database(postgres.url(), name, template=TEMPLATE)
    yield postgres.url(name)
    await drop_database(postgres.url(), name)


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(database_url, pool_size=5)
    yield engine
    await engine.dispose()


@pytest.fixture
def sessions(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return make_sessionmaker(engine)


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    # The caller cache is off here: builders write straight to the database without announcing
    # it. tests/identity/test_principal_cache.py covers the cache against real notifications.
    return Settings(
        data_dir=tmp_path / "data", console_dir=tmp_path / "no-console", auth_cache_seconds=0
    )


@pytest.fixture
async def app(
    settings: Settings, database_url: str, engine: AsyncEngine, clock: FrozenClock
) -> AsyncIterator[FastAPI]:
    app = create_app(settings, database_url=database_url, clock=clock, engine=engine)
    async with app.router.lifespan_context(app):
        yield app


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 50000))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client


@pytest.fixture
async def build(
    sessions: async_sessionmaker[AsyncSession], clock: FrozenClock, app: FastAPI
) -> AsyncIterator[Builder]:
    builder = Builder(sessions, clock, app)
    yield builder
    await builder.close()


@pytest.fixture(scope="session")
def images() -> None:
    """Every image `make images` builds, built once per run (podman's layer cache makes that
    quick when nothing changed): the tests in tests/images and the operator's image test."""
    from tests.containers import build_images

    build_images()
