"""End to end in headless Chromium: the bootstrap admin registers a user, who must change the
password at first sign-in and then lands on the console.

The API runs as a real `gshare api` process serving the built console; screenshots of each step
are saved under test-output/e2e/.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Page, async_playwright, expect
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.identity.signin import bootstrap_super_admin
from gshare.kit.clock import SystemClock
from tests.processes import start_api, stop

ROOT = Path(__file__).resolve().parents[2]
CONSOLE = ROOT / "frontend" / "dist"
SHOTS = ROOT / "test-output" / "e2e"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ADMIN_EMAIL = "admin@example.org"
ADMIN_PASSWORD = "quartz-meadow-lantern-52"
NEW_EMAIL = "lin.wei@example.org"
INITIAL_PASSWORD = "copper-harbor-violet-19"
CHOSEN_PASSWORD = "glacier-tangerine-mosaic-86"

pytestmark = pytest.mark.e2e


@pytest.fixture
def console_built() -> None:
    if not (CONSOLE / "index.html").is_file():
        pytest.fail("the console is not built: run `make console` (make test does it)")
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is missing: `make test` installs it")


@pytest.fixture
async def admin(sessions: async_sessionmaker[AsyncSession]) -> None:
    async with sessions() as session, session.begin():
        await bootstrap_super_admin(
            session,
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


async def _shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


@asynccontextmanager
async def admin_api(server: str) -> AsyncIterator[httpx.AsyncClient]:
    """The bootstrap admin's API client, for setting up what a test does not click through."""
    async with httpx.AsyncClient(base_url=server) as api:
        login = await api.post(
            "/api/v1/auth/login", json={"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD}
        )
        assert login.status_code == 200, login.text
        api.headers["X-CSRF-Token"] = login.json()["csrf_token"]
        yield api


async def _sign_in(page: Page, base: str, email: str, password: str) -> None:
    await page.goto(f"{base}/")
    await page.get_by_label("Email").fill(email)
    await page.get_by_label("Password", exact=True).fill(password)
    await page.get_by_role("button", name="Sign in").click()


async def test_admin_registers_a_user_who_changes_the_password_and_lands(
    server: str, page: Page
) -> None:
    # An organization and group to put the new user in, through the API.
    async with admin_api(server) as api:
        org = (await api.post("/api/v1/orgs", json={"name": "Vision Lab"})).json()
        await api.post(f"/api/v1/orgs/{org['id']}/groups", json={"name": "Segmentation"})

    await _sign_in(page, server, ADMIN_EMAIL, ADMIN_PASSWORD)
    await expect(page.get_by_role("heading", name="Welcome")).to_be_visible()
    await _shot(page, "01-admin-home")

    await page.get_by_label("Admin mode").click()
    await expect(page.get_by_label("Admin mode")).to_be_checked()
    await page.get_by_role("link", name="Users").click()
    await page.get_by_role("button", name="New user").click()
    dialog = page.get_by_role("dialog")
    await dialog.get_by_label("Email").fill(NEW_EMAIL)
    await dialog.get_by_label("Name").fill("Lin Wei")
    await dialog.get_by_label("Initial password").fill(INITIAL_PASSWORD)
    await dialog.get_by_label("Group").click()
    await page.get_by_role("option", name="Segmentation").click()
    await _shot(page, "02-new-user-form")
    await dialog.get_by_role("button", name="Create user").click()
    await expect(dialog).to_be_hidden()
    await expect(page.get_by_role("cell", name=NEW_EMAIL)).to_be_visible()
    await _shot(page, "03-user-created")

    await page.get_by_role("button", name="Ada Admin").click()
    await page.get_by_role("menuitem", name="Sign out").click()
    await expect(page.get_by_role("button", name="Sign in")).to_be_visible()

    await _sign_in(page, server, NEW_EMAIL, INITIAL_PASSWORD)
    await expect(page.get_by_label("Current password")).to_be_visible()
    await _shot(page, "04-forced-password-change")
    await page.get_by_label("Current password").fill(INITIAL_PASSWORD)
    await page.get_by_label("New password", exact=True).fill(CHOSEN_PASSWORD)
    await page.get_by_label("Confirm new password").fill(CHOSEN_PASSWORD)
    await page.get_by_role("button", name="Change password").click()
    await expect(page.get_by_role("heading", name="Welcome")).to_be_visible()
    await expect(page.get_by_text("Segmentation")).to_be_visible()
    await expect(page.get_by_label("Admin mode")).to_have_count(0)
    await _shot(page, "05-new-user-home")


async def _credit_action(page: Page, row_name: str, action: str, amount: str) -> None:
    row = page.get_by_role("row").filter(has=page.get_by_text(row_name, exact=True))
    await row.get_by_role("button", name=action).click()
    dialog = page.get_by_role("dialog")
    await dialog.get_by_label("Amount").fill(amount)
    await dialog.get_by_role("button", name="Review").click()
    await expect(dialog.get_by_text(amount, exact=False).first).to_be_visible()
    await dialog.get_by_role("button", name="Confirm").click()
    await expect(dialog).to_be_hidden()


async def test_credits_flow_from_the_admin_console_to_a_members_wallet(
    server: str, page: Page
) -> None:
    async with admin_api(server) as api:
        org = (await api.post("/api/v1/orgs", json={"name": "Vision Lab"})).json()
        group = (
            await api.post(f"/api/v1/orgs/{org['id']}/groups", json={"name": "Segmentation"})
        ).json()
        created = await api.post(
            "/api/v1/users",
            json={
                "email": NEW_EMAIL,
                "name": "Lin Wei",
                "initial_password": INITIAL_PASSWORD,
                "group_id": group["id"],
                "role": "member",
            },
        )
        assert created.status_code == 201
    async with httpx.AsyncClient(base_url=server) as lin:
        login = await lin.post(
            "/api/v1/auth/login", json={"email": NEW_EMAIL, "password": INITIAL_PASSWORD}
        )
        changed = await lin.post(
            "/api/v1/auth/password",
            json={"current_password": INITIAL_PASSWORD, "new_password": CHOSEN_PASSWORD},
            headers={"X-CSRF-Token": login.json()["csrf_token"]},
        )
        assert changed.status_code == 200, changed.text

    await _sign_in(page, server, ADMIN_EMAIL, ADMIN_PASSWORD)
    await page.get_by_label("Admin mode").click()
    await page.get_by_role("link", name="Credits").click()
    await page.get_by_label("Organization").click()
    await page.get_by_role("option", name="Vision Lab").click()
    await _credit_action(page, "Vision Lab", "Mint", "500")
    await _credit_action(page, "Segmentation", "Allocate", "120")
    await _credit_action(page, "Lin Wei", "Allocate", "20.5")
    lin_row = page.get_by_role("row").filter(has=page.get_by_text("Lin Wei", exact=True))
    await expect(lin_row.get_by_text("20.5").first).to_be_visible()
    await _shot(page, "06-credits-tree")

    await page.get_by_role("button", name="Ada Admin").click()
    await page.get_by_role("menuitem", name="Sign out").click()
    await _sign_in(page, server, NEW_EMAIL, CHOSEN_PASSWORD)
    await page.get_by_role("link", name="Wallet").click()
    await expect(page.get_by_role("heading", name="Your wallet")).to_be_visible()
    await expect(page.get_by_text("20.5").first).to_be_visible()
    await expect(page.get_by_role("cell", name="Segmentation").first).to_be_visible()
    await _shot(page, "07-member-wallet")
