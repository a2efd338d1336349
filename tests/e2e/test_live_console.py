"""End to end in headless Chromium: credits an admin allocates in one browser reach a member's
open wallet page in another, through the event stream, without a reload; the member's
notification bell counts them.

Screenshots of each step are saved under test-output/e2e/.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Page, expect

from tests.e2e.steps import (
    ADMIN_EMAIL,
    ADMIN_PASSWORD,
    admin_api,
    member_of_a_new_lab,
    shot,
    sign_in,
)

MEMBER_EMAIL = "lin.wei@example.org"
INITIAL_PASSWORD = "copper-harbor-violet-19"
MEMBER_PASSWORD = "glacier-tangerine-mosaic-86"
# The stream must deliver well inside this; the wallet page's own refresh would take longer.
LIVE_DEADLINE_MS = 10_000

pytestmark = pytest.mark.e2e


@pytest.fixture
async def member_page(page: Page) -> AsyncIterator[Page]:
    """A second, separate browser context: its own cookies, its own tab."""
    browser = page.context.browser
    assert browser is not None
    context = await browser.new_context(viewport={"width": 1280, "height": 860})
    member = await context.new_page()
    member.set_default_timeout(15_000)
    yield member
    await context.close()


async def _funded_group_with_member(server: str) -> None:
    """Vision Lab's Segmentation group holding 120 credits, and Lin Wei in it, signed up."""
    org, _ = await member_of_a_new_lab(server, MEMBER_EMAIL, INITIAL_PASSWORD, MEMBER_PASSWORD)
    async with admin_api(server) as api:
        minted = await api.post(
            "/api/v1/credits/mint",
            json={"org_id": org["id"], "amount": "500"},
            headers={"Idempotency-Key": "live-console-mint"},
        )
        assert minted.status_code in (200, 201), minted.text
        tree = (await api.get(f"/api/v1/orgs/{org['id']}/wallet-tree")).json()
        allocated = await api.post(
            "/api/v1/credits/transfers",
            json={
                "from_wallet_id": tree["org"]["id"],
                "to_wallet_id": tree["groups"][0]["wallet"]["id"],
                "amount": "120",
            },
            headers={"Idempotency-Key": "live-console-group"},
        )
        assert allocated.status_code in (200, 201), allocated.text


async def test_credits_reach_the_members_open_wallet_page_live(
    server: str, page: Page, member_page: Page
) -> None:
    await _funded_group_with_member(server)

    member = member_page
    await sign_in(member, server, MEMBER_EMAIL, MEMBER_PASSWORD)
    await member.get_by_role("link", name="Wallet", exact=True).click()
    await expect(member.get_by_role("heading", name="Your wallet")).to_be_visible()
    balance = member.get_by_role("group", name="Balance")
    await expect(balance.get_by_text(re.compile(r"^0(\.0*)?$"))).to_be_visible()
    # Signing up left notices of its own (the password change, the sign-in): clear them first.
    await member.get_by_role("button", name=re.compile(r"^Notifications")).click()
    panel = member.get_by_role("dialog", name="Notifications")
    await panel.get_by_role("button", name="Mark all read").click()
    await expect(member.get_by_role("button", name="Notifications", exact=True)).to_be_visible()
    await expect(panel.get_by_text("Unread", exact=True)).to_have_count(0)
    await member.get_by_role("button", name="Notifications", exact=True).click()
    await expect(panel).to_be_hidden()
    # Survives only as long as this document does: a reload would clear it.
    await member.evaluate("window.openedBeforeTheTransfer = true")

    await sign_in(page, server, ADMIN_EMAIL, ADMIN_PASSWORD)
    await page.get_by_label("Admin mode").click()
    await page.get_by_role("link", name="Credits").click()
    await expect(page.get_by_role("heading", name="Credits", level=2)).to_be_visible()
    await page.get_by_label("Organization", exact=True).click()
    await page.get_by_role("option", name="Vision Lab").click()
    row = page.get_by_role("row").filter(has=page.get_by_text("Lin Wei", exact=True))
    await row.get_by_role("button", name="Allocate").click()
    dialog = page.get_by_role("dialog")
    await dialog.get_by_label("Amount").fill("20.5")
    await dialog.get_by_role("button", name="Review").click()
    await dialog.get_by_role("button", name="Confirm").click()
    await expect(dialog).to_be_hidden()
    await expect(row.get_by_text("20.5").first).to_be_visible()

    await expect(balance.get_by_text(re.compile(r"^20\.50*$"))).to_be_visible(
        timeout=LIVE_DEADLINE_MS
    )
    await expect(member.get_by_role("button", name="Notifications, 1 unread")).to_be_visible(
        timeout=LIVE_DEADLINE_MS
    )
    assert await member.evaluate("window.openedBeforeTheTransfer === true")
    await shot(member, "30-live-wallet")

    await member.get_by_role("button", name="Notifications, 1 unread").click()
    await expect(panel.get_by_text("Unread", exact=True)).to_have_count(1)
    await shot(member, "31-notification-list")
    await panel.get_by_role("button", name=re.compile("Unread")).click()
    await expect(member.get_by_role("button", name="Notifications", exact=True)).to_be_visible()
    await expect(panel.get_by_text("Unread", exact=True)).to_have_count(0)
