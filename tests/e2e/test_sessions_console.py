"""End to end in headless Chromium on `make demo`'s stack: the platform with its worker, a
simulated GPU cluster and its operator, and nginx serving each session's page from a real
program on this host behind the access check, configured from the operator's Ingress objects.

- The demo's admin starts a JupyterLab on a quarter of an A100 from the console, watches it
  start, pauses it, resumes it, stops it, and finds what it cost in the wallet. Everything the
  page shows arrives over the event stream.
- The owner opens a JupyterLab from the console and works in it through nginx; a file written
  in it outlives pause and resume; another user with the link is refused by nginx, and so is
  the owner once signed out of the console. The access cookie is stored as it should be.
- A terminal session opens and runs a command.
- A super admin drains the cluster: the running session's page counts down to its pause; at
  the deadline it is paused and queued, and once the drain ends it resumes by itself.

One demo serves the whole module. Screenshots of each step are saved under test-output/e2e/.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.async_api import Locator, Page, expect

from gshare.sessions.access import ACCESS_COOKIE
from tests.e2e.steps import admin_api, member_of_a_new_lab, running_demo, shot, sign_in
from tests.eventually import eventually

EMAIL = "admin@example.org"
PASSWORD = "quartz-meadow-lantern-52"
LIN_PASSWORD = "copper-valley-teacup-31"
# Starting involves the worker applying the resource and the operator creating the pod.
STATE_DEADLINE_MS = 60_000
# And then JupyterLab starting on this host.
PAGE_DEADLINE_MS = 90_000

pytestmark = pytest.mark.e2e


@dataclass(frozen=True)
class Demo:
    base: str
    state: Path  # the demo's data dir
    pid: int

    def homes(self) -> Path:
        return self.state / "demo-volumes"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    """`python -m gshare.demo` serving the built console, once its cluster's cards are known."""
    folder = tmp_path_factory.mktemp("demo")
    quick = {
        "GSHARE_METERING_INTERVAL_SECONDS": "2",
        # Notices run out between two walks of the queue: a short walk sees them soon.
        "GSHARE_DEQUEUE_INTERVAL_SECONDS": "2",
    }
    with running_demo(folder, EMAIL, PASSWORD, 8, quick) as (base, pid):
        yield Demo(base, folder / "state", pid)


async def test_new_session_refuses_out_of_range_values_on_their_fields(
    demo: Demo, page: Page
) -> None:
    """What is typed is refused where it was typed, with the limits, and not clamped or cut;
    nothing is started."""
    await sign_in(page, demo.base, EMAIL, PASSWORD)
    await expect(page.get_by_role("link", name="Sessions").first).to_be_visible()  # signed in
    listed = await page.request.get(f"{demo.base}/api/v1/sessions")
    assert listed.ok
    sessions_before = len((await listed.json())["items"])
    await page.goto(f"{demo.base}/sessions/new")
    form = page.get_by_role("form", name="New session")
    typed = {
        "CPU cores": "-3",
        "Memory (GiB)": "0",
        "Size of the new home volume (GiB)": "0.5",
        "Name": "x" * 200,
    }
    for label, text in typed.items():
        field = form.get_by_label(label, exact=True)
        await field.fill(text)
        await field.blur()
    await form.get_by_role("button", name="Start session").click()

    for message in (
        "Enter a number from 0.1 to 256 cores.",
        "Enter a number from 0.125 to 4,096 GiB.",
        "Enter a whole number from 1 to 16,384 GiB.",
        "Use at most 80 characters.",
    ):
        await expect(form.get_by_text(message, exact=True)).to_be_visible()
    for label, text in typed.items():
        await expect(form.get_by_label(label, exact=True)).to_have_value(text)
    await expect(form.get_by_label("CPU cores", exact=True)).to_have_attribute(
        "aria-invalid", "true"
    )
    await shot(page, "sessions-0-refused-input")
    assert page.url.endswith("/sessions/new")
    after = await (await page.request.get(f"{demo.base}/api/v1/sessions")).json()
    assert len(after["items"]) == sessions_before


async def test_a_user_starts_pauses_resumes_and_stops_a_session(demo: Demo, page: Page) -> None:
    await sign_in(page, demo.base, EMAIL, PASSWORD)
    await page.get_by_role("link", name="Sessions").first.click()
    await page.get_by_role("link", name="New session").first.click()
    form = page.get_by_role("form", name="New session")
    await form.get_by_label("Name", exact=True).fill("notebook")
    # A GPU is offered from the start: the cheapest tier with a free slot, never CPU only.
    await expect(form.get_by_label("GPU", exact=True)).to_have_value(re.compile(r" free now$"))
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

    # Its page tells how the start went, step by step (kwok plays the kubelet in the demo).
    await card.get_by_role("link", name="notebook").click()
    steps = page.get_by_label("Start-up steps")
    for reached in ("Card allocated", "Placed on a machine", "Program listening"):
        await expect(steps.get_by_text(reached, exact=True)).to_be_visible(
            timeout=STATE_DEADLINE_MS
        )
    await shot(page, "sessions-startup-steps")
    # The demo's simulated DCGM exporter reports its use: the charts draw it, with the cost.
    charts = page.get_by_role("region", name="Use over time")
    await expect(charts.get_by_text(re.compile(r"^Now: \d+ % GPU"))).to_be_visible(
        timeout=STATE_DEADLINE_MS
    )
    await expect(
        charts.get_by_role("img", name=re.compile("^GPU utilization over"))
    ).to_be_visible()
    await expect(charts.get_by_role("img", name=re.compile("against the tier's"))).to_be_visible()
    await expect(charts.locator(".recharts-reference-line")).to_have_count(1)
    await shot(page, "sessions-utilization-charts")
    await page.get_by_role("link", name="Sessions").first.click()

    # Home answers what is running and how long the wallet lasts at its current burn.
    await page.get_by_role("link", name="GShare").first.click()
    now = page.get_by_role("region", name="Your sessions now")
    await expect(now.get_by_role("article", name="notebook")).to_be_visible()
    await expect(
        page.get_by_role("region", name="Your credits").get_by_test_id("runway")
    ).to_contain_text("at your current 2 credits/h, until")
    await shot(page, "home-dashboard")
    await page.get_by_role("link", name="Sessions").first.click()

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


# In the session's page: JupyterLab's own contents API, with its XSRF cookie, as its UI uses it.
WRITE_FILE = """async ([name, text]) => {
  const xsrf = decodeURIComponent((document.cookie.match(/(?:^|; )_xsrf=([^;]*)/) || [])[1] || '');
  const answer = await fetch('/api/contents/' + name, {
    method: 'PUT',
    headers: {'Content-Type': 'application/json', 'X-XSRFToken': xsrf},
    body: JSON.stringify({type: 'file', format: 'text', content: text}),
  });
  return answer.status;
}"""
READ_FILE = "async (name) => (await (await fetch('/api/contents/' + name)).json()).content"


async def _start(page: Page, base: str, name: str, kind: str, *, quarter_gpu: bool) -> Locator:
    """Start a session from the console's form; returns its card once it runs."""
    await page.goto(f"{base}/sessions/new")
    form = page.get_by_role("form", name="New session")
    await form.get_by_label("Name", exact=True).fill(name)
    await form.get_by_text(kind, exact=True).click()
    await form.get_by_label("GPU", exact=True).click()
    if quarter_gpu:
        await page.get_by_role("option").filter(has_text=" 1/4 ").click()
        await expect(page.get_by_text("A card is free").first).to_be_visible()
    else:
        await page.get_by_role("option", name="CPU only", exact=True).click()
    await form.get_by_role("button", name="Start session").click()
    card = page.get_by_role("article", name=name)
    await expect(card.get_by_text("Running", exact=True)).to_be_visible(timeout=STATE_DEADLINE_MS)
    return card


async def _open(page: Page, card: Locator) -> Page:
    """Click Open on a session's card: its page opens in a new tab, through nginx."""
    async with page.expect_popup() as opened:
        await card.get_by_role("button", name="Open").click()
    tab = await opened.value
    tab.set_default_timeout(15_000)
    return tab


def _home_file(demo: Demo, name: str) -> Path | None:
    found = sorted(demo.homes().glob(f"*/{name}"))
    return found[0] if found else None


async def test_the_owner_works_in_jupyterlab_through_nginx_and_no_one_else_gets_in(
    demo: Demo, page: Page
) -> None:
    await sign_in(page, demo.base, EMAIL, PASSWORD)
    await expect(page.get_by_role("link", name="Sessions").first).to_be_visible()
    card = await _start(page, demo.base, "analysis", "JupyterLab", quarter_gpu=True)
    asked: list[str] = []
    page.context.on("request", lambda request: asked.append(request.url))
    lab = await _open(page, card)
    await expect(lab.locator("#jp-main-dock-panel")).to_be_visible(timeout=PAGE_DEADLINE_MS)
    session_url = urlsplit(lab.url)
    assert session_url.hostname is not None
    assert session_url.hostname.endswith(".sessions.localhost")
    # The ticket did its work on the way in: neither the address bar nor the history keeps it.
    entry = next(urlsplit(url) for url in asked if "gshare_ticket=" in url)
    assert entry.netloc == session_url.netloc
    assert "gshare_ticket" not in lab.url
    assert await lab.evaluate("history.length") == 1
    await shot(lab, "demo-sessions-1-jupyterlab")
    assert await lab.evaluate(WRITE_FILE, ["kept.txt", "written before the pause"]) == 201

    # The access cookie as Chromium stores it: this session's host only, never script-readable.
    stored = [c for c in await page.context.cookies() if c["name"] == ACCESS_COOKIE]
    assert len(stored) == 1
    cookie = stored[0]
    assert cookie["domain"] == session_url.hostname  # host-only: no Domain attribute
    assert (cookie["path"], cookie["httpOnly"], cookie["secure"]) == ("/", True, True)
    assert cookie["sameSite"] == "Lax"
    assert 3000 < cookie["expires"] - time.time() <= 3600
    assert ACCESS_COOKIE not in await lab.evaluate("document.cookie")

    # Someone else given the link (signed in to the console as themselves) is refused by nginx.
    ticket = parse_qs(entry.query)["gshare_ticket"][0]
    link = f"{session_url.scheme}://{session_url.netloc}/?gshare_ticket={ticket}"
    await member_of_a_new_lab(demo.base, "lin@example.org", "plum-harbor-84-start", LIN_PASSWORD)
    browser = page.context.browser
    assert browser is not None
    other = await browser.new_context()
    stranger = await other.new_page()
    await sign_in(stranger, demo.base, "lin@example.org", LIN_PASSWORD)
    await expect(stranger.get_by_role("link", name="Sessions").first).to_be_visible()
    for url in (link, f"{session_url.scheme}://{session_url.netloc}/lab"):
        refused = await stranger.goto(url)
        assert refused is not None
        # nginx sends them to the API's sign-in route, which says why and sends them no further.
        assert refused.status == 401, url
        assert (await refused.json())["error"]["code"] == "session_access_expired", url
    await shot(stranger, "demo-sessions-2-refused")
    await other.close()

    # Pause ends the program; the home folder stays; resume starts it again on the same folder.
    await lab.close()
    await card.get_by_role("button", name="Pause").click()
    await expect(card.get_by_text("Paused", exact=True)).to_be_visible(timeout=STATE_DEADLINE_MS)
    kept = _home_file(demo, "kept.txt")
    assert kept is not None
    assert kept.read_text() == "written before the pause"
    await card.get_by_role("button", name="Resume").click()
    await expect(card.get_by_text("Running", exact=True)).to_be_visible(timeout=STATE_DEADLINE_MS)
    lab = await _open(page, card)
    await expect(lab.locator("#jp-main-dock-panel")).to_be_visible(timeout=PAGE_DEADLINE_MS)
    assert await lab.evaluate(READ_FILE, "kept.txt") == "written before the pause"
    await expect(lab.locator(".jp-DirListing").get_by_text("kept.txt")).to_be_visible()
    await shot(lab, "demo-sessions-3-after-resume")

    # Signing out of the console closes the session's page too.
    await page.get_by_role("button", name="Administrator").click()
    await page.get_by_role("menuitem", name="Sign out").click()
    await expect(page.get_by_label("Email")).to_be_visible()
    after = await lab.reload()
    assert after is not None
    assert after.status == 403
    await shot(lab, "demo-sessions-4-signed-out")


async def test_a_terminal_session_opens_and_runs_a_command(demo: Demo, page: Page) -> None:
    await sign_in(page, demo.base, EMAIL, PASSWORD)
    await expect(page.get_by_role("link", name="Sessions").first).to_be_visible()
    card = await _start(page, demo.base, "shell", "Terminal", quarter_gpu=False)
    terminal = await _open(page, card)
    typed = terminal.get_by_role("textbox", name="Terminal input")
    await expect(typed).to_be_attached(timeout=PAGE_DEADLINE_MS)
    await terminal.locator(".jp-Terminal").click()

    # The terminal draws on a canvas; the command's effect is read from the home folder. Keys
    # typed before the shell is connected are lost, so the (idempotent) command is typed again
    # until it has run.
    async def typed_and_ran() -> Path | None:
        await terminal.keyboard.type("echo $((6 * 7)) > answer.txt")
        await terminal.keyboard.press("Enter")
        for _ in range(30):  # about 3 s for this try
            await terminal.wait_for_timeout(100)
            if answer := _home_file(demo, "answer.txt"):
                return answer
        return None

    answer = await eventually(
        typed_and_ran, "the terminal to run the command", timeout=60, interval=0
    )
    assert answer.read_text() == "42\n"
    await shot(terminal, "demo-sessions-5-terminal")
    await card.get_by_role("button", name="Stop").click()
    await page.get_by_role("button", name="Stop session").click()
    await expect(card.get_by_text("Stopped", exact=True)).to_be_visible(timeout=STATE_DEADLINE_MS)


def _process_tree(root: int) -> set[int]:
    """The process and all its descendants, from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    tree = {root}
    while grown := {pid for pid, parent in parents.items() if parent in tree} - tree:
        tree |= grown
    return tree


def _listening_sockets(pids: set[int]) -> list[tuple[str, int]]:
    """(address, pid) of every TCP socket these processes listen on, from /proc/net."""
    inodes: dict[str, int] = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith("socket:["):
                        inodes[target[8:-1]] = pid
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                found.append((fields[1], inodes[fields[9]]))
    return found


LOOPBACK = (
    "0100007F:",
    "00000000000000000000000001000000:",
)  # 127.0.0.1 and ::1, as /proc has them


async def test_everything_the_demo_runs_listens_on_loopback_only(demo: Demo) -> None:
    """The API, the simulated cluster, nginx and the session programs (the JupyterLab of the
    test before still runs). PostgreSQL listens on a socket file only."""
    tree = _process_tree(demo.pid)
    sockets = _listening_sockets(tree)
    assert len(sockets) >= 8, sockets
    assert [s for s in sockets if not s[0].startswith(LOOPBACK)] == []
    names = {Path(f"/proc/{pid}/exe").resolve().name for _, pid in sockets}
    assert {"nginx", "kube-apiserver", "etcd", "kwok"} <= names, names
    programs = [pid for _, pid in sockets if "jupyter" in Path(f"/proc/{pid}/cmdline").read_text()]
    assert programs, "no session program listens"


async def test_a_drained_session_counts_down_pauses_and_resumes_by_itself(
    demo: Demo, page: Page
) -> None:
    await sign_in(page, demo.base, EMAIL, PASSWORD)
    await expect(page.get_by_role("link", name="Sessions").first).to_be_visible()
    card = await _start(page, demo.base, "drained", "JupyterLab", quarter_gpu=True)
    async with admin_api(demo.base) as admin:
        cluster = (await admin.get("/api/v1/clusters")).json()["items"][0]["id"]
        deadline = time.time() + 25
        made = await admin.post(
            "/api/v1/drains",
            json={
                "scope": "cluster",
                "cluster_id": cluster,
                "deadline": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(deadline)),
                "reason": "Replacing a power supply",
            },
        )
        assert made.status_code == 201, made.text
        # The owner's card counts down, and says why.
        banner = card.get_by_role("alert").filter(has_text="will be paused in")
        await expect(banner).to_be_visible(timeout=STATE_DEADLINE_MS)
        await expect(banner).to_contain_text("Replacing a power supply")
        await shot(page, "sessions-drain-countdown")
        # At the deadline it is paused (its card given back) and queued to resume.
        await expect(card.get_by_text("Resuming", exact=True)).to_be_visible(
            timeout=STATE_DEADLINE_MS
        )
        # While it waits it says what for, and, as the forecast finds (it arrives over the
        # event stream), that nothing may start it while the whole cluster is drained.
        await expect(card).to_contain_text(re.compile(r"Waits fora 1/4 slot of a shared \S+ card"))
        await expect(card).to_contain_text(
            "not within the next 7 days, as things stand", timeout=STATE_DEADLINE_MS
        )
        await shot(page, "sessions-drain-paused-and-queued")
        ended = await admin.post(f"/api/v1/drains/{made.json()['id']}/end")
        assert ended.status_code == 200, ended.text
    # Nobody presses Resume: the queue starts it again on the card that came back.
    await expect(card.get_by_text("Running", exact=True)).to_be_visible(timeout=STATE_DEADLINE_MS)
    await shot(page, "sessions-drain-resumed")
    await card.get_by_role("button", name="Stop").click()
    await page.get_by_role("button", name="Stop session").click()
    await expect(card.get_by_text("Stopped", exact=True)).to_be_visible(timeout=STATE_DEADLINE_MS)
