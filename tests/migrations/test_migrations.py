"""Migrations: upgrade from empty, downgrade to nothing, and the models match the migrations."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from gshare.api.app import UnmigratedDatabase, check_schema, create_app
from gshare.kit.db import Base, make_engine
from gshare.kit.embedded_db import EmbeddedPostgres, drop_database, ensure_database
from gshare.kit.schema_version import current_revision, downgrade, head_revision, upgrade
from gshare.kit.settings import Settings
from gshare.migrations import load_all_models

_n = itertools.count()


@pytest.fixture
async def empty_url(postgres: EmbeddedPostgres):
    name = f"empty_{next(_n)}"
    await ensure_database(postgres.url(), name)
    yield postgres.url(name)
    await drop_database(postgres.url(), name)


async def _tables(url: str) -> set[str]:
    engine = make_engine(url, pool_size=1)
    async with engine.connect() as conn:
        names = await conn.run_sync(lambda sync: set(inspect(sync).get_table_names()))
    await engine.dispose()
    return names


async def test_upgrade_from_empty_then_downgrade_then_upgrade_again(empty_url: str) -> None:
    await asyncio.to_thread(upgrade, empty_url)
    await asyncio.to_thread(upgrade, empty_url)  # idempotent
    engine = make_engine(empty_url, pool_size=1)
    assert await current_revision(engine) == head_revision()
    await engine.dispose()
    assert {"users", "organizations", "groups", "memberships", "audit_entries"} <= await _tables(
        empty_url
    )
    await asyncio.to_thread(downgrade, empty_url, "base")
    assert await _tables(empty_url) == {"alembic_version"}
    await asyncio.to_thread(upgrade, empty_url)
    assert "login_sessions" in await _tables(empty_url)


async def test_the_models_match_the_migrations(database_url: str) -> None:
    load_all_models()
    engine = make_engine(database_url, pool_size=1)
    async with engine.connect() as conn:
        diff = await conn.run_sync(
            lambda sync: compare_metadata(MigrationContext.configure(sync), Base.metadata)
        )
    await engine.dispose()
    assert diff == []


async def test_the_api_refuses_to_serve_an_unmigrated_database(empty_url: str) -> None:
    engine = make_engine(empty_url, pool_size=1)
    with pytest.raises(UnmigratedDatabase, match="run `gshare migrate`"):
        await check_schema(engine)
    app = create_app(Settings(), database_url=empty_url, engine=engine)
    with pytest.raises(UnmigratedDatabase):
        async with app.router.lifespan_context(app):
            pass
    await engine.dispose()
