"""The console runs under its Content-Security-Policy in Chromium: every page loads and is used
without a single violation, and the header is on every console response."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest
from playwright.async_api import Page, expect
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.credits import operations
from gshare.credits.repository import account_id
from gshare.identity.models import User
from gshare.kit.clock import SystemClock
from tests.e2e.steps import ADMIN_EMAIL, ADMIN_PASSWORD, admin_api, shot, sign_in

pytestmark = pytest.mark.e2e

# The console's own modules and styles only: no inline script, and inline styles by nonce alone.
REQUIRED = (
    "default-src 'self'",
    "script-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
)

REPORT_VIOLATIONS = """
window.cspViolations = [];
document.addEventListener('securitypolicyviolation', (event) => {
  const violation = `${event.effectiveDirective} blocked ${event.blockedURI || 'inline'}`;
  window.cspViolations.push(violation);
  window.reportCspViolation(violation);
});
"""


def _directives(header: str) -> dict[str, str]:
    return {
        part.strip().split(" ", 1)[0]: part.strip() for part in header.split(";") if part.strip()
    }


def _check_policy(header: str | None) -> dict[str, str]:
    assert header, "the console answers without a Content-Security-Policy"
    directives = _directives(header)
    for required in REQUIRED:
        assert directives.get(required.split(" ", 1)[0]) == required, header
    assert "unsafe-inline" not in header, header
    assert "unsafe-eval" not in header, header
    return directives


async def test_every_console_response_carries_the_policy(server: str) -> None:
    async with httpx.AsyncClient(base_url=server) as client:
        first, second = await client.get("/"), await client.get("/admin/users")
        nonces = []
        for page in (first, second):
            directives = _check_policy(page.headers.get("content-security-policy"))
            nonce = re.fullmatch(
                r"style-src 'self' 'nonce-([A-Za-z0-9_-]{16,})'", directives["style-src"]
            )
            assert nonce, directives["style-src"]
            # The page's tags carry the very nonce its header admits; no placeholder is left.
            assert f'nonce="{nonce.group(1)}"' in page.text
            assert "GSHARE_CSP_NONCE" not in page.text
            nonces.append(nonce.group(1))
        assert nonces[0] != nonces[1], "a nonce is never reused"

        asset = re.search(r'src="(/assets/[^"]+\.js)"', first.text)
        assert asset
        script = await client.get(asset.group(1))
        assert script.status_code == 200
        _check_policy(script.headers.get("content-security-policy"))


async def _admin_used_credits(
    sessions: async_sessionmaker[AsyncSession], org_id: uuid.UUID, group_id: uuid.UUID
) -> None:
    """Credits into the admin's wallet and some of them used today, for the usage chart."""
    now = SystemClock().now()
    async with sessions() as db, db.begin():
        admin_id = (await db.execute(select(User.id).where(User.email == ADMIN_EMAIL))).scalar_one()
        org_w = await account_id(db, "org", org_id, now)
        group_w = await account_id(db, "group", group_id, now)
        user_w = await account_id(db, "user", admin_id, now)
        await operations.mint(db, wallet_id=org_w, amount=100_000_000, now=now)
        for source, target in ((org_w, group_w), (group_w, user_w)):
            await operations.move(
                db, from_id=source, to_id=target, amount=20_000_000, kind="allocation", now=now
            )
        hold = await operations.place_hold(
            db,
            wallet_id=user_w,
            session_id=uuid.uuid4(),
            rate_per_hour=2_000_000,
            window_seconds=3600,
            now=now,
        )
        await operations.capture(db, hold_id=hold.id, amount=1_500_000, now=now)


async def test_the_console_works_without_violating_its_policy(
    server: str, page: Page, sessions: async_sessionmaker[AsyncSession]
) -> None:
    async with admin_api(server) as api:
        org = (await api.post("/api/v1/orgs", json={"name": "Vision Lab"})).json()
        group = (
            await api.post(f"/api/v1/orgs/{org['id']}/groups", json={"name": "Segmentation"})
        ).json()
    await _admin_used_credits(sessions, uuid.UUID(org["id"]), uuid.UUID(group["id"]))

    violations: list[str] = []
    console_errors: list[str] = []

    def report(violation: str) -> None:
        violations.append(violation)

    await page.context.expose_function("reportCspViolation", report)
    await page.context.add_init_script(REPORT_VIOLATIONS)
    page.on(
        "console",
        lambda message: (
            console_errors.append(message.text)
            if "Content Security Policy" in message.text
            else None
        ),
    )

    await sign_in(page, server, ADMIN_EMAIL, ADMIN_PASSWORD)
    await expect(page.get_by_role("heading", name="Welcome")).to_be_visible()
    pages = [
        ("/wallet", "Your wallet"),
        ("/admin/orgs", "Organizations"),
        (f"/admin/orgs/{org['id']}", "Vision Lab"),
        (f"/admin/groups?org={org['id']}", "Groups"),
        (f"/admin/groups/{group['id']}", "Segmentation"),
        ("/admin/credits", "Credits"),
        ("/admin/clusters", "Clusters"),
        ("/admin/audit", "Audit log"),
        ("/admin/users", "Users"),
    ]
    for path, heading in pages:
        await page.goto(f"{server}{path}")
        await expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible()
        if path == "/wallet":
            chart = page.get_by_role("img", name=re.compile("Credits used per day"))
            await expect(chart.locator("svg .recharts-bar-rectangle").last).to_be_visible()
            await shot(page, "csp-wallet")
    # A modal, a select's dropdown and the strength meter: styles Mantine adds as they open.
    await page.get_by_role("button", name="New user").click()
    dialog = page.get_by_role("dialog")
    await dialog.get_by_label("Initial password").fill("lantern quartz meadow")
    await dialog.get_by_label("Group").click()
    await expect(page.get_by_role("option", name="Segmentation")).to_be_visible()
    await shot(page, "csp-new-user")
    # Every <style> tag Mantine wrote carries this page's nonce.
    unstamped = await page.evaluate(
        "() => [...document.querySelectorAll('style')].filter((s) => !s.nonce).length"
    )
    assert unstamped == 0
    assert (violations, console_errors) == ([], [])

    # The watch works: a <style> tag without the nonce is refused and reported.
    await page.evaluate(
        "() => { const s = document.createElement('style');"
        " s.textContent = 'body { color: red }'; document.head.append(s); }"
    )
    await page.wait_for_function("() => window.cspViolations.length > 0")
    assert await page.evaluate("() => window.cspViolations") == ["style-src-elem blocked inline"]
