"""The admin's cluster page in headless Chromium: the time from navigating to it until it is
usable (the summary per GPU model shown, the card search taking input), for a cluster of 400
cards (50 nodes of 8) against one of 8 cards, the baseline, served by the same API process in
the same run.

    .venv/bin/python benchmarks/cluster_page.py [--cards 400] [--rounds 7] [--quick]

Each round visits the two pages in turn, after one visit each to warm up; the median of the
rounds is kept. Prints both times and their ratio. The goal: the large page usable within
1 second, and within 2 times the 8-card page (it draws one page of cards, however many there
are); a run that misses either exits 1. Needs the built console (`make console`) and Debian's
chromium. --quick runs 8 against 80 cards once and checks no goal (make bench-smoke).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from playwright.async_api import Page, async_playwright, expect

from gshare.capacity import service
from gshare.capacity.schemas import InventoryReport
from gshare.clusters.models import Cluster
from gshare.devcluster import free_port
from gshare.kit.db import make_engine, make_sessionmaker
from gshare.kit.embedded_db import ensure_database, start_embedded
from gshare.kit.schema_version import upgrade

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _goals import check_goal
from _server import ADMIN_EMAIL, ADMIN_PASSWORD, api_env, bootstrap, serve, wait_ready

CONSOLE = Path(__file__).resolve().parents[1] / "frontend" / "dist"
GOAL_SECONDS = 1.0
GOAL_RATIO = 2.0
MODELS = (("NVIDIA-A100-SXM4-80GB", 81920), ("NVIDIA-H100-80GB-HBM3", 81559))


def report(cards: int) -> InventoryReport:
    """`cards` cards, 8 to a node, two models, one card in 37 unhealthy."""
    nodes: dict[str, list[dict[str, object]]] = {}
    for n in range(cards):
        model, memory = MODELS[(n // 8) % len(MODELS)]
        nodes.setdefault(f"gpu-node-{n // 8}", []).append(
            {
                "uuid": f"GPU-{n:05d}",
                "model": model,
                "memory_mib": memory,
                "cores": 100,
                "split_count": 8,
                "numa": 0,
                "healthy": n % 37 != 36,
            }
        )
    return InventoryReport.model_validate(
        {"sequence": 1, "nodes": [{"name": k, "cards": v} for k, v in nodes.items()]}
    )


async def seed(url: str, sizes: list[int]) -> list[uuid.UUID]:
    """A connected cluster with its inventory per size."""
    engine = make_engine(url, pool_size=2)
    sessions = make_sessionmaker(engine)
    made = []
    for size in sizes:
        now = datetime.now(UTC)
        cluster_id = uuid.uuid4()
        async with sessions() as db, db.begin():
            cluster = Cluster(
                id=cluster_id,
                name=f"bench-{size}",
                api_server="https://127.0.0.1:1",
                status="connected",
                status_message="",
                inventory_sequence=0,
                created_at=now,
            )
            db.add(cluster)
            await db.flush()
            if not await service.apply_inventory(db, cluster_id, report(size), now):
                raise SystemExit("the inventory was not applied")
        made.append(cluster_id)
    await engine.dispose()
    return made


async def time_to_usable(page: Page, base: str, cluster_id: uuid.UUID) -> float:
    started = time.perf_counter()
    await page.goto(f"{base}/admin/clusters/{cluster_id}", wait_until="commit")
    models = page.get_by_role("table", name="Cards by GPU model")
    await expect(models.get_by_role("row").nth(1)).to_be_visible()
    await expect(page.get_by_role("textbox", name="Search")).to_be_editable()
    return time.perf_counter() - started


async def measure(base: str, clusters: list[uuid.UUID], rounds: int) -> list[float]:
    """The median seconds to a usable page, per cluster."""
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    async with async_playwright() as p:
        browser = await p.chromium.launch(
            executable_path=chromium, args=["--no-sandbox", "--disable-gpu", "--no-first-run"]
        )
        page = await (await browser.new_context(viewport={"width": 1280, "height": 860})).new_page()
        page.set_default_timeout(30_000)
        await page.goto(f"{base}/")
        await page.get_by_label("Email").fill(ADMIN_EMAIL)
        await page.get_by_label("Password", exact=True).fill(ADMIN_PASSWORD)
        await page.get_by_role("button", name="Sign in").click()
        await page.get_by_label("Admin mode").click()
        await expect(page.get_by_role("link", name="Clusters")).to_be_visible()
        for cluster_id in clusters:
            await time_to_usable(page, base, cluster_id)
        times: list[list[float]] = [[] for _ in clusters]
        for _ in range(rounds):
            for i, cluster_id in enumerate(clusters):
                times[i].append(await time_to_usable(page, base, cluster_id))
        await browser.close()
    return [statistics.median(t) for t in times]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cards", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, goals not checked")
    opts = parser.parse_args()
    if opts.quick:
        opts.cards, opts.rounds = 80, 1
    if not (CONSOLE / "index.html").is_file():
        raise SystemExit(f"{CONSOLE} has no built console: run `make console`")

    root = Path(tempfile.mkdtemp(prefix="gshare-bench-"))
    pg = start_embedded(root / "pg", delete_on_stop=True)
    proc: subprocess.Popen[bytes] | None = None
    try:
        asyncio.run(ensure_database(pg.url(), "gshare"))
        url = pg.url("gshare")
        upgrade(url)
        bootstrap(url)
        small, large = asyncio.run(seed(url, [8, opts.cards]))
        port = free_port()
        env = api_env(url, root / "data") | {
            "GSHARE_PORT": str(port),
            "GSHARE_CONSOLE_DIR": str(CONSOLE),
        }
        proc = serve([sys.executable, "-m", "gshare", "api"], env)
        base = f"http://127.0.0.1:{port}"
        wait_ready(f"{base}/readyz")
        base_time, large_time = asyncio.run(measure(base, [small, large], opts.rounds))
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(10)
        pg.stop()

    ratio = large_time / base_time
    print(f"cluster page usable, median of {opts.rounds} round(s):")
    print(f"  {'8 cards (baseline)':<20}{base_time * 1000:8.0f} ms")
    print(f"  {f'{opts.cards} cards':<20}{large_time * 1000:8.0f} ms")
    print(f"ratio {opts.cards}/8 cards: {ratio:.2f} (goal <= {GOAL_RATIO})")
    check_goal(
        large_time <= GOAL_SECONDS and ratio <= GOAL_RATIO,
        f"{opts.cards}-card page usable within {GOAL_SECONDS:.0f} s "
        f"and {GOAL_RATIO}x the 8-card page",
        quick=opts.quick,
    )


if __name__ == "__main__":
    main()
