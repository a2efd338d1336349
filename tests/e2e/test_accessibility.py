"""Every screen of the console, checked with axe-core in headless Chromium: no serious or
critical accessibility violation, for the super admin (every admin screen, in admin mode and
out of it), a member of a lab, and someone signing in or choosing a first password.

Screens that need a running session are checked in test_sessions_console.py, on the demo."""

from __future__ import annotations

import json

import pytest
from playwright.async_api import Page, expect
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.kit.clock import SystemClock
from tests.capacity.builders import add_cluster, apply, cards
from tests.e2e.a11y import violations
from tests.e2e.steps import ADMIN_EMAIL, ADMIN_PASSWORD, admin_api, member_of_a_new_lab, sign_in

pytestmark = pytest.mark.e2e

MEMBER_EMAIL = "lin.wei@example.org"
MEMBER_PASSWORD = "glacier-tangerine-mosaic-86"
NEWCOMER_EMAIL = "sam.okafor@example.org"
NEWCOMER_PASSWORD = "harbor-lilac-compass-47"

# A user's own screens, under each of which the console must have settled.
USER_SCREENS = (
    "/",
    "/sessions",
    "/sessions/new",
    "/requests",
    "/volumes",
    "/bookings",
    "/group",
    "/wallet",
)
ADMIN_SCREENS = (
    "/admin/orgs",
    "/admin/groups",
    "/admin/users",
    "/admin/credits",
    "/admin/clusters",
    "/admin/tiers",
    "/admin/policies",
    "/admin/queue",
    "/admin/sessions",
    "/admin/catalog",
    "/admin/worker",
    "/admin/audit",
)


async def _settled(page: Page, base: str, path: str) -> None:
    """The screen at `path` with its heading drawn and nothing left loading."""
    await page.goto(f"{base}{path}")
    await expect(page.get_by_role("heading", level=2).first).to_be_visible()
    await expect(page.locator(".mantine-Loader-root")).to_have_count(0)


async def test_every_screen_has_no_serious_accessibility_violation(
    server: str, page: Page, sessions: async_sessionmaker[AsyncSession]
) -> None:
    found: dict[str, list[dict]] = {}

    async def check(screen: str) -> None:
        if problems := await violations(page):
            found[screen] = problems

    org, group = await member_of_a_new_lab(
        server, MEMBER_EMAIL, "copper-harbor-violet-19", MEMBER_PASSWORD
    )
    now = SystemClock().now()
    async with sessions() as db, db.begin():
        cluster_id = await add_cluster(db, now, name="lab-east")
    assert await apply(sessions, cluster_id, 1, cards(4), now)
    async with admin_api(server) as api:
        wallet = (await api.get(f"/api/v1/groups/{group['id']}/wallet")).json()
        created = await api.post(
            "/api/v1/users",
            json={
                "email": NEWCOMER_EMAIL,
                "name": "Sam Okafor",
                "initial_password": NEWCOMER_PASSWORD,
                "group_id": group["id"],
                "role": "member",
            },
        )
        assert created.status_code == 201, created.text

    await page.goto(f"{server}/")
    await expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    await check("sign-in")

    await sign_in(page, server, ADMIN_EMAIL, ADMIN_PASSWORD)
    await expect(page.get_by_role("heading", name="Welcome")).to_be_visible()
    await page.get_by_label("Admin mode").click()
    await expect(page.get_by_label("Admin mode")).to_be_checked()
    detail_screens = (
        f"/admin/orgs/{org['id']}",
        f"/admin/groups/{group['id']}",
        f"/admin/credits/wallets/{wallet['id']}",
        f"/admin/clusters/{cluster_id}",
    )
    for path in (*USER_SCREENS, *ADMIN_SCREENS, *detail_screens):
        await _settled(page, server, path)
        await check(f"admin at {path}")

    await page.context.clear_cookies()
    await sign_in(page, server, MEMBER_EMAIL, MEMBER_PASSWORD)
    for path in USER_SCREENS:
        await _settled(page, server, path)
        await check(f"member at {path}")

    await page.context.clear_cookies()
    await sign_in(page, server, NEWCOMER_EMAIL, NEWCOMER_PASSWORD)
    await expect(page.get_by_label("New password", exact=True)).to_be_visible()
    await check("first password")
    assert not found, json.dumps(found, indent=1)
