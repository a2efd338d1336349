"""End to end in headless Chromium: the bootstrap admin registers a user, who must change the
password at first sign-in and then lands on the console; credits reach a member's wallet; a
password reset by the admin forces a new change.

The API runs as a real `gshare api` process serving the built console; screenshots of each step
are saved under test-output/e2e/.
"""

from __future__ import annotations

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

NEW_EMAIL = "lin.wei@example.org"
INITIAL_PASSWORD = "copper-harbor-violet-19"
CHOSEN_PASSWORD = "glacier-tangerine-mosaic-86"

pytestmark = pytest.mark.e2e


async def test_admin_registers_a_user_who_changes_the_password_and_lands(
    server: str, page: Page
) -> None:
    # An organization and group to put the new user in, through the API.
    async with admin_api(server) as api:
        org = (await api.post("/api/v1/orgs", json={"name": "Vision Lab"})).json()
        await api.post(f"/api/v1/orgs/{org['id']}/groups", json={"name": "Segmentation"})

    await sign_in(page, server, ADMIN_EMAIL, ADMIN_PASSWORD)
    await expect(page.get_by_role("heading", name="Welcome")).to_be_visible()
    await shot(page, "01-admin-home")

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
    await shot(page, "02-new-user-form")
    await dialog.get_by_role("button", name="Create user").click()
    await expect(dialog).to_be_hidden()
    await expect(page.get_by_role("cell", name=NEW_EMAIL)).to_be_visible()
    await shot(page, "03-user-created")

    await page.get_by_role("button", name="Ada Admin").click()
    await page.get_by_role("menuitem", name="Sign out").click()
    await expect(page.get_by_role("button", name="Sign in")).to_be_visible()

    await sign_in(page, server, NEW_EMAIL, INITIAL_PASSWORD)
    await expect(page.get_by_label("Current password")).to_be_visible()
    await shot(page, "04-forced-password-change")
    await page.get_by_label("Current password").fill(INITIAL_PASSWORD)
    await page.get_by_label("New password", exact=True).fill(CHOSEN_PASSWORD)
    await page.get_by_label("Confirm new password").fill(CHOSEN_PASSWORD)
    await page.get_by_role("button", name="Change password").click()
    await expect(page.get_by_role("heading", name="Welcome")).to_be_visible()
    await expect(page.get_by_text("Segmentation")).to_be_visible()
    await expect(page.get_by_label("Admin mode")).to_have_count(0)
    await shot(page, "05-new-user-home")


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
    await member_of_a_new_lab(server, NEW_EMAIL, INITIAL_PASSWORD, CHOSEN_PASSWORD)

    await sign_in(page, server, ADMIN_EMAIL, ADMIN_PASSWORD)
    await page.get_by_label("Admin mode").click()
    await page.get_by_role("link", name="Credits").click()
    await expect(page.get_by_role("heading", name="Credits", level=2)).to_be_visible()
    await page.get_by_label("Organization", exact=True).click()
    await page.get_by_role("option", name="Vision Lab").click()
    await _credit_action(page, "Vision Lab", "Mint", "500")
    await _credit_action(page, "Segmentation", "Allocate", "120")
    await _credit_action(page, "Lin Wei", "Allocate", "20.5")
    lin_row = page.get_by_role("row").filter(has=page.get_by_text("Lin Wei", exact=True))
    await expect(lin_row.get_by_text("20.5").first).to_be_visible()
    await shot(page, "06-credits-tree")

    await page.get_by_role("button", name="Ada Admin").click()
    await page.get_by_role("menuitem", name="Sign out").click()
    await sign_in(page, server, NEW_EMAIL, CHOSEN_PASSWORD)
    await page.get_by_role("link", name="Wallet", exact=True).click()
    await expect(page.get_by_role("heading", name="Your wallet")).to_be_visible()
    await expect(page.get_by_text("20.5").first).to_be_visible()
    await expect(page.get_by_role("cell", name="Segmentation").first).to_be_visible()
    await shot(page, "07-member-wallet")


async def test_admin_resets_a_password_and_the_user_must_change_it(server: str, page: Page) -> None:
    reset_password = "meadow-cobalt-lantern-38"
    async with admin_api(server) as api:
        created = await api.post(
            "/api/v1/users",
            json={"email": NEW_EMAIL, "name": "Lin Wei", "initial_password": INITIAL_PASSWORD},
        )
        assert created.status_code == 201, created.text

    await sign_in(page, server, ADMIN_EMAIL, ADMIN_PASSWORD)
    await page.get_by_role("button", name="Open admin mode").click()
    await page.get_by_role("link", name="Users").click()
    row = page.get_by_role("row").filter(has=page.get_by_text(NEW_EMAIL, exact=True))
    await row.get_by_role("button", name="Reset password").click()
    dialog = page.get_by_role("dialog")
    await dialog.get_by_label("New initial password").fill(reset_password)
    await expect(dialog.get_by_text("Strong").or_(dialog.get_by_text("Good"))).to_be_visible()
    await dialog.get_by_role("button", name="Review").click()
    await expect(dialog.get_by_text("signed out everywhere")).to_be_visible()
    await shot(page, "08-reset-password-confirm")
    await dialog.get_by_role("button", name="Reset password").click()
    await expect(dialog).to_be_hidden()
    await expect(page.get_by_text("Reset the password of Lin Wei")).to_be_visible()

    await page.get_by_role("button", name="Ada Admin").click()
    await page.get_by_role("menuitem", name="Sign out").click()
    await sign_in(page, server, NEW_EMAIL, reset_password)
    await expect(page.get_by_label("Current password")).to_be_visible()
