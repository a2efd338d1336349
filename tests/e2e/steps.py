"""What the browser tests share: where things are, the first admin's account, and common steps."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Page

from gshare.devcluster import free_port
from tests.eventually import eventually_sync
from tests.processes import clean_env

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
    await choose_password(server, email, initial_password, chosen_password)
    return org, group


async def choose_password(server: str, email: str, initial: str, chosen: str) -> None:
    """A new user's first sign-in, with the initial password, and the password they choose."""
    async with httpx.AsyncClient(base_url=server) as user:
        login = await user.post("/api/v1/auth/login", json={"email": email, "password": initial})
        changed = await user.post(
            "/api/v1/auth/password",
            json={"current_password": initial, "new_password": chosen},
            headers={"X-CSRF-Token": login.json()["csrf_token"]},
        )
        assert changed.status_code == 200, changed.text


@contextmanager
def running_demo(
    folder: Path, email: str, password: str, cards: int, env: dict[str, str]
) -> Iterator[tuple[str, int]]:
    """`python -m gshare.demo` in `folder` serving the built console, its first admin `email`,
    with `env` on top, once its cluster shows `cards` cards: (its address, its pid). Stopped on
    leaving, and nothing it started may be left running."""
    if not (CONSOLE / "index.html").is_file():
        pytest.fail("the console is not built: run `make console` (make test does it)")
    port = free_port()
    demo_env = clean_env() | {
        "GSHARE_DATA_DIR": str(folder / "state"),
        "GSHARE_PORT": str(port),
        "GSHARE_DEMO_SESSIONS_PORT": str(free_port()),
        "GSHARE_CONSOLE_DIR": str(CONSOLE),
        "GSHARE_BOOTSTRAP_ADMIN_EMAIL": email,
        "GSHARE_BOOTSTRAP_ADMIN_PASSWORD": password,
        # The run's one real node belongs to tests/node: these demos run simulated nodes.
        "GSHARE_DEMO_NODE": "simulated",
        **env,
    }
    log_path = folder / "demo.log"
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gshare.demo"], env=demo_env, cwd=folder, stdout=log, stderr=log
    )
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=5) as client:

            def ready() -> bool:
                assert proc.poll() is None, log_path.read_text()[-3000:]
                try:
                    login = client.post(
                        "/api/v1/auth/login", json={"email": email, "password": password}
                    )
                    found = (
                        client.get("/api/v1/clusters").json()["items"] if login.is_success else []
                    )
                except httpx.HTTPError:
                    return False
                return bool(found) and found[0]["cards"] == cards

            eventually_sync(ready, "the demo cluster to show its cards", timeout=180, interval=0.5)
        yield base, proc.pid
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
    leftovers = subprocess.run(
        ["pgrep", "-f", str(folder)], capture_output=True, text=True, check=False
    )
    assert leftovers.stdout.strip() == "", "the demo left session programs or nginx running"
