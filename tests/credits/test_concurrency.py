"""Eight processes doing thousands of random ledger operations at once, some killed mid-way:
afterwards every invariant holds."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

from sqlalchemy import text

from gshare.credits import operations, repository
from gshare.credits.amounts import MICRO
from tests.credits.builders import assert_ledger_clean, tenancy
from tests.eventually import eventually_sync

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = 8
TOTAL_OPS = 5200
KILLS = 6


async def _plan(sessions, now, tmp_path: Path) -> Path:
    """One organization, four groups of four members, each wallet with a grant; real tenancy
    rows, because refills pay only grants whose payer still applies."""
    groups: dict[str, list[str]] = {}
    async with sessions() as db, db.begin():
        org_id, made = await tenancy(db, now, groups=4, members=4)
        org = await repository.account_id(db, "org", org_id, now)
        await operations.mint(db, wallet_id=org, amount=100_000 * MICRO, now=now)
        await operations.set_monthly_grant(
            db, wallet_id=org, amount=50_000 * MICRO, funding_wallet_id=None
        )
        for group_id, member_ids in made:
            group = await repository.account_id(db, "group", group_id, now)
            await operations.move(
                db, from_id=org, to_id=group, amount=10_000 * MICRO, kind="allocation", now=now
            )
            await operations.set_monthly_grant(
                db, wallet_id=group, amount=5_000 * MICRO, funding_wallet_id=org
            )
            users = []
            for member_id in member_ids:
                user = await repository.account_id(db, "user", member_id, now)
                await operations.move(
                    db,
                    from_id=group,
                    to_id=user,
                    amount=500 * MICRO,
                    kind="allocation",
                    now=now,
                )
                await operations.set_monthly_grant(
                    db, wallet_id=user, amount=300 * MICRO, funding_wallet_id=group
                )
                users.append(str(user))
            groups[str(group)] = users
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"org": str(org), "groups": groups}))
    return plan


def _start(url: str, plan: Path, progress: Path, seed: int, ops: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.credits.chaos",
            url,
            str(plan),
            str(progress),
            str(seed),
            str(ops),
        ],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
    )


async def test_eight_processes_thousands_of_operations_and_kills_break_nothing(
    sessions, database_url: str, clock, tmp_path: Path
) -> None:
    plan = await _plan(sessions, clock.now(), tmp_path)
    rng = random.Random(20261129)
    per_client = TOTAL_OPS // CLIENTS
    progress = [tmp_path / f"progress-{i}" for i in range(CLIENTS)]
    for p in progress:
        p.touch()
    procs = [_start(database_url, plan, progress[i], i, per_client) for i in range(CLIENTS)]
    kills = 0

    def all_finished() -> bool:
        """Whether every client has ended; kills one, and starts it again, at each step."""
        nonlocal kills
        running = [i for i, p in enumerate(procs) if p.poll() is None]
        if not running:
            return True
        done = [p.stat().st_size for p in progress]
        if kills < KILLS and sum(done) > (kills + 1) * TOTAL_OPS // (KILLS + 2):
            victim = rng.choice(running)
            procs[victim].send_signal(signal.SIGKILL)
            procs[victim].wait()
            kills += 1
            left = max(0, per_client - progress[victim].stat().st_size)
            procs[victim] = _start(database_url, plan, progress[victim], 1000 + kills, left + 10)
        return False

    eventually_sync(all_finished, "every client to finish", timeout=600, interval=0.05)
    failed = [
        (p.returncode, p.stderr.read().decode()[-2000:] if p.stderr else "")
        for p in procs
        if p.returncode != 0
    ]
    assert not failed, failed
    assert kills == KILLS
    total = sum(p.stat().st_size for p in progress)
    assert total >= 5000, total
    report = await assert_ledger_clean(sessions)
    assert report.minted >= 100_000 * MICRO
    async with sessions() as db:
        counts = (
            await db.execute(
                text(
                    "SELECT (SELECT count(*) FROM credit_transfers), "
                    "(SELECT count(*) FROM credit_transfers WHERE kind = 'capture'), "
                    "(SELECT count(*) FROM credit_hold_resolutions), "
                    "(SELECT count(*) FROM credit_refills), "
                    "(SELECT count(*) FROM idempotency_records)"
                )
            )
        ).one()
    transfers, captures, resolutions, refills, keys = counts
    # The run did real work of every kind, not only refused attempts.
    assert transfers > 1000, counts
    assert captures > 50, counts
    assert resolutions > 100, counts
    assert refills > 0, counts
    assert 0 < keys <= 60, counts
