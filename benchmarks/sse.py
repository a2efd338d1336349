"""Live updates: commit-to-delivery latency for events fanned out to 1,000 open streams on one
API process, and the process's memory per open stream.

    .venv/bin/python benchmarks/sse.py [--clients 1000] [--events 40] [--spacing 0.5] [--quick]

One `gshare api` process serves every stream; the streams are held by two client processes
(raw sockets, so the clients' own cost stays small), ten per signed-in super admin (a user
may hold 16). This process writes one event every --spacing seconds (2,000 deliveries a
second by default), each visible to every stream, through the real path: record in a
transaction, commit, the relay numbers it and notifies, the API's hub reads it once and
fans it out, checking each stream's caller. The
latency of one delivery runs from the commit's return to the client reading the event. The
baseline, in the same run: a bare PostgreSQL NOTIFY from commit to one LISTEN callback. It also
prints the API process's CPU time per delivery, which bounds the rate one process can serve.
Goals: p99 at most 250 ms and at most 100 KiB of API memory per open stream; a run that
misses one exits 1. --quick runs the path with 20 streams and checks no goal.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _goals import check_goal
from _server import ADMIN_PASSWORD, api_env, bootstrap, serve, wait_ready
from gshare.devcluster import free_port
from gshare.events import outbox
from gshare.identity.models import User
from gshare.identity.passwords import hash_password_sync
from gshare.kit.db import make_engine, make_sessionmaker, plain_url
from gshare.kit.embedded_db import ensure_database, start_embedded
from gshare.kit.schema_version import upgrade
from gshare.kit.settings import Settings
from gshare.worker.loops import Worker, event_relay

KIND = "bench.tick"
STREAMS_PER_VIEWER = 10  # a user may hold 16 streams per API process


async def _hold_streams(
    port: int, cookies: list[str], count: int, events: int, ready: multiprocessing.Queue
) -> list[tuple[int, float]]:
    """Open `count` streams, taking the sign-ins in turn; report ready once each has read a
    warm-up event; return when every stream has read `events` measured events: (event
    number, time read) pairs."""
    requests = [
        (
            f"GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Cookie: gshare_session={cookie}\r\nAccept: text/event-stream\r\n\r\n"
        ).encode()
        for cookie in cookies
    ]
    warmed = 0
    seen: list[tuple[int, float]] = []
    all_warm = asyncio.Event()

    async def one(request: bytes) -> None:
        nonlocal warmed
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request)
        status = await reader.readline()
        assert b" 200 " in status, status
        warm, measured = False, 0
        while measured < events:
            line = await reader.readline()
            if not line:
                raise SystemExit("a stream ended early")
            if not line.startswith(b"data: "):
                continue
            at = time.time()
            number = json.loads(line[6:])["n"]
            if number < 0:
                if not warm:
                    warm = True
                    warmed += 1
                    if warmed == count:
                        all_warm.set()
                continue
            seen.append((number, at))
            measured += 1
        writer.close()

    tasks = [asyncio.create_task(one(requests[i % len(requests)])) for i in range(count)]
    await all_warm.wait()
    ready.put(count)
    await asyncio.gather(*tasks)
    return seen


def hold_streams(
    port: int, cookies: list[str], count: int, events: int, ready: multiprocessing.Queue
) -> list[tuple[int, float]]:
    # A load generator that lives for seconds: its collector's pauses would count against
    # the server.
    gc.disable()
    return asyncio.run(_hold_streams(port, cookies, count, events, ready))


async def viewers(url: str, base: str, count: int) -> list[str]:
    """`count` super admins, signed in: each sees every event with no audience, and each may
    hold only a few streams."""
    password = hash_password_sync(ADMIN_PASSWORD)
    now = datetime.now(UTC)
    people = [
        User(
            id=uuid.uuid4(),
            email=f"viewer-{n}@example.org",
            name=f"Viewer {n}",
            password_hash=password,
            must_change_password=False,
            is_super_admin=True,
            created_at=now,
            password_changed_at=now,
        )
        for n in range(count)
    ]
    engine = make_engine(url, pool_size=1)
    async with make_sessionmaker(engine)() as db, db.begin():
        db.add_all(people)
    await engine.dispose()
    async with httpx.AsyncClient(base_url=base) as http:
        cookies = []
        for person in people:
            answer = await http.post(
                "/api/v1/auth/login", json={"email": person.email, "password": ADMIN_PASSWORD}
            )
            answer.raise_for_status()
            cookies.append(answer.cookies["gshare_session"])
            http.cookies.clear()
    return cookies


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise SystemExit("no VmRSS")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


async def bare_notify_latency(url: str, rounds: int) -> list[float]:
    """Commit of a NOTIFY to the LISTEN callback in this process: the floor under any design."""
    listener = await asyncpg.connect(plain_url(url))
    sender = await asyncpg.connect(plain_url(url))
    got: asyncio.Queue[float] = asyncio.Queue()
    await listener.add_listener("bench", lambda *_: got.put_nowait(time.perf_counter()))
    latencies = []
    for _ in range(rounds):
        async with sender.transaction():
            await sender.execute("SELECT pg_notify('bench', 'x')")
        sent = time.perf_counter()
        latencies.append(await got.get() - sent)
    await listener.close()
    await sender.close()
    return latencies


async def write_events(
    url: str, events: int, spacing: float, until_ready, warm_every: float
) -> dict[int, float]:
    """Warm-up events until every stream has read one, then the measured ones."""
    engine = make_engine(url, pool_size=2)
    sessions = make_sessionmaker(engine)
    relay = Worker([event_relay(Settings(), sessions)])
    relay.start()
    committed: dict[int, float] = {}

    async def record(number: int) -> float:
        async with sessions() as db, db.begin():
            await outbox.record(db, KIND, outbox.Audience(), {"n": number})
        return time.time()

    try:
        while not await until_ready(warm_every):
            await record(-1)
        for number in range(events):
            committed[number] = await record(number)
            await asyncio.sleep(spacing)
    finally:
        await relay.stop()
        await engine.dispose()
    return committed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--events", type=int, default=40)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--spacing", type=float, default=0.5, help="seconds between events")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, goals not checked")
    opts = parser.parse_args()
    if opts.quick:
        opts.clients, opts.events, opts.processes = 20, 5, 1

    root = Path(tempfile.mkdtemp(prefix="gshare-bench-"))
    pg = start_embedded(root / "pg", delete_on_stop=True)
    api = None
    try:
        asyncio.run(ensure_database(pg.url(), "gshare"))
        url = pg.url("gshare")
        upgrade(url)
        bootstrap(url)
        port = free_port()
        api = serve(
            [sys.executable, "-m", "gshare", "api"],
            api_env(url, root / "data") | {"GSHARE_PORT": str(port)},
        )
        base = f"http://127.0.0.1:{port}"
        wait_ready(f"{base}/readyz")
        cookies = asyncio.run(viewers(url, base, -(-opts.clients // STREAMS_PER_VIEWER)))
        before = rss_kib(api.pid)

        manager = multiprocessing.Manager()
        ready = manager.Queue()
        shares = [opts.clients // opts.processes] * opts.processes
        shares[0] += opts.clients - sum(shares)
        with ProcessPoolExecutor(max_workers=opts.processes) as pool:
            holders = [
                pool.submit(hold_streams, port, cookies, share, opts.events, ready)
                for share in shares
            ]
            reported = 0

            async def until_ready(wait: float) -> bool:
                nonlocal reported
                deadline = time.monotonic() + wait
                while reported < len(shares) and time.monotonic() < deadline:
                    try:
                        ready.get_nowait()
                        reported += 1
                    except Exception:
                        await asyncio.sleep(0.01)
                return reported == len(shares)

            committed = asyncio.run(write_events(url, 0, 0, until_ready, 0.2))
            during = rss_kib(api.pid)
            cpu_before = cpu_seconds(api.pid)
            committed = asyncio.run(write_events(url, opts.events, opts.spacing, until_ready, 0.2))
            seen = [pair for holder in holders for pair in holder.result()]
            cpu = cpu_seconds(api.pid) - cpu_before
        latencies = [(at - committed[n]) * 1000 for n, at in seen]
        assert len(latencies) == opts.clients * opts.events, len(latencies)
        bare = [s * 1000 for s in asyncio.run(bare_notify_latency(url, 200))]
        p50, p99 = statistics.median(latencies), percentile(latencies, 99)
        per_stream = (during - before) / opts.clients
        print(
            f"{opts.clients} streams, {opts.events} events each, one every {opts.spacing} s: "
            f"{len(latencies)} deliveries"
        )
        print(f"commit to delivery: p50 {p50:6.1f} ms, p99 {p99:6.1f} ms (goal p99 <= 250 ms)")
        print(
            f"bare NOTIFY, commit to LISTEN: p50 {statistics.median(bare):6.2f} ms, "
            f"p99 {percentile(bare, 99):6.2f} ms; ratio p99 ours/bare: "
            f"{p99 / max(percentile(bare, 99), 0.001):.0f}"
        )
        print(f"API process CPU: {cpu * 1e6 / len(latencies):.0f} µs per delivery")
        print(
            f"API memory: {before / 1024:.0f} MiB before, {during / 1024:.0f} MiB with the "
            f"streams open: {per_stream:.1f} KiB per stream (goal <= 100 KiB)"
        )
        check_goal(p99 <= 250, "p99 commit-to-delivery at most 250 ms", quick=opts.quick)
        check_goal(per_stream <= 100, "at most 100 KiB per open stream", quick=opts.quick)
    finally:
        if api is not None:
            api.terminate()
            api.wait(20)
        pg.stop()


if __name__ == "__main__":
    main()
