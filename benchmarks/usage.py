"""Usage over a year of history: the reports' latency, the CSV export's memory and speed, and the
rollup tick's cost with one day against a year of history, on one server in one run.

    .venv/bin/python benchmarks/usage.py [--days 365] [--users 5000] [--sessions 10000]
        [--live 2000] [--ticks 20] [--requests 20] [--quick]

The history is written with set-based SQL (generate_series, a month per transaction) as the
rollup would have left it: 20 organizations of 10 groups of 25 users (5,000 users), and each day
`--sessions` sessions of a user drawn at random (so a user is active on 86% of days, with 2.3
sessions on average), each on one of its user's two usual GPU model and tier pairs (three
models in quarter, half and whole cards, on two clusters), 1 to 4 hours long (1 + 3u³ hours:
most are short) and within one UTC day. Each session leaves an admission request, a released
GPU allocation counted to its end (so outside the rollup's partial index), a `usage_hours` row
per UTC hour it touched (about 27,000 a day) and its part of the `usage_days` rows (one per
user, day, model, tier and cluster: about 6,000 a day) and of the `usage_months` rows. A year
is about 3.7 million allocations, 10 million hour rows, 2.2 million day rows and 7 GB. Not
generated for the history: its sessions' rows and utilization samples, credit holds and ledger
(the tick reads those only for the allocations it counts, by key; the reports never).

Three measurements, each with its goal and its baseline:

- The rollup tick (`gshare.usage.tasks.roll_up`, what the worker runs) over `--live` live GPU
  allocations of a free tier (no hold, so no metering), each with a utilization sample every
  30 s. Two databases on the server hold the same world and live allocations; one holds one
  day of history, the other the whole history (`--days`), both after VACUUM ANALYZE and a
  CHECKPOINT. After one untimed tick on each (the backlog since admission), `--ticks` ticks a
  simulated minute apart are timed on each, in turn (day, year, then year, day, ...), so that
  whatever else the machine does weighs on both alike; the minute's samples are inserted
  before each tick, untimed. The baseline is the one-day database: the figure is the ratio of
  the median ticks, year / day, with a goal of at most 1.5 (the tick's cost should follow the
  live allocations, not the history).
- The reports, from the API run as its own process (uvicorn, signed in as the bootstrapped
  super admin): `--requests` GETs each of /api/v1/usage over the last 365 days by group and
  month, and over the last 30 days by user (totals: by day, 5,000 users would pass the
  report's 20,000-row limit), after one untimed GET. Goal: p95 at most 500 ms each. Baseline:
  the same query (`repository.report_query`, limited as `service.report` limits it) run from
  this process through SQLAlchemy right after each GET; prints the ratio API p95 / query p95.
- The CSV export of every user-day row of the history (GET /api/v1/usage.csv?by=user&every=day
  over at most the 732 days a report may cover), streamed: rows per second, against reading
  the same query's rows from a server-side cursor in this process (once before and once after
  the export, the faster kept; prints the ratio export / cursor), and the growth of the API
  process's peak resident memory (VmHWM in /proc/<pid>/status) over the export, after a
  one-day export to warm up and with the peak reset to the current size (clear_refs) where
  the kernel allows, else against the peak so far. Goal: at most 50 MiB. The export runs
  before the reports, so that no report's peak can hide its own.

A run that misses a goal exits 1. --quick runs every path at a tiny size (3 days, 50 users,
20 live allocations) and checks no goal (make bench-smoke).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from gshare.credits.amounts import MICRO
from gshare.devcluster import free_port
from gshare.kit.db import make_engine, make_sessionmaker, plain_url
from gshare.kit.embedded_db import ensure_database, start_embedded
from gshare.kit.schema_version import upgrade
from gshare.kit.settings import Settings
from gshare.usage import service, tasks
from gshare.usage.repository import Filters, Visible, report_query

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _goals import check_goal
from _server import api_env, bootstrap, serve, sign_in, wait_ready

GOAL_REPORT_MS = 500.0
GOAL_EXPORT_MIB = 50.0
GOAL_TICK_RATIO = 1.5
USERS_PER_GROUP = 25
GROUPS_PER_ORG = 10
CHUNK_DAYS = 31
CLUSTERS = (
    uuid.UUID("0c1a5e7e-0000-4000-8000-000000000001"),
    uuid.UUID("0c1a5e7e-0000-4000-8000-000000000002"),
)
# (model, memory MiB, credits an hour for a whole card, cluster), and the tiers of each.
MODELS = (
    ("NVIDIA-A100-SXM4-80GB", 81920, 4, CLUSTERS[0]),
    ("NVIDIA-H100-80GB-HBM3", 81559, 8, CLUSTERS[0]),
    ("NVIDIA-L40S", 46068, 2, CLUSTERS[1]),
)
TIERS = (("quarter", 25), ("half", 50), ("exclusive", 100))

_SETUP = """
CREATE UNLOGGED TABLE bench_orgs (n int PRIMARY KEY, id uuid NOT NULL);
CREATE UNLOGGED TABLE bench_groups (n int PRIMARY KEY, id uuid NOT NULL, org_id uuid NOT NULL);
CREATE UNLOGGED TABLE bench_users (
  n int PRIMARY KEY, id uuid NOT NULL, group_id uuid NOT NULL, org_id uuid NOT NULL,
  c1 int NOT NULL, c2 int NOT NULL);
CREATE UNLOGGED TABLE bench_combos (
  c int PRIMARY KEY, model text NOT NULL, tier text NOT NULL, vram_mib int NOT NULL,
  compute_percent int NOT NULL, price bigint NOT NULL, cluster_id uuid NOT NULL);
CREATE UNLOGGED TABLE bench_spans (
  alloc_id uuid NOT NULL, session_id uuid NOT NULL, user_id uuid NOT NULL,
  group_id uuid NOT NULL, org_id uuid NOT NULL, model text NOT NULL, tier text NOT NULL,
  vram_mib int NOT NULL, compute_percent int NOT NULL, price bigint NOT NULL,
  cluster_id uuid NOT NULL, started timestamptz NOT NULL, ended timestamptz NOT NULL,
  idle float8 NOT NULL, peak_mib int NOT NULL);
CREATE UNLOGGED TABLE bench_live (
  session_id uuid PRIMARY KEY, alloc_id uuid NOT NULL, user_id uuid NOT NULL,
  group_id uuid NOT NULL, model text NOT NULL, tier text NOT NULL, vram_mib int NOT NULL,
  compute_percent int NOT NULL, cluster_id uuid NOT NULL, admitted_at timestamptz NOT NULL);
-- Each hour a span touched, with what it adds to that hour (as rollup.py would count it:
-- samples for 98% of the time, the span's idle share of that idle, its peak VRAM).
CREATE VIEW bench_hours AS
SELECT s.alloc_id, h AS hour, s.session_id, s.user_id, s.group_id, s.org_id, s.cluster_id,
  s.model, s.tier, s.vram_mib AS vram_limit_mib, e.held AS held_seconds,
  e.held * s.compute_percent / 100.0 AS gpu_seconds,
  e.held * 0.98 * s.idle * s.compute_percent / 100.0 AS idle_gpu_seconds,
  e.held * 0.98 AS measured_seconds, round(s.price * e.held / 3600)::bigint AS credits,
  s.peak_mib AS vram_peak_mib, e.held * 0.98 * s.peak_mib * 0.8 AS vram_mib_seconds
FROM bench_spans AS s
CROSS JOIN LATERAL generate_series(date_trunc('hour', s.started),
  s.ended - interval '1 microsecond', interval '1 hour') AS h
CROSS JOIN LATERAL (SELECT extract(epoch FROM least(h + interval '1 hour', s.ended)
  - greatest(h, s.started))::float8 AS held) AS e;
"""


def _world(orgs: int, groups: int, users: int, now: datetime) -> list[tuple[str, tuple[Any, ...]]]:
    """`orgs` organizations of groups, `groups` groups of users, `users` users, each a member
    of one group with two usual model and tier pairs (c1, c2: two different ones)."""
    pairs = len(combos())
    return [
        (
            "INSERT INTO bench_orgs SELECT n, gen_random_uuid() FROM generate_series(0, $1 - 1) n",
            (orgs,),
        ),
        (
            "INSERT INTO organizations (id, name, created_at) "
            "SELECT id, 'Organization ' || n, $1 FROM bench_orgs",
            (now,),
        ),
        (
            "INSERT INTO bench_groups SELECT g.n, gen_random_uuid(), o.id "
            "FROM generate_series(0, $1 - 1) AS g(n) JOIN bench_orgs AS o ON o.n = g.n % $2",
            (groups, orgs),
        ),
        (
            "INSERT INTO groups (id, org_id, name, created_at) "
            "SELECT id, org_id, 'Group ' || n, $1 FROM bench_groups",
            (now,),
        ),
        (
            "INSERT INTO bench_users SELECT u.n, gen_random_uuid(), g.id, g.org_id, u.n % $3, "
            "(u.n % $3 + 1 + (u.n / $3) % ($3 - 1)) % $3 "
            "FROM generate_series(0, $1 - 1) AS u(n) JOIN bench_groups AS g ON g.n = u.n % $2",
            (users, groups, pairs),
        ),
        (
            "INSERT INTO users (id, email, name, password_hash, must_change_password, "
            "is_super_admin, active, created_at, password_changed_at) "
            "SELECT id, 'member-' || n || '@bench.example.org', 'Member ' || n, '-', false, "
            "false, true, $1, $1 FROM bench_users",
            (now,),
        ),
        (
            "INSERT INTO memberships (user_id, group_id, role, created_at) "
            "SELECT id, group_id, 'member', $1 FROM bench_users",
            (now,),
        ),
    ]


# $1 first day, $2 last day, $3 users, $4 sessions a day.
_SPANS = """
INSERT INTO bench_spans
SELECT gen_random_uuid(), gen_random_uuid(), u.id, u.group_id, u.org_id, c.model, c.tier,
  c.vram_mib, c.compute_percent, c.price, c.cluster_id,
  x.d + make_interval(secs => (86400 - x.dur) * x.at),
  x.d + make_interval(secs => (86400 - x.dur) * x.at + x.dur),
  x.idle, (c.vram_mib * x.peak)::int
FROM (SELECT d, floor(random() * $3)::int AS un, random() AS pick,
        3600 + 10800 * power(random(), 3) AS dur, random() AS at, 0.6 * random() AS idle,
        0.2 + 0.8 * random() AS peak
      FROM generate_series($1::date::timestamptz, $2::date::timestamptz, interval '1 day') AS d,
        generate_series(1, $4) AS k) AS x
JOIN bench_users AS u ON u.n = x.un
JOIN bench_combos AS c ON c.c = CASE WHEN x.pick < 0.7 THEN u.c1 ELSE u.c2 END
"""

# In key order, so that a chunk writes each page of the (random) primary keys once.
_HISTORY = [
    "INSERT INTO admission_requests (id, user_id, group_id, model, tier_name, cpu_millicores, "
    "memory_mib, cluster_id, session_id, status, reason, enqueued_at, decided_at) "
    "SELECT session_id, user_id, group_id, model, tier, 2000, 8192, cluster_id, session_id, "
    "'admitted', '', started - interval '5 seconds', started FROM bench_spans ORDER BY session_id",
    "INSERT INTO gpu_allocations (id, request_id, user_id, group_id, cluster_id, model, "
    "tier_name, vram_mib, compute_percent, cpu_millicores, memory_mib, price_per_hour, hold_id, "
    "status, admitted_at, released_at, release_reason, rolled_until, rolled_credits, "
    "rolled_sample_at) "
    "SELECT alloc_id, session_id, user_id, group_id, cluster_id, model, tier, vram_mib, "
    "compute_percent, 2000, 8192, price, gen_random_uuid(), 'released', started, ended, 'stop', "
    "ended, round(price * extract(epoch FROM ended - started) / 3600)::bigint, "
    "ended - interval '10 seconds' FROM bench_spans ORDER BY alloc_id",
    "INSERT INTO usage_hours (allocation_id, hour, session_id, user_id, group_id, org_id, "
    "cluster_id, model, tier, vram_limit_mib, held_seconds, gpu_seconds, idle_gpu_seconds, "
    "measured_seconds, credits, vram_peak_mib, vram_mib_seconds) "
    "SELECT * FROM bench_hours ORDER BY alloc_id, hour",
    "INSERT INTO usage_days (day, user_id, group_id, model, tier, cluster_id, org_id, "
    "held_seconds, gpu_seconds, idle_gpu_seconds, measured_seconds, credits, vram_peak_mib) "
    "SELECT (hour AT TIME ZONE 'UTC')::date, user_id, group_id, model, tier, cluster_id, org_id, "
    "sum(held_seconds), sum(gpu_seconds), sum(idle_gpu_seconds), sum(measured_seconds), "
    "sum(credits), max(vram_peak_mib) FROM bench_hours "
    "GROUP BY 1, user_id, group_id, model, tier, cluster_id, org_id",
    # A chunk may end within a month: the next one adds to its rows, as the rollup does.
    "INSERT INTO usage_months (month, user_id, group_id, model, tier, cluster_id, org_id, "
    "held_seconds, gpu_seconds, idle_gpu_seconds, measured_seconds, credits, vram_peak_mib) "
    "SELECT date_trunc('month', hour AT TIME ZONE 'UTC')::date, user_id, group_id, model, tier, "
    "cluster_id, org_id, sum(held_seconds), sum(gpu_seconds), sum(idle_gpu_seconds), "
    "sum(measured_seconds), sum(credits), max(vram_peak_mib) FROM bench_hours "
    "GROUP BY 1, user_id, group_id, model, tier, cluster_id, org_id "
    "ON CONFLICT (month, user_id, group_id, model, tier, cluster_id) DO UPDATE SET "
    "held_seconds = usage_months.held_seconds + excluded.held_seconds, "
    "gpu_seconds = usage_months.gpu_seconds + excluded.gpu_seconds, "
    "idle_gpu_seconds = usage_months.idle_gpu_seconds + excluded.idle_gpu_seconds, "
    "measured_seconds = usage_months.measured_seconds + excluded.measured_seconds, "
    "credits = usage_months.credits + excluded.credits, "
    "vram_peak_mib = greatest(usage_months.vram_peak_mib, excluded.vram_peak_mib)",
]


def _live(live: int, users: int, now: datetime) -> list[tuple[str, tuple[Any, ...]]]:
    """`live` running sessions of the first users, each holding a GPU allocation admitted 5 to
    65 minutes before `now` on its user's usual pair, in a free tier (no hold, no price: the
    tick needs no ledger), with a sample every 30 s since."""
    return [
        (
            "INSERT INTO bench_live SELECT gen_random_uuid(), gen_random_uuid(), u.id, "
            "u.group_id, c.model, c.tier, c.vram_mib, c.compute_percent, c.cluster_id, "
            "$3::timestamptz - make_interval(secs => 300 + 3600 * random()) "
            "FROM generate_series(0, $1 - 1) AS i JOIN bench_users AS u ON u.n = i % $2 "
            "JOIN bench_combos AS c ON c.c = u.c1",
            (live, users, now),
        ),
        (
            "INSERT INTO sessions (id, owner_id, session_type, desired_state, created_at, "
            "phase, phase_message, observed_generation, status_sequence, group_id, state, "
            "state_changed_at, running_since, request_id) "
            "SELECT session_id, user_id, 'jupyterlab', 'Running', admitted_at, 'Running', '', "
            "1, 1, group_id, 'running', admitted_at, admitted_at, session_id FROM bench_live",
            (),
        ),
        (
            "INSERT INTO admission_requests (id, user_id, group_id, model, tier_name, "
            "cpu_millicores, memory_mib, cluster_id, session_id, status, reason, enqueued_at, "
            "decided_at) "
            "SELECT session_id, user_id, group_id, model, tier, 2000, 8192, cluster_id, "
            "session_id, 'admitted', '', admitted_at, admitted_at FROM bench_live",
            (),
        ),
        (
            "INSERT INTO gpu_allocations (id, request_id, user_id, group_id, cluster_id, model, "
            "tier_name, vram_mib, compute_percent, cpu_millicores, memory_mib, price_per_hour, "
            "status, admitted_at) "
            "SELECT alloc_id, session_id, user_id, group_id, cluster_id, model, tier, vram_mib, "
            "compute_percent, 2000, 8192, 0, 'live', admitted_at FROM bench_live",
            (),
        ),
        (
            "INSERT INTO session_samples (session_id, at, gpu_util_percent, vram_used_mib, "
            "samples) "
            "SELECT session_id, t, 100 * random(), (vram_mib * (0.2 + 0.8 * random()))::int, 1 "
            "FROM bench_live, generate_series(admitted_at + interval '30 seconds', $1, "
            "interval '30 seconds') AS t",
            (now,),
        ),
    ]


_SAMPLES = (
    "INSERT INTO session_samples (session_id, at, gpu_util_percent, vram_used_mib, samples) "
    "SELECT session_id, t, 100 * random(), (vram_mib * (0.2 + 0.8 * random()))::int, 1 "
    "FROM bench_live, unnest($1::timestamptz[]) AS t"
)
_COUNTS = (
    "admission_requests",
    "gpu_allocations",
    "usage_hours",
    "usage_days",
    "usage_months",
)


def combos() -> list[tuple[int, str, str, int, int, int, uuid.UUID]]:
    out: list[tuple[int, str, str, int, int, int, uuid.UUID]] = []
    for model, memory, per_hour, cluster in MODELS:
        for tier, percent in TIERS:
            price = per_hour * MICRO * percent // 100
            out.append((len(out), model, tier, memory * percent // 100, percent, price, cluster))
    return out


async def connect(url: str) -> asyncpg.Connection:
    """The connection that writes the world: UTC days, and commits that do not wait for the
    disk (a benchmark's data, on a server that is thrown away)."""
    conn = await asyncpg.connect(plain_url(url))
    await conn.execute(
        "SET TimeZone = 'UTC'; SET synchronous_commit = off; SET work_mem = '64MB'; "
        "SET maintenance_work_mem = '512MB'"
    )
    return conn


async def settle(conn: asyncpg.Connection) -> None:
    """Statistics and the visibility map as after autovacuum, and the load's dirty pages on
    disk, so that what is timed next does not pay for the load."""
    await conn.execute("VACUUM ANALYZE")
    await conn.execute("CHECKPOINT")


async def build_world(conn: asyncpg.Connection, users: int, now: datetime) -> tuple[int, int]:
    groups = max(1, math.ceil(users / USERS_PER_GROUP))
    orgs = max(1, math.ceil(groups / GROUPS_PER_ORG))
    await conn.execute(_SETUP)
    await conn.executemany("INSERT INTO bench_combos VALUES ($1, $2, $3, $4, $5, $6, $7)", combos())
    async with conn.transaction():
        for statement, args in _world(orgs, groups, users, now):
            await conn.execute(statement, *args)
    return orgs, groups


async def add_history(
    conn: asyncpg.Connection, first: date, last: date, *, users: int, per_day: int
) -> None:
    """Sessions from `first` through `last`, as the rollup leaves them, a month per
    transaction."""
    day = first
    while day <= last:
        through = min(last, day + timedelta(days=CHUNK_DAYS - 1))
        async with conn.transaction():
            await conn.execute("TRUNCATE bench_spans")
            await conn.execute(_SPANS, day, through, users, per_day)
            await conn.execute("ANALYZE bench_spans")
            for statement in _HISTORY:
                await conn.execute(statement)
        day = through + timedelta(days=1)


async def counts(conn: asyncpg.Connection) -> dict[str, int]:
    return {t: await conn.fetchval(f"SELECT count(*) FROM {t}") for t in _COUNTS}


class Ticks:
    """The rollup's worker tick over the live allocations, a simulated minute apart."""

    def __init__(
        self,
        conn: asyncpg.Connection,
        sessions: async_sessionmaker[AsyncSession],
        start: datetime,
        live: int,
    ) -> None:
        self.conn, self.sessions, self.now, self.live = conn, sessions, start, live
        self.settings = Settings(_env_file=None)

    async def tick(self) -> float:
        """A minute on: that minute's samples (untimed), then one timed tick."""
        at = self.now + timedelta(minutes=1)
        await self.conn.execute(_SAMPLES, [at - timedelta(seconds=30), at])
        self.now = at
        started = time.perf_counter()
        await tasks.roll_up(self.sessions, self.settings, at)
        elapsed = time.perf_counter() - started
        counted = await self.conn.fetchval(
            "SELECT count(*) FROM bench_live AS l JOIN gpu_allocations AS a ON a.id = l.alloc_id "
            "WHERE a.rolled_until = $1",
            at - service.SETTLE,
        )
        assert counted == self.live, (counted, self.live)
        return elapsed


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


async def timed_reports(
    client: httpx.AsyncClient,
    sessions: async_sessionmaker[AsyncSession],
    ask: dict[str, Any],
    rounds: int,
) -> tuple[list[float], list[float], int]:
    """`rounds` GETs of a report, each followed by its query run from here, after one untimed
    of each: (the GETs' seconds, the queries' seconds, the rows answered)."""
    query = report_query(
        since=date.fromisoformat(ask["since"]),
        until=date.fromisoformat(ask["until"]),
        by=ask["by"],
        every=ask["every"],
        visible=Visible(everything=True),
        filters=Filters(),
    ).limit(service.MOST_REPORT_ROWS + 1)  # as service.report runs it
    api: list[float] = []
    direct: list[float] = []
    async with sessions() as db:
        for n in range(rounds + 1):
            started = time.perf_counter()
            answer = await client.get("/api/v1/usage", params=ask)
            elapsed = time.perf_counter() - started
            assert answer.status_code == 200, answer.text
            started = time.perf_counter()
            found = (await db.execute(query)).all()
            queried = time.perf_counter() - started
            await db.rollback()
            if n:
                api.append(elapsed)
                direct.append(queried)
    rows = sum(max(1, len(r["series"])) for r in answer.json()["rows"])
    assert rows == len(found), (rows, len(found))
    return api, direct, rows


async def cursor_rows(engine: AsyncEngine, since: date, until: date) -> tuple[int, float]:
    """The export's rows read from a server-side cursor here: (rows, seconds)."""
    query = report_query(
        since=since,
        until=until,
        by="user",
        every="day",
        visible=Visible(everything=True),
        filters=Filters(),
    )
    rows = 0
    async with engine.connect() as conn:
        started = time.perf_counter()
        result = await conn.stream(query.execution_options(yield_per=1000))
        async for _ in result:
            rows += 1
        elapsed = time.perf_counter() - started
    return rows, elapsed


def memory_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise SystemExit(f"no {field} in /proc/{pid}/status")


def reset_peak(pid: int) -> bool:
    """Reset the process's peak resident size to its current size (Linux 4.0+)."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


async def export(client: httpx.AsyncClient, since: date, until: date) -> tuple[int, float]:
    """GET the CSV export, streamed: (rows less the header, seconds)."""
    params = {"by": "user", "every": "day", "since": since.isoformat(), "until": until.isoformat()}
    lines = 0
    started = time.perf_counter()
    async with client.stream("GET", "/api/v1/usage.csv", params=params) as response:
        assert response.status_code == 200, await response.aread()
        async for chunk in response.aiter_raw(1 << 16):
            lines += chunk.count(b"\n")
    return lines - 1, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=365, help="days of history")
    parser.add_argument("--users", type=int, default=5_000)
    parser.add_argument("--sessions", type=int, default=10_000, help="sessions a day")
    parser.add_argument("--live", type=int, default=2_000, help="live GPU allocations")
    parser.add_argument("--ticks", type=int, default=20, help="timed rollup ticks per history")
    parser.add_argument("--requests", type=int, default=20, help="timed requests per report")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, goals not checked")
    opts = parser.parse_args()
    if opts.quick:
        opts.days, opts.users, opts.sessions = 3, 50, 100
        opts.live, opts.ticks, opts.requests = 20, 2, 2
    if min(opts.days - 1, opts.users, opts.sessions, opts.live, opts.ticks, opts.requests) < 1:
        raise SystemExit("--days must be at least 2, and the other sizes at least 1")
    if opts.ticks > 50:
        raise SystemExit("--ticks: at most 50, so that every timed tick falls in one hour")
    # The simulated now: a few minutes into this hour, so that the timed ticks (a minute apart)
    # all fall in it; the history ends yesterday.
    now = datetime.now(UTC).replace(minute=3, second=0, microsecond=0)

    root = Path(tempfile.mkdtemp(prefix="gshare-bench-"))
    pg = start_embedded(root / "pg", delete_on_stop=True)
    api: subprocess.Popen[bytes] | None = None
    try:
        for name in ("gshare", "gshare_day"):
            asyncio.run(ensure_database(pg.url(), name))
            upgrade(pg.url(name))
        url = pg.url("gshare")
        bootstrap(url)
        figures = asyncio.run(load_and_tick(pg.url("gshare_day"), url, opts, now))
        port = free_port()
        env = api_env(url, root / "data") | {"GSHARE_PORT": str(port)}
        api = serve([sys.executable, "-m", "gshare", "api"], env)
        base = f"http://127.0.0.1:{port}"
        wait_ready(f"{base}/readyz")
        figures |= asyncio.run(
            measure_api(base, api.pid, url, opts, figures["first_day"], now.date())
        )
    finally:
        if api is not None:
            api.terminate()
            api.wait(10)
        pg.stop()
    show(figures, opts)


async def load_and_tick(
    day_url: str, year_url: str, opts: argparse.Namespace, now: datetime
) -> dict[str, Any]:
    """Both databases built, the year's history added to one, and the ticks timed on both in
    turn."""
    today = now.date()
    yesterday, first = today - timedelta(days=1), today - timedelta(days=opts.days)
    conns = [await connect(url) for url in (day_url, year_url)]
    engines = [make_engine(url, pool_size=2) for url in (day_url, year_url)]
    try:
        started = time.perf_counter()
        for conn in conns:
            orgs, groups = await build_world(conn, opts.users, now)
            await add_history(conn, yesterday, yesterday, users=opts.users, per_day=opts.sessions)
            async with conn.transaction():
                for statement, args in _live(opts.live, opts.users, now):
                    await conn.execute(statement, *args)
        first_load = time.perf_counter() - started
        started = time.perf_counter()
        await add_history(
            conns[1], first, today - timedelta(days=2), users=opts.users, per_day=opts.sessions
        )
        loaded = time.perf_counter() - started
        started = time.perf_counter()
        for conn in conns:
            await settle(conn)
        settled = time.perf_counter() - started
        day_counts, year_counts = await counts(conns[0]), await counts(conns[1])
        size = await conns[1].fetchval(
            "SELECT pg_size_pretty(pg_database_size(current_database()))"
        )

        day, year = (
            Ticks(conn, make_sessionmaker(engine), now, opts.live)
            for conn, engine in zip(conns, engines, strict=True)
        )
        await day.tick()  # the first: the backlog since admission, and cold caches
        await year.tick()
        times: dict[Ticks, list[float]] = {day: [], year: []}
        for n in range(opts.ticks):
            for ticks in (day, year) if n % 2 == 0 else (year, day):
                times[ticks].append(await ticks.tick())
    finally:
        for conn in conns:
            await conn.close()
        for engine in engines:
            await engine.dispose()
    return {
        "orgs": orgs,
        "groups": groups,
        "first_load": first_load,
        "loaded": loaded,
        "settled": settled,
        "day_counts": day_counts,
        "year_counts": year_counts,
        "size": size,
        "day_ticks": times[day],
        "year_ticks": times[year],
        "first_day": first,
    }


async def measure_api(
    base: str, pid: int, url: str, opts: argparse.Namespace, first_day: date, today: date
) -> dict[str, Any]:
    """The export, then the reports, each against its baseline from this process."""
    cookies = {"gshare_session": sign_in(base).cookies["gshare_session"]}
    asks = [
        {
            "since": (today - timedelta(days=365)).isoformat(),
            "until": today.isoformat(),
            "by": "group",
            "every": "month",
        },
        {
            "since": (today - timedelta(days=29)).isoformat(),
            "until": today.isoformat(),
            "by": "user",
            "every": "none",
        },
    ]
    since = max(first_day, today - service.LONGEST_REPORT)
    engine = make_engine(url, pool_size=2)
    try:
        async with httpx.AsyncClient(base_url=base, cookies=cookies, timeout=600) as client:
            # The export first, so that no report's peak hides its own; a day of it to warm up.
            await export(client, today - timedelta(days=1), today - timedelta(days=1))
            # The cursor read before and after it, the faster kept, so that neither side
            # alone pays for a cold cache.
            first = await cursor_rows(engine, since, today)
            reset = reset_peak(pid)
            rss = memory_kib(pid, "VmRSS")
            before = memory_kib(pid, "VmHWM")
            rows, seconds = await export(client, since, today)
            after = memory_kib(pid, "VmHWM")
            second = await cursor_rows(engine, since, today)
            sessions = make_sessionmaker(engine)
            reports = [await timed_reports(client, sessions, ask, opts.requests) for ask in asks]
    finally:
        await engine.dispose()
    assert first[0] == second[0] == rows, (first[0], second[0], rows)
    return {
        "reports": reports,
        "export_since": since,
        "export_rows": rows,
        "export_seconds": seconds,
        "cursor_seconds": min(first[1], second[1]),
        "rss_kib": rss,
        "hwm_before_kib": before,
        "hwm_after_kib": after,
        "peak_reset": reset,
    }


def show(f: dict[str, Any], opts: argparse.Namespace) -> None:
    print(
        f"world: {f['orgs']} organizations, {f['groups']} groups, {opts.users} users; "
        f"{opts.days} days of {opts.sessions} sessions a day; {opts.live} live GPU allocations"
    )
    print(
        f"one day of history and the live allocations, in each database: written in "
        f"{f['first_load']:.1f} s; rows: "
        + ", ".join(f"{t} {n}" for t, n in f["day_counts"].items())
    )
    print(
        f"the other {opts.days - 1} days: written in {f['loaded']:.1f} s, VACUUM ANALYZE and "
        f"CHECKPOINT {f['settled']:.1f} s, database {f['size']}; rows: "
        + ", ".join(f"{t} {n}" for t, n in f["year_counts"].items())
    )

    day_ms = statistics.median(f["day_ticks"]) * 1000
    year_ms = statistics.median(f["year_ticks"]) * 1000
    tick_ratio = year_ms / day_ms
    batches = math.ceil(opts.live / service.ROLLUP_BATCH)
    for name, ticks in (("1 day", f["day_ticks"]), (f"{opts.days} days", f["year_ticks"])):
        print(
            f"rollup tick over {opts.live} live allocations ({batches} "
            f"batch{'es' if batches > 1 else ''} of up to {service.ROLLUP_BATCH}), "
            f"{name} of history: "
            f"median {statistics.median(ticks) * 1000:7.1f} ms "
            f"(min {min(ticks) * 1000:.1f}, max {max(ticks) * 1000:.1f}, {len(ticks)} ticks)"
        )
    print(f"ratio tick year/day: {tick_ratio:.2f} (goal <= {GOAL_TICK_RATIO:g})")

    names = ("by group and month, 365 days", "by user, 30 days, totals")
    p95s = []
    for name, (times, direct, rows) in zip(names, f["reports"], strict=True):
        p50, p95 = percentile(times, 0.5) * 1000, percentile(times, 0.95) * 1000
        d50, d95 = percentile(direct, 0.5) * 1000, percentile(direct, 0.95) * 1000
        p95s.append(p95)
        print(
            f"report {name} ({rows} rows): API p50 {p50:7.1f} ms, p95 {p95:7.1f} ms "
            f"(goal <= {GOAL_REPORT_MS:g}); its query p50 {d50:7.1f} ms, p95 {d95:7.1f} ms; "
            f"ratio API/query p95 {p95 / d95:.2f}"
        )

    rows, seconds = f["export_rows"], f["export_seconds"]
    rate, cursor_rate = rows / seconds, rows / f["cursor_seconds"]
    print(
        f"CSV export by user and day from {f['export_since']}: {rows} rows in {seconds:.1f} s, "
        f"{rate:,.0f} rows/s; the same rows from a cursor here {cursor_rate:,.0f} rows/s; "
        f"ratio export/cursor {rate / cursor_rate:.2f}"
    )
    growth = (f["hwm_after_kib"] - f["hwm_before_kib"]) / 1024
    how = "peak reset to the current size" if f["peak_reset"] else "against the peak so far"
    print(
        f"API process memory: {f['rss_kib'] / 1024:.1f} MiB resident before the export, peak "
        f"{f['hwm_after_kib'] / 1024:.1f} MiB after; peak growth {growth:.1f} MiB "
        f"({how}; goal <= {GOAL_EXPORT_MIB:g})"
    )

    check_goal(
        tick_ratio <= GOAL_TICK_RATIO,
        f"ratio tick year/day at most {GOAL_TICK_RATIO:g}",
        quick=opts.quick,
    )
    for name, p95 in zip(names, p95s, strict=True):
        check_goal(
            p95 <= GOAL_REPORT_MS,
            f"report {name}: p95 at most {GOAL_REPORT_MS:g} ms",
            quick=opts.quick,
        )
    check_goal(
        growth <= GOAL_EXPORT_MIB,
        f"CSV export: API peak memory growth at most {GOAL_EXPORT_MIB:g} MiB",
        quick=opts.quick,
    )


if __name__ == "__main__":
    main()
