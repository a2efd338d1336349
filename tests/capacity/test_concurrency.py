"""Admission under contention: four OS processes admit 500 requests at once against one
cluster's cards, and afterwards the database holds no over-allocation, no mixed carving, no
shared slot, and exactly one open hold per admitted priced request.

Run as a module (`python -m tests.capacity.test_concurrency ASKS RESULT GO`), this file is one
of those processes: it admits its share of the requests the way the sessions domain will, in
one retried transaction each."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.kit.clock import FrozenClock
from tests.capacity.builders import capacity_world, set_policy
from tests.credits.builders import assert_ledger_clean
from tests.eventually import eventually
from tests.processes import clean_env

PROCESSES = 4
PER_PROCESS = 125
USERS = 40
# Only these users may queue (the group's policy refuses queueing to the rest): a queued
# admission ranks the whole queue, and a bounded queue keeps the run short.
QUEUERS = 4
TIERS = ("1/8", "1/4", "1/2", "exclusive")
CONCURRENCY = 6  # admissions in flight per process


async def _admit_share(database_url: str, asks: list[dict[str, Any]], go: Path) -> dict[str, Any]:
    from gshare.capacity import admission
    from gshare.kit.db import make_engine, make_sessionmaker, run_in_transaction
    from gshare.kit.settings import Settings

    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    engine = make_engine(database_url, pool_size=CONCURRENCY)
    sessions = make_sessionmaker(engine)
    outcomes: dict[str, str] = {}
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(raw: dict[str, Any], now: Any) -> None:
        ask = admission.Ask(
            uuid.UUID(raw["request_id"]),
            uuid.UUID(raw["user_id"]),
            uuid.UUID(raw["group_id"]),
            uuid.UUID(raw["tier_id"]),
        )

        async def work(db: AsyncSession) -> str:
            try:
                outcome = await admission.admit(db, ask, now, settings)
            except admission.NoCapacity:
                await db.rollback()
                return "no_capacity"
            return outcome.request.status

        async with gate:
            try:
                outcomes[raw["request_id"]] = await run_in_transaction(sessions, work, attempts=10)
            except Exception as exc:  # reported back, and the test fails on it
                outcomes[raw["request_id"]] = f"error: {type(exc).__name__}: {exc}"

    from datetime import datetime

    now = datetime.fromisoformat(asks[0]["now"])
    # every process starts at the same moment
    await eventually(go.exists, "the signal to go", timeout=60, interval=0.01)
    started = time.monotonic()
    await asyncio.gather(*(one(raw, now) for raw in asks))
    print(f"admitted {len(asks)} in {time.monotonic() - started:.1f}s", flush=True)
    await engine.dispose()
    return outcomes


async def _sql(sessions: async_sessionmaker[AsyncSession], query: str) -> list[Any]:
    async with sessions() as db:
        return list(await db.execute(text(query)))


async def test_four_processes_admitting_at_once_never_overcommit_a_card(
    sessions: async_sessionmaker[AsyncSession],
    clock: FrozenClock,
    database_url: str,
    tmp_path: Path,
) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=16, users=USERS, user_credits=200)
    await set_policy(sessions, now, "group", w.group_id, {"queueing_allowed": False})
    for user_id in w.user_ids[:QUEUERS]:
        await set_policy(sessions, now, "user", user_id, {"queueing_allowed": True})
    asks = [
        {
            "request_id": str(uuid.uuid4()),
            "user_id": str(w.user_ids[i % USERS]),
            "group_id": str(w.group_id),
            "tier_id": str(w.tiers[TIERS[(i * 7 + i // 4) % len(TIERS)]].id),
            "now": now.isoformat(),
        }
        for i in range(PROCESSES * PER_PROCESS)
    ]
    go = tmp_path / "go"
    procs = []
    for n in range(PROCESSES):
        share = tmp_path / f"asks-{n}.json"
        share.write_text(json.dumps(asks[n * PER_PROCESS : (n + 1) * PER_PROCESS]))
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.capacity.test_concurrency",
                    database_url,
                    str(share),
                    str(tmp_path / f"result-{n}.json"),
                    str(go),
                ],
                env=clean_env(),
                cwd=Path(__file__).resolve().parents[2],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    try:

        def all_ready() -> bool:
            assert all(p.poll() is None for p in procs), [p.communicate()[0] for p in procs]
            return len(list(tmp_path.glob("ready-*"))) >= PROCESSES

        await eventually(all_ready, "the processes to start", timeout=30, interval=0.05)
        go.touch()
        outputs = [p.communicate(timeout=120)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in procs] == [0] * PROCESSES, outputs
    outcomes: dict[str, str] = {}
    for n in range(PROCESSES):
        outcomes |= json.loads((tmp_path / f"result-{n}.json").read_text())
    assert len(outcomes) == PROCESSES * PER_PROCESS
    errors = [o for o in outcomes.values() if o not in ("admitted", "queued", "no_capacity")]
    assert errors == [], (len(errors), errors[:2])
    admitted = {r for r, o in outcomes.items() if o == "admitted"}
    queued = {r for r, o in outcomes.items() if o == "queued"}
    refused = {r for r, o in outcomes.items() if o == "no_capacity"}
    assert admitted, "the mix must fill cards"
    assert queued, "and queue"
    assert refused, "and refuse"
    queuers = {str(u) for u in w.user_ids[:QUEUERS]}
    assert {a["user_id"] for a in asks if a["request_id"] in queued} <= queuers

    statuses = dict(await _sql(sessions, "SELECT id::text, status FROM admission_requests"))
    assert statuses == {r: o for r, o in outcomes.items() if o != "no_capacity"}

    over = await _sql(
        sessions,
        """SELECT c.uuid, count(a.id), c.carved_slots, c.split_count
             FROM gpu_cards c JOIN gpu_allocations a ON a.live_card_id = c.id
            GROUP BY c.id
           HAVING count(a.id) > coalesce(c.carved_slots, 1) OR count(a.id) > c.split_count""",
    )
    assert over == []
    mixed = await _sql(
        sessions,
        """SELECT c.uuid FROM gpu_cards c JOIN gpu_allocations a ON a.live_card_id = c.id
            GROUP BY c.id
           HAVING count(DISTINCT a.tier_id) > 1 OR bool_or(a.tier_id <> c.carved_tier_id)""",
    )
    assert mixed == []
    shared = await _sql(
        sessions,
        """SELECT live_card_id, slot FROM gpu_allocations WHERE live_card_id IS NOT NULL
            GROUP BY live_card_id, slot HAVING count(*) > 1""",
    )
    assert shared == []
    slots_used = await _sql(
        sessions, "SELECT count(*) FROM gpu_allocations WHERE live_card_id IS NOT NULL"
    )
    live = dict(
        await _sql(
            sessions,
            "SELECT request_id::text, price_per_hour FROM gpu_allocations WHERE status = 'live'",
        )
    )
    assert set(live) == admitted
    assert slots_used[0][0] == len(admitted)
    holds = dict(
        await _sql(
            sessions,
            """SELECT session_id::text, count(*) FROM credit_holds WHERE status = 'open'
                GROUP BY session_id""",
        )
    )
    priced = {r for r, price in live.items() if price > 0}
    assert priced == admitted
    assert holds == dict.fromkeys(priced, 1)
    assert not (set(holds) & queued)
    await assert_ledger_clean(sessions)


def _main(database_url: str, asks_file: str, result_file: str, go: str) -> None:
    asks = json.loads(Path(asks_file).read_text())
    Path(result_file).with_name(f"ready-{Path(result_file).stem}").touch()
    outcomes = asyncio.run(_admit_share(database_url, asks, Path(go)))
    Path(result_file).write_text(json.dumps(outcomes))


if __name__ == "__main__":
    _main(*sys.argv[1:5])
