"""Every screen of the console, checked with axe-core in headless Chromium: no serious or
critical accessibility violation, for the super admin (every admin screen, in admin mode and
out of it), a member of a lab, and someone signing in or choosing a first password.

Screens that need a running session are checked in test_sessions_console.py, on the demo."""

from __future__ import annotations

import itertools
import json
import uuid
from datetime import datetime, timedelta

import pytest
from playwright.async_api import Page, expect
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.credits import operations
from gshare.credits import repository as credits
from gshare.credits.amounts import MICRO
from gshare.identity.models import User
from gshare.kit.clock import SystemClock
from gshare.usage.models import NO_CLUSTER, UsageDay, UsageHour
from tests.capacity.builders import add_cluster, apply, cards
from tests.e2e.a11y import violations
from tests.e2e.steps import ADMIN_EMAIL, ADMIN_PASSWORD, admin_api, member_of_a_new_lab, sign_in
from tests.usage.builders import months_of

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
    "/usage",
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
    "/admin/isolation",
    "/admin/queue",
    "/admin/sessions",
    "/admin/catalog",
    "/admin/worker",
    "/admin/audit",
)


async def _used_gpus(
    sessions: async_sessionmaker[AsyncSession], org_id: str, group_id: str, now: datetime
) -> None:
    """The member has used GPUs these last days, idled some of it, and paid for it: the
    wallet's and the Usage page's charts have something to draw."""
    async with sessions() as db, db.begin():
        user_id = await db.scalar(select(User.id).where(User.email == MEMBER_EMAIL))
        assert user_id is not None
        org, group = uuid.UUID(org_id), uuid.UUID(group_id)
        wallets = [
            await credits.account_id(db, kind, owner, now)
            for kind, owner in (("org", org), ("group", group), ("user", user_id))
        ]
        await operations.mint(db, wallet_id=wallets[0], amount=50 * MICRO, now=now)
        for source, target in itertools.pairwise(wallets):
            await operations.move(
                db, from_id=source, to_id=target, amount=20 * MICRO, kind="allocation", now=now
            )
        hold = await operations.place_hold(
            db,
            wallet_id=wallets[2],
            session_id=uuid.uuid4(),
            rate_per_hour=2 * MICRO,
            window_seconds=3600,
            now=now,
        )
        await operations.settle_hold(db, hold_id=hold.id, used=3 * MICRO // 2, now=now)
        days = []
        for n, model in itertools.product(range(5), ("A100-80GB", "H100-80GB")):
            days.append(
                UsageDay(
                    day=(now - timedelta(days=n)).date(),
                    user_id=user_id,
                    group_id=group,
                    org_id=org,
                    model=model,
                    tier="1/4",
                    cluster_id=NO_CLUSTER,
                    held_seconds=7200.0 * (n + 1),
                    gpu_seconds=1800.0 * (n + 1),
                    idle_gpu_seconds=600.0,
                    measured_seconds=7200.0,
                    credits=MICRO,
                    vram_peak_mib=9000,
                )
            )
        db.add_all([*days, *months_of(days)])
        db.add(
            UsageHour(
                allocation_id=uuid.uuid4(),
                hour=now.replace(minute=0, second=0, microsecond=0),
                session_id=uuid.uuid4(),
                user_id=user_id,
                group_id=group,
                org_id=org,
                cluster_id=None,
                model="A100-80GB",
                tier="1/4",
                vram_limit_mib=20480,
                held_seconds=3600.0,
                gpu_seconds=900.0,
                idle_gpu_seconds=600.0,
                measured_seconds=3600.0,
                credits=MICRO,
                vram_peak_mib=9000,
                vram_mib_seconds=0.0,
            )
        )


async def _settled(page: Page, base: str, path: str) -> None:
    """The screen at `path` with its heading drawn, nothing left loading, and every chart
    drawn (a chart measures its box before it draws: checked before, it would be left out)."""
    await page.goto(f"{base}{path}")
    await expect(page.get_by_role("heading", level=2).first).to_be_visible()
    await expect(page.locator(".mantine-Loader-root")).to_have_count(0)
    charts = page.locator(".recharts-responsive-container")
    await expect(charts.locator("svg.recharts-surface")).to_have_count(await charts.count())


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
    await _used_gpus(sessions, org["id"], group["id"], now)
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
