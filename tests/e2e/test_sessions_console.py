"""End to end in headless Chromium on `make demo`'s stack (the platform with its worker, a
simulated GPU cluster and its operator): the demo's admin starts a JupyterLab on a quarter of
an A100 from the console, watches it start, pauses it, resumes it, stops it, and finds what it
cost in the wallet. Everything the page shows arrives over the event stream.

Screenshots of each step are saved under test-output/e2e/.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Page, expect

from gshare.devcluster import free_port
from tests.e2e.steps import CONSOLE, shot, sign_in
from tests.processes import clean_env

EMAIL = "demo@example.org"
PASSWORD = "harbor-quilt-saffron-64"
# Starting involves the worker applying the resource and the operator creating the pod.
STATE_DEADLINE_MS = 60_000

pytestmark = pytest.mark.e2e


@pytest.fixture
def demo(tmp_path: Path, console_built: None) -> Iterator[str]:
    """`python -m gshare.demo` serving the built console, once its cluster's cards are known."""
    port = free_port()
    env = clean_env()
    env |= {
        "GSHARE_DATA_DIR": str(tmp_path / "state"),
        "GSHARE_PORT": str(port),
        "GSHARE_CONSOLE_DIR": str(CONSOLE),
        "GSHARE_BOOTSTRAP_ADMIN_EMAIL": EMAIL,
        "GSHARE_BOOTSTRAP_ADMIN_PASSWORD": PASSWORD,
        "GSHARE_METERING_INTERVAL_SECONDS": "2",
    }
    log = (tmp_path / "demo.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gshare.demo"], env=env, cwd=tmp_path, stdout=log, stderr=log
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        ready = False
        with httpx.Client(base_url=base, timeout=5) as client:
            while time.monotonic() < deadline and not ready:
                assert proc.poll() is None, (tmp_path / "demo.log").read_text()[-3000:]
                try:
                    login = client.post(
                        "/api/v1/auth/login", json={"email": EMAIL, "password": PASSWORD}
                    )
                    cards = (
                        client.get("/api/v1/clusters").json()["items"] if login.is_success else []
                    )
                    ready = bool(cards) and cards[0]["cards"] == 8
                except httpx.HTTPError:
                    pass
                if not ready:
                    time.sleep(0.5)
        assert ready, "the demo cluster never showed its cards"
        yield base
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()


async def test_a_user_starts_pauses_resumes_and_stops_a_session(demo: str, page: Page) -> None:
    await sign_in(page, demo, EMAIL, PASSWORD)
    await page.get_by_role("link", name="Sessions").first.click()
    await page.get_by_role("link", name="New session").first.click()
    form = page.get_by_role("form", name="New session")
    await form.get_by_label("Name", exact=True).fill("notebook")
    await form.get_by_label("GPU", exact=True).click()
    await page.get_by_role("option").filter(has_text=" 1/4 ").click()
    # The preview for the chosen tier (not the CPU-only one before it) says a card is free.
    preview = page.get_by_text("A card is free").first
    await expect(preview).to_be_visible()
    await shot(page, "sessions-1-new")
    await form.get_by_role("button", name="Start session").click()

    card = page.get_by_role("article", name="notebook")
    await expect(card.get_by_text("Running", exact=True)).to_be_visible(timeout=STATE_DEADLINE_MS)
    await expect(card.get_by_role("button", name="Open")).to_be_visible()
    await shot(page, "sessions-2-running")

    await card.get_by_role("button", name="Pause").click()
    await expect(card.get_by_text("Paused", exact=True)).to_be_visible(timeout=STATE_DEADLINE_MS)
    await shot(page, "sessions-3-paused")
    await card.get_by_role("button", name="Resume").click()
    await expect(card.get_by_text("Running", exact=True)).to_be_visible(timeout=STATE_DEADLINE_MS)

    await card.get_by_role("button", name="Stop").click()
    await page.get_by_role("button", name="Stop session").click()
    await expect(card.get_by_text("Stopped", exact=True)).to_be_visible(timeout=STATE_DEADLINE_MS)
    await shot(page, "sessions-4-stopped")

    await page.get_by_role("link", name="Wallet").first.click()
    charge = page.get_by_role("link", name="notebook").first
    await expect(charge).to_be_visible()
    await shot(page, "sessions-5-wallet")
