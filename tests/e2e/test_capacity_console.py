"""End to end in headless Chromium: a cluster's inventory, reported through the inventory
service, is drawn card by card; the admin moves a card to the MIG pool and carves it with one
of the layouts the GPU accepts.

Screenshots of each step are saved under test-output/e2e/.
"""

from __future__ import annotations

import pytest
from playwright.async_api import Page, expect
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.kit.clock import SystemClock
from tests.capacity.builders import add_cluster, apply, cards
from tests.e2e.steps import ADMIN_EMAIL, ADMIN_PASSWORD, shot, sign_in

pytestmark = pytest.mark.e2e


async def test_admin_sees_the_inventory_and_carves_a_card_into_mig(
    server: str, page: Page, sessions: async_sessionmaker[AsyncSession]
) -> None:
    now = SystemClock().now()
    async with sessions() as db, db.begin():
        cluster_id = await add_cluster(db, now, name="lab-east")
    assert await apply(sessions, cluster_id, 1, cards(2), now)

    await sign_in(page, server, ADMIN_EMAIL, ADMIN_PASSWORD)
    await page.get_by_label("Admin mode").click()
    await page.get_by_role("link", name="Clusters").click()
    await page.get_by_role("link", name="lab-east").click()

    node = page.get_by_role("region", name="gpu-node-0")
    first = node.get_by_role("group", name="Card GPU-00000")
    second = node.get_by_role("group", name="Card GPU-00001")
    await expect(first.get_by_label("Whole card: free")).to_be_visible()
    await expect(second.get_by_text("hami-core")).to_be_visible()
    await shot(page, "20-cluster-inventory")

    await second.get_by_role("button", name="Move to MIG pool").click()
    dialog = page.get_by_role("dialog", name="Move card")
    await dialog.get_by_role("button", name="Move card").click()
    await expect(dialog).to_be_hidden()
    await expect(second.get_by_label("No MIG layout")).to_be_visible()

    await second.get_by_role("button", name="Set MIG layout").click()
    layouts = page.get_by_role("dialog", name="Set MIG layout")
    await layouts.get_by_role("radio", name="3g.40gb + 3g.40gb", exact=True).check()
    await shot(page, "21-mig-layout-choice")
    await layouts.get_by_role("button", name="Apply layout").click()
    await expect(layouts).to_be_hidden()
    await expect(second.get_by_label("3g.40gb at slice 0: free")).to_be_visible()
    await expect(second.get_by_label("3g.40gb at slice 4: free")).to_be_visible()
    await expect(first.get_by_label("Whole card: free")).to_be_visible()
    await shot(page, "22-mig-card-drawn")
