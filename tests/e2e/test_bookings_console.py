"""End to end in headless Chromium on `make demo`'s stack, shrunk to one card: a group admin
books it from the console's Bookings page, and the booking takes the card back for a member.

- Lin, of another organization, runs a quarter-card session on the only card.
- Grace, admin of the demo's Research group, opens Bookings, books the whole card (the exclusive
  tier) from now for an hour with a minute's notice; the form says it fits, My bookings lists it
  and the calendar shows the card booked.
- Ada, a member of Research, opens New session, is told of the booking, and starts a session on
  the exclusive tier. Lin's session is given the booking's notice, with its reason, and paused at
  its end; Ada's session starts on the card.

Screenshots of each step are saved under test-output/e2e/.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

from tests.e2e.a11y import assert_accessible
from tests.e2e.steps import (
    admin_api,
    choose_password,
    member_of_a_new_lab,
    running_demo,
    shot,
    sign_in,
)
from tests.eventually import eventually

ADA_EMAIL = "admin@example.org"  # the demo's admin: a member of its Research group, with credits
ADA_PASSWORD = "quartz-meadow-lantern-52"
GRACE_EMAIL = "grace@example.org"
GRACE_PASSWORD = "saffron-quarry-beacon-63"
LIN_EMAIL = "lin@example.org"
LIN_PASSWORD = "copper-valley-teacup-31"
MODEL = "NVIDIA-A100-SXM4-80GB"
TITLE = "Thesis sprint"
TIMES = "\N{MULTIPLICATION SIGN}"  # between a count and a tier, as the console writes them
# Starting involves the worker applying the resource and the operator creating the pod.
STATE_DEADLINE_MS = 60_000
# The booking's notice (a minute), then the pause and the start on the freed card.
TAKEN_BACK_MS = 150_000

pytestmark = pytest.mark.e2e


@dataclass(frozen=True)
class Demo:
    base: str


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    """`python -m gshare.demo` with one node of one card, serving the built console."""
    folder = tmp_path_factory.mktemp("demo")
    one_card = {
        "GSHARE_DEMO_NODES": "1",
        "GSHARE_DEMO_CARDS": "1",
        # Notices run out between two walks of the queue: a short walk sees them soon.
        "GSHARE_DEQUEUE_INTERVAL_SECONDS": "2",
    }
    with running_demo(folder, ADA_EMAIL, ADA_PASSWORD, 1, one_card) as (base, _):
        yield Demo(base)


async def _grace_administers_research(base: str) -> None:
    """Grace: a member and the admin of the demo's Research group, her own password chosen."""
    initial = "tulip-anchor-89-start"
    async with admin_api(base) as api:
        me = (await api.get("/api/v1/me")).json()
        research = next(m for m in me["memberships"] if m["group_name"] == "Research")
        created = await api.post(
            "/api/v1/users",
            json={
                "email": GRACE_EMAIL,
                "name": "Grace Hopper",
                "initial_password": initial,
                "group_id": research["group_id"],
                "role": "member",
            },
        )
        assert created.status_code == 201, created.text
        granted = await api.put(
            f"/api/v1/groups/{research['group_id']}/admins/{created.json()['id']}"
        )
        assert granted.status_code == 200, granted.text
    await choose_password(base, GRACE_EMAIL, initial, GRACE_PASSWORD)


async def _lin_runs_a_quarter_card(base: str) -> None:
    """Lin, of Vision Lab, funded, runs a quarter-card JupyterLab on the only card."""
    org, group = await member_of_a_new_lab(base, LIN_EMAIL, "plum-harbor-84-start", LIN_PASSWORD)
    async with admin_api(base) as api:
        minted = await api.post("/api/v1/credits/mint", json={"org_id": org["id"], "amount": "50"})
        assert minted.status_code in (200, 201), minted.text
        lin = next(
            u
            for u in (await api.get("/api/v1/users", params={"q": LIN_EMAIL})).json()["items"]
            if u["email"] == LIN_EMAIL
        )
        wallets = [
            (await api.get(path)).json()["id"]
            for path in (
                f"/api/v1/orgs/{org['id']}/wallet",
                f"/api/v1/groups/{group['id']}/wallet",
                f"/api/v1/users/{lin['id']}/wallet",
            )
        ]
        for source, target in itertools.pairwise(wallets):
            moved = await api.post(
                "/api/v1/credits/transfers",
                json={"from_wallet_id": source, "to_wallet_id": target, "amount": "40"},
            )
            assert moved.status_code in (200, 201), moved.text
    async with httpx.AsyncClient(base_url=base) as client:
        login = await client.post(
            "/api/v1/auth/login", json={"email": LIN_EMAIL, "password": LIN_PASSWORD}
        )
        client.headers["X-CSRF-Token"] = login.json()["csrf_token"]
        tier = next(
            t for t in (await client.get("/api/v1/tiers")).json()["items"] if t["name"] == "1/4"
        )
        image = next(
            i
            for i in (await client.get("/api/v1/catalog")).json()["items"]
            if i["session_type"] == "jupyterlab"
        )
        created = await client.post(
            "/api/v1/sessions",
            json={
                "session_type": "jupyterlab",
                "image_id": image["id"],
                "group_id": group["id"],
                "tier_id": tier["id"],
                "name": "borrowed",
            },
        )
        assert created.status_code == 201, created.text
        path = f"/api/v1/sessions/{created.json()['id']}"

        async def running() -> bool:
            return (await client.get(path)).json()["state"] == "running"

        await eventually(running, "Lin's session to run", timeout=60, interval=0.5)


@asynccontextmanager
async def _signed_in(browser: Browser, base: str, email: str, password: str) -> AsyncIterator[Page]:
    """A browser of one's own, signed in to the console."""
    context = await browser.new_context(viewport={"width": 1280, "height": 860})
    page = await context.new_page()
    page.set_default_timeout(15_000)
    await sign_in(page, base, email, password)
    await expect(page.get_by_role("link", name="Bookings")).to_be_visible()
    try:
        yield page
    finally:
        await context.close()


async def _books_the_card_for_an_hour(page: Page, base: str) -> None:
    """Grace's steps on the Bookings page, through the form."""
    await page.get_by_role("link", name="Bookings").click()
    await expect(page.get_by_role("heading", name="Bookings", level=2)).to_be_visible()
    calendar = page.get_by_role("table", name=re.compile(f"^Booked and free capacity of {MODEL}"))
    cards = calendar.get_by_role("row").filter(has=page.get_by_role("rowheader", name="Cards"))
    await expect(cards).to_contain_text("1 card")
    await expect(cards).not_to_contain_text("booked")

    await page.get_by_role("button", name="Book capacity").click()
    dialog = page.get_by_role("dialog", name="Book capacity")
    await expect(dialog.get_by_label("Group", exact=True)).to_have_value("Research")
    await expect(dialog.get_by_label("GPU model", exact=True)).to_have_value(MODEL)
    await dialog.get_by_label("Tier", exact=True).click()
    await page.get_by_role("option", name=re.compile("^exclusive")).click()
    await dialog.get_by_label("Start now", exact=True).check()
    # An hour from now, by the clock the browser shares with this test (a new minute must not
    # start between reading it and sending it, or the hour would be a minute short).
    if time.localtime().tm_sec > 50:
        await page.wait_for_timeout(10_000)
    await dialog.get_by_label("To", exact=True).fill(
        time.strftime("%H:%M", time.localtime(time.time() + 3600))
    )
    await dialog.get_by_label("Title", exact=True).fill(TITLE)
    notice = dialog.get_by_label("Notice (minutes)", exact=True)
    await notice.fill("1")
    await expect(dialog.get_by_text("It fits.")).to_be_visible()
    await assert_accessible(page, "the booking form")
    await shot(page, "bookings-1-it-fits")
    await dialog.get_by_role("button", name="Book", exact=True).click()
    await expect(dialog).to_be_hidden()
    await expect(
        page.get_by_text(f"Booked 1 {TIMES} exclusive for Research: {TITLE}.")
    ).to_be_visible()

    mine = page.get_by_role("table", name="My bookings")
    row = mine.get_by_role("row").filter(has=page.get_by_role("rowheader", name=TITLE))
    await expect(row).to_contain_text("Research")
    await expect(row).to_contain_text(f"1 {TIMES} exclusive of {MODEL}")
    await expect(row).to_contain_text("Running now")
    await expect(row).to_contain_text("1 minute notice")
    await expect(row.get_by_role("button", name=f"Cancel {TITLE}")).to_be_visible()
    # It has started: it can be cancelled, no longer edited.
    await expect(row.get_by_role("button", name=f"Edit {TITLE}")).to_have_count(0)
    await expect(cards).to_contain_text("1 booked, 0 free")
    await assert_accessible(page, "the Bookings page with a booking")
    await shot(page, "bookings-2-booked")

    async with admin_api(base) as api:
        listed = (await api.get("/api/v1/bookings")).json()["items"]
    assert [(b["title"], b["count"], b["notice_minutes"]) for b in listed] == [(TITLE, 1, 1)]


async def test_a_group_admin_books_the_card_and_a_member_takes_it_back(
    demo: Demo, page: Page
) -> None:
    await _lin_runs_a_quarter_card(demo.base)
    await _grace_administers_research(demo.base)
    browser = page.context.browser
    assert browser is not None

    async with _signed_in(browser, demo.base, GRACE_EMAIL, GRACE_PASSWORD) as grace:
        await _books_the_card_for_an_hour(grace, demo.base)

    async with (
        _signed_in(browser, demo.base, LIN_EMAIL, LIN_PASSWORD) as lin,
        _signed_in(browser, demo.base, ADA_EMAIL, ADA_PASSWORD) as ada,
    ):
        await lin.get_by_role("link", name="Sessions").first.click()
        await expect(lin.get_by_role("heading", name="Sessions", level=2)).to_be_visible()
        borrowed = lin.get_by_role("article", name="borrowed")
        await expect(borrowed.get_by_text("Running", exact=True)).to_be_visible()
        # Another group's members see the calendar, not the booking: it names no one.
        await lin.get_by_role("link", name="Bookings").click()
        await expect(lin.get_by_role("heading", name="Bookings", level=2)).to_be_visible()
        await expect(lin.get_by_text("Your groups have no bookings to come.")).to_be_visible()
        await expect(lin.get_by_role("button", name="Book capacity")).to_have_count(0)

        # Ada, a member of Research, is told of the booking and starts a session within it.
        await ada.goto(f"{demo.base}/sessions/new")
        await expect(ada.get_by_role("heading", name="New session", level=2)).to_be_visible()
        form = ada.get_by_role("form", name="New session")
        await form.get_by_label("Name", exact=True).fill("booked")
        await form.get_by_label("GPU", exact=True).click()
        await ada.get_by_role("option").filter(has_text=" exclusive ").click()
        await expect(
            form.get_by_text(re.compile(f"^{TITLE}: 1 of 1 booked slots free until "))
        ).to_be_visible()
        await shot(ada, "bookings-3-new-session-within-the-booking")
        await form.get_by_role("button", name="Start session").click()
        booked = ada.get_by_role("article", name="booked")
        # Within the booking, it claims the card at once: its borrower is given notice.
        await expect(
            booked.get_by_text(re.compile("^A card is being freed for you at"))
        ).to_be_visible(timeout=STATE_DEADLINE_MS)

        # Lin's session is given the booking's notice, saying why.
        await lin.get_by_role("link", name="Sessions").first.click()
        await expect(lin.get_by_role("heading", name="Sessions", level=2)).to_be_visible()
        banner = borrowed.get_by_role("alert").filter(has_text="will be paused")
        await expect(banner).to_be_visible(timeout=STATE_DEADLINE_MS)
        await expect(banner).to_contain_text(
            "Its card is booked for another group, whose member is waiting for it."
        )
        await shot(lin, "bookings-4-notice-for-the-booking")

        # At the notice's end Lin's session is paused and queued; Ada's starts on the card.
        await expect(booked.get_by_text("Running", exact=True)).to_be_visible(timeout=TAKEN_BACK_MS)
        await expect(borrowed.get_by_text("Resuming", exact=True)).to_be_visible()
        # Within its group's booking, the session keeps the card: Lin's waiting to resume gives
        # it no notice, walk after walk of the queue.
        await ada.wait_for_timeout(6_000)
        await expect(booked.get_by_role("alert")).to_have_count(0)
        await shot(ada, "bookings-5-member-runs-on-the-booked-card")
        await shot(lin, "bookings-6-borrower-paused-and-queued")

        await booked.get_by_role("button", name="Stop").click()
        await ada.get_by_role("button", name="Stop session").click()
        await expect(booked.get_by_text("Stopped", exact=True)).to_be_visible(
            timeout=STATE_DEADLINE_MS
        )
