"""Authenticated GET /api/v1/me per second on one API process, against a bare FastAPI route.

Both servers run in this run, one process each, on loopback, under the same load generator
(a separate process). Prints both rates and their ratio (goal: at least 0.5, else it exits 1),
then sign-ins per second with argon2id and the hash cost.

    .venv/bin/python benchmarks/api_read.py [--seconds 8] [--connections 16] [--quick]

--quick runs the same path for a moment at a tiny load and checks no goal (make bench-smoke).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _goals import check_goal
from _load import requests_per_second
from _server import ADMIN_EMAIL, ADMIN_PASSWORD, api_env, bootstrap, serve, sign_in, wait_ready
from gshare.devcluster import free_port
from gshare.identity.passwords import HASHER, hash_password_sync
from gshare.kit.embedded_db import ensure_database, start_embedded
from gshare.kit.schema_version import upgrade


def measure(
    port: int, path: str, headers: dict[str, str], seconds: float, connections: int, rounds: int = 3
) -> float:
    rates = []
    with ProcessPoolExecutor(max_workers=1) as pool:
        for _ in range(rounds):
            rate, errors = pool.submit(
                requests_per_second, "127.0.0.1", port, path, headers, connections, seconds
            ).result()
            if errors:
                raise SystemExit(f"{errors} non-200 responses from {path}")
            rates.append(rate)
    return statistics.median(rates)


async def sign_ins_per_second(base: str, total: int = 40, concurrency: int = 8) -> float:
    async with httpx.AsyncClient(base_url=base) as client:
        semaphore = asyncio.Semaphore(concurrency)

        async def one() -> None:
            async with semaphore:
                r = await client.post(
                    "/api/v1/auth/login", json={"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD}
                )
                assert r.status_code == 200, r.text

        started = time.monotonic()
        await asyncio.gather(*(one() for _ in range(total)))
        return total / (time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, goals not checked")
    opts = parser.parse_args()
    rounds, sign_ins = 3, 40
    if opts.quick:
        opts.seconds, opts.connections, rounds, sign_ins = 0.3, 2, 1, 4

    root = Path(tempfile.mkdtemp(prefix="gshare-bench-"))
    pg = start_embedded(root / "pg", delete_on_stop=True)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        asyncio.run(ensure_database(pg.url(), "gshare"))
        url = pg.url("gshare")
        upgrade(url)
        env = api_env(url, root / "data")
        bootstrap(url)
        api_port, uncached_port, bare_port = free_port(), free_port(), free_port()
        uvicorn_flags = ["--log-level", "warning", "--no-access-log", "--no-server-header"]
        procs.append(
            serve([sys.executable, "-m", "gshare", "api"], env | {"GSHARE_PORT": str(api_port)})
        )
        procs.append(
            serve(
                [sys.executable, "-m", "gshare", "api"],
                env | {"GSHARE_PORT": str(uncached_port), "GSHARE_AUTH_CACHE_SECONDS": "0"},
            )
        )
        procs.append(
            serve(
                [
                    sys.executable,
                    "-m",
                    "uvicorn",
                    "bare_app:app",
                    "--port",
                    str(bare_port),
                    *uvicorn_flags,
                ],
                env | {"PYTHONPATH": str(Path(__file__).parent)},
            )
        )
        api = f"http://127.0.0.1:{api_port}"
        wait_ready(f"{api}/readyz")
        wait_ready(f"http://127.0.0.1:{uncached_port}/readyz")
        wait_ready(f"http://127.0.0.1:{bare_port}/bare")

        login = sign_in(api)
        cookie = {"Cookie": f"gshare_session={login.cookies['gshare_session']}"}

        bare = measure(bare_port, "/bare", {}, opts.seconds, opts.connections, rounds)
        me = measure(api_port, "/api/v1/me", cookie, opts.seconds, opts.connections, rounds)
        uncached = measure(
            uncached_port, "/api/v1/me", cookie, opts.seconds, opts.connections, rounds
        )
        print(f"bare FastAPI JSON route:                  {bare:8.0f} req/s")
        print(f"authenticated GET /api/v1/me:             {me:8.0f} req/s")
        print(f"  the same with the caller cache off:     {uncached:8.0f} req/s")
        print(f"ratio me/bare: {me / bare:.2f} (goal >= 0.50); cache off: {uncached / bare:.2f}")

        started = time.perf_counter()
        for _ in range(5):
            hash_password_sync(ADMIN_PASSWORD)
        per_hash = (time.perf_counter() - started) / 5
        rate = asyncio.run(sign_ins_per_second(api, total=sign_ins))
        print(
            f"argon2id cost: m={HASHER.memory_cost} KiB, t={HASHER.time_cost}, "
            f"p={HASHER.parallelism}; one hash {per_hash * 1000:.1f} ms"
        )
        print(f"sign-ins per second (8 concurrent, one API process): {rate:.1f}")
        check_goal(me / bare >= 0.5, "ratio me/bare at least 0.50", quick=opts.quick)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(10)
        pg.stop()


if __name__ == "__main__":
    main()
