"""The console under test: a real `gshare api` process serving the built console, its first
super admin, and a headless Chromium page."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from playwright.async_api import Page, async_playwright
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.identity.signin import bootstrap_super_admin
from gshare.kit.clock import SystemClock
from tests.e2e.steps import ADMIN_EMAIL, ADMIN_PASSWORD, CHROMIUM, CONSOLE
from tests.processes import start_api, stop


@pytest.fixture
def console_built() -> None:
    if not (CONSOLE / "index.html").is_file():
        pytest.fail("the console is not built: run `make console` (make test does it)")
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is missing: `make test` installs it")


@pytest.fixture
async def admin(sessions: async_sessionmaker[AsyncSession]) -> None:
    async with sessions() as db, db.begin():
        await bootstrap_super_admin(
            db,
            email=ADMIN_EMAIL,
            password=ADMIN_PASSWORD,
            name="Ada Admin",
            now=SystemClock().now(),
        )


@pytest.fixture
def server(database_url: str, console_built: None, admin: None, tmp_path: Path) -> Iterator[str]:
    proc, base = start_api(database_url, tmp_path / "data", console_dir=CONSOLE)
    yield base
    stop(proc)


@pytest.fixture
async def page() -> AsyncIterator[Page]:
    async with async_playwright() as p:
        browser = await p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        context = await browser.new_context(viewport={"width": 1280, "height": 860})
        page = await context.new_page()
        page.set_default_timeout(15_000)
        yield page
        await browser.close()
