"""What the browser tests share: where things are, the first admin's account, and common steps."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from playwright.async_api import Page

ROOT = Path(__file__).resolve().parents[2]
CONSOLE = ROOT / "frontend" / "dist"
SHOTS = ROOT / "test-output" / "e2e"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ADMIN_EMAIL = "admin@example.org"
ADMIN_PASSWORD = "quartz-meadow-lantern-52"


async def shot(page: Page, name: str) -> None:
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


async def sign_in(page: Page, base: str, email: str, password: str) -> None:
    await page.goto(f"{base}/")
    await page.get_by_label("Email").fill(email)
    await page.get_by_label("Password", exact=True).fill(password)
    await page.get_by_role("button", name="Sign in").click()


async def member_of_a_new_lab(
    server: str, email: str, initial_password: str, chosen_password: str
) -> tuple[dict, dict]:
    """Vision Lab with its Segmentation group, and Lin Wei in it, who has signed in once and
    chosen her own password. Returns the organization and the group as the API gave them."""
    async with admin_api(server) as api:
        org = (await api.post("/api/v1/orgs", json={"name": "Vision Lab"})).json()
        group = (
            await api.post(f"/api/v1/orgs/{org['id']}/groups", json={"name": "Segmentation"})
        ).json()
        created = await api.post(
            "/api/v1/users",
            json={
                "email": email,
                "name": "Lin Wei",
                "initial_password": initial_password,
                "group_id": group["id"],
                "role": "member",
            },
        )
        assert created.status_code == 201, created.text
    async with httpx.AsyncClient(base_url=server) as lin:
        login = await lin.post(
            "/api/v1/auth/login", json={"email": email, "password": initial_password}
        )
        changed = await lin.post(
            "/api/v1/auth/password",
            json={"current_password": initial_password, "new_password": chosen_password},
            headers={"X-CSRF-Token": login.json()["csrf_token"]},
        )
        assert changed.status_code == 200, changed.text
    return org, group
