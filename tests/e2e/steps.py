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
