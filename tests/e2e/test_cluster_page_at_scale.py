"""The cluster page at scale, in headless Chromium: a cluster of 400 cards (50 nodes of 8) is
summed per GPU model and per node, filtered by state, node and text with the filters in the
address, and drawn a page of cards at a time. The time from navigation to a usable page (the
summary shown, a filter usable) is printed for it and for an 8-card cluster, measured in the
same run.

The timing goal (the 400-card page usable within a second) is benchmarks/cluster_page.py's:
this machine is shared, so here the figure is only checked loosely.

Screenshots are saved under test-output/e2e/.
"""

from __future__ import annotations

import re
import time
import uuid

import pytest
from playwright.async_api import Page, expect
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.kit.clock import SystemClock
from tests.capacity.builders import Card, add_cluster, admit, apply, capacity_world, cards
from tests.e2e.a11y import assert_accessible
from tests.e2e.steps import ADMIN_EMAIL, ADMIN_PASSWORD, shot, sign_in

pytestmark = pytest.mark.e2e

H100 = "NVIDIA-H100-80GB-HBM3"
SICK = {"GPU-00013", "GPU-00101", "GPU-00333"}
# Far beyond the benchmark's goal of a second: only a page that draws every card, or hangs,
# should fail here.
LOOSE_LIMIT_S = 8.0
CARD_TILE = re.compile(r"^Card GPU-")


def fleet(n: int) -> list[Card]:
    """n cards, 8 to a node; the last 80 are H100s, and the SICK ones report unhealthy."""
    made = cards(n)
    for card in made[-80:]:
        card.model, card.memory_mib = H100, 81559
    for card in made:
        card.healthy = card.uuid not in SICK
    return made


async def time_to_usable(page: Page, server: str, cluster_id: uuid.UUID) -> float:
    """Seconds from navigating to the cluster's page until its summary shows and the card
    search takes input."""
    started = time.perf_counter()
    await page.goto(f"{server}/admin/clusters/{cluster_id}", wait_until="commit")
    models = page.get_by_role("table", name="Cards by GPU model")
    await expect(models.get_by_role("row").nth(1)).to_be_visible()
    await expect(page.get_by_role("textbox", name="Search")).to_be_editable()
    return time.perf_counter() - started


async def test_a_cluster_of_400_cards_is_summed_filtered_and_drawn_a_page_at_a_time(
    server: str, page: Page, sessions: async_sessionmaker[AsyncSession]
) -> None:
    now = SystemClock().now()
    world = await capacity_world(sessions, now, n_cards=400, users=2)
    assert await apply(sessions, world.cluster_id, 2, fleet(400), now)
    for user, tier in [(0, "1/4"), (0, "1/4"), (1, "1/8"), (1, "exclusive")]:
        placed = await admit(sessions, world.ask(user, tier), now, world.settings)
        assert placed.allocation is not None, placed
    async with sessions() as db, db.begin():
        small = await add_cluster(db, now, name="lab-small")
    assert await apply(sessions, small, 1, cards(8), now)

    await sign_in(page, server, ADMIN_EMAIL, ADMIN_PASSWORD)
    await page.get_by_label("Admin mode").click()
    await expect(page.get_by_role("link", name="Clusters")).to_be_visible()

    # Twice each, alternating, keeping the faster: the first visit also warms the API's caches.
    eight, four_hundred = [], []
    for _ in range(2):
        eight.append(await time_to_usable(page, server, small))
        four_hundred.append(await time_to_usable(page, server, world.cluster_id))
    base, large = min(eight), min(four_hundred)
    print(
        f"\ncluster page usable: 8 cards {base * 1000:.0f} ms, 400 cards {large * 1000:.0f} ms, "
        f"ratio {large / base:.2f}"
    )
    assert large < LOOSE_LIMIT_S, f"the 400-card page took {large:.1f} s to be usable"

    totals = page.get_by_role("group", name="All cards of the cluster")
    await expect(totals.get_by_role("group", name="Cards")).to_contain_text("400")
    await expect(totals.get_by_role("group", name="Unhealthy")).to_contain_text("3")
    models = page.get_by_role("table", name="Cards by GPU model")
    h100 = models.get_by_role("row").filter(has=page.get_by_role("button", name=H100))
    await expect(h100.get_by_role("cell").nth(1)).to_have_text("80")
    await expect(page.get_by_role("group", name=CARD_TILE)).to_have_count(32)
    await expect(page.get_by_role("status").filter(has_text="400 cards")).to_contain_text(
        "showing 1\N{EN DASH}32"
    )
    await assert_accessible(page, "cluster page, 400 cards")
    await shot(page, "cluster-400-cards-summary")

    filters = page.get_by_role("search", name="Filter cards")
    await filters.get_by_text("Unhealthy", exact=True).click()
    await expect(page).to_have_url(re.compile(r"[?&]state=unhealthy"))
    await expect(page.get_by_role("group", name=CARD_TILE)).to_have_count(3)
    for card in sorted(SICK):
        await expect(page.get_by_role("group", name=f"Card {card}")).to_be_visible()

    # The four sessions admitted above: two quarters on one card, an eighth, a whole card.
    await filters.get_by_text("Carved", exact=True).click()
    await expect(page.get_by_role("group", name=CARD_TILE)).to_have_count(3)
    await expect(page.get_by_label(re.compile(r"^Slot \d+: .+@"))).to_have_count(4)
    await shot(page, "cluster-400-cards-carved")

    await filters.get_by_text("All", exact=True).click()
    await expect(page.get_by_role("group", name=CARD_TILE)).to_have_count(32)
    await page.get_by_role("textbox", name="Search").fill("gpu-node-7")
    await expect(page.get_by_text("8 of 400 cards match")).to_be_visible()
    node = page.get_by_role("region", name="gpu-node-7")
    await expect(node.get_by_role("group", name=CARD_TILE)).to_have_count(8)
    await assert_accessible(page, "cluster page, 400 cards, filtered")
    await shot(page, "cluster-400-cards-filtered")

    # The filters are in the address: a reload shows the same cards.
    await page.reload()
    await expect(page.get_by_role("textbox", name="Search")).to_have_value("gpu-node-7")
    await expect(page.get_by_role("group", name=CARD_TILE)).to_have_count(8)
