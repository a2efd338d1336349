"""Soak: the whole system under load and faults, in the spirit of Jepsen's bank test.

    .venv/bin/python benchmarks/soak.py [--users 200] [--actions 30] [--nodes 8] [--cards 8]
                                        [--think 1.5] [--seed 7] [--scheduling 10]
                                        [--quick]

What runs is `make demo`'s kind of stack, every part a real process: PostgreSQL, a kube-apiserver
with kwok's simulated A100 nodes (`--nodes` x `--cards` cards), two API processes, two worker
processes and the operator, with the default intervals. Simulated users (`--users`, members of
four groups, with funded wallets) sign in and each issue `--actions` random lifecycle actions
(create, pause, resume, stop, delete, keep running, read) with random think times, spread over
both APIs, an Idempotency-Key on every change and one retry after a lost answer, as a browser
sends them.

The same stack does two rounds with the same number of actions. The first has no faults. In the
second, at random moments, each kind of process (an API, a worker, the operator) is killed with
SIGKILL at least twice and started again, and PostgreSQL is restarted once (an immediate
shutdown: crash recovery on start). After each round every user stops what they have and the
run waits, at most `--quiet` seconds, for the system to settle; then it checks:

- the ledger check (the API's own, as the super admin runs it);
- over-allocation: no card holds more than its memory or its slots, from the database's live
  allocations and from the pods' card annotations;
- every open hold belongs to a session that holds a card, and every such session has one;
- no session is left in a state that waits on a process (starting, pausing, stopping);
- no GShareSession resource or pod without a session that wants one, no running session
  without its pod, no paused one without its resource;
- billing: each allocation's hold captured exactly what the allocation owed for the seconds
  from its admission to its release (none billed twice, none unbilled), and the seconds the
  allocations were billed for equal the seconds the sessions' transition history spent holding
  a card.

A third round (`--scheduling` minutes) has no process faults but the scheduling features
churning under the users: the super admin starts and ends drains of whole nodes (a few seconds
of notice), books capacity for a group starting now or within a minute and cancels it, and
every so often every member of one group stops all their sessions at once, so that stops,
resumes, drains ending and bookings starting land together. After it the same checks run, and
no session that is not starting or running may hold an allocation.

It prints the violations (goal: 0), the actions per second of the faulty round against the
quiet one (goal: a ratio of at least 0.7), the time after each kill until every session that was
waiting on a process has moved on (p50, p99; goal p99 at most 30 s), and the requests answered
5xx or lost (no answer) inside and outside the fault windows. A missed goal exits 1.

--quick runs a tiny version (a few users, one fault of each kind) and checks no goal
(make bench-smoke).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _goals import check_goal
from gshare.devcluster import Cluster, a100_nodes, free_port, testenv_bin
from gshare.kit.embedded_db import ensure_database, start_embedded

NAMESPACE = "gshare-sessions"
PASSWORD = "soak-" + uuid.uuid4().hex  # simulated users share one password
GROUPS = 4
USER_CREDITS = 100
# The states a session leaves only when a process does something: a report of the pod, the
# operator's removal, a timeout. Waiting in the queue (queued, resuming) is not one of them.
MOVING = ("starting", "pausing", "stopping")
FAULT_WINDOW_AFTER_READY_S = 5.0


def python_env(url: str, data_dir: Path, **extra: str) -> dict[str, str]:
    """This environment without the machine's GSHARE_* settings, plus the shared ones."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GSHARE_")}
    env.update(
        GSHARE_DATABASE_URL=url,
        GSHARE_DATA_DIR=str(data_dir),
        GSHARE_LOG_LEVEL="warning",
        GSHARE_SESSIONS_NAMESPACE=NAMESPACE,
        **extra,
    )
    return env


# ---- the processes ---------------------------------------------------------------------------


@dataclass
class Process:
    """One of the platform's processes, which the run may kill and start again."""

    name: str
    args: list[str]
    env: dict[str, str]
    log: Path
    ready_url: str | None = None
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    def start(self) -> None:
        self.starts += 1
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                self.args, env=self.env, stdout=out, stderr=subprocess.STDOUT
            )

    async def ready(self, deadline_s: float = 180) -> None:
        if self.ready_url is None:
            return
        deadline = time.monotonic() + deadline_s
        async with httpx.AsyncClient(timeout=5) as client:
            while time.monotonic() < deadline:
                try:
                    if (await client.get(self.ready_url)).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.1)
        raise SystemExit(f"{self.name} did not become ready (log: {self.log})")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# ---- the world -------------------------------------------------------------------------------


@dataclass
class World:
    emails: list[str]
    groups: list[uuid.UUID]
    tiers: list[uuid.UUID]
    image_id: str = ""


async def seed(url: str, users: int) -> World:
    """The A100 priced as `make demo` prices it, with 1/8, 1/4 and 1/2 tiers; an organization
    of four groups; `users` members spread over them, each with a funded wallet and the same
    password."""
    from gshare.capacity import tiers
    from gshare.credits import operations
    from gshare.credits import repository as credits
    from gshare.credits.amounts import MICRO
    from gshare.demo.stack import priced_a100
    from gshare.identity.models import Group, Membership, Organization, User
    from gshare.identity.passwords import hash_password_sync
    from gshare.kit.db import make_engine, make_sessionmaker
    from gshare.kit.ids import new_id

    hashed = hash_password_sync(PASSWORD)
    engine = make_engine(url, pool_size=1)
    now = datetime.now(UTC)
    world = World([], [], [])
    try:
        async with make_sessionmaker(engine)() as db, db.begin():
            world.tiers = await priced_a100(
                db, now, [tiers.fraction(8), tiers.fraction(4), tiers.fraction(2)]
            )
            org = Organization(id=new_id(), name="Soak Lab", created_at=now)
            db.add(org)
            await db.flush()
            org_wallet = await credits.account_id(db, "org", org.id, now)
            share = (users // GROUPS + 2) * USER_CREDITS * MICRO  # each group's
            await operations.mint(db, wallet_id=org_wallet, amount=GROUPS * share, now=now)
            wallets = []
            for g in range(GROUPS):
                group = Group(id=new_id(), org_id=org.id, name=f"Group {g}", created_at=now)
                db.add(group)
                await db.flush()
                world.groups.append(group.id)
                wallet = await credits.account_id(db, "group", group.id, now)
                await operations.move(
                    db, from_id=org_wallet, to_id=wallet, amount=share, kind="allocation", now=now
                )
                wallets.append(wallet)
            for n in range(users):
                email = f"soak{n:04d}@example.org"
                user = User(
                    id=new_id(),
                    email=email,
                    name=f"Soak {n}",
                    password_hash=hashed,
                    must_change_password=False,
                    created_at=now,
                    password_changed_at=now,
                )
                db.add(user)
                await db.flush()
                db.add(
                    Membership(
                        user_id=user.id,
                        group_id=world.groups[n % GROUPS],
                        role="member",
                        created_at=now,
                    )
                )
                mine = await credits.account_id(db, "user", user.id, now)
                await operations.move(
                    db,
                    from_id=wallets[n % GROUPS],
                    to_id=mine,
                    amount=USER_CREDITS * MICRO,
                    kind="allocation",
                    now=now,
                )
                world.emails.append(email)
    finally:
        await engine.dispose()
    return world


# ---- the users -------------------------------------------------------------------------------


@dataclass
class Tally:
    """What the users saw: every answer by time, the 5xx and lost requests by time."""

    actions: int = 0
    answers: Counter[int] = field(default_factory=Counter)
    failures: list[tuple[float, str]] = field(default_factory=list)  # (when, "5xx" | "lost")


class User:
    def __init__(self, email: str, group: int, bases: list[str], world: World, rng: random.Random):
        self.email, self.world, self.rng = email, world, rng
        self.group_id = str(world.groups[group])
        self.bases = bases
        self.home = rng.randrange(len(bases))  # the API this user's browser reaches first
        self.sessions: dict[str, dict[str, Any]] = {}
        self.cookies = httpx.Cookies()
        self.csrf = ""
        self.volume: str | None = None

    async def send(
        self, tally: Tally, method: str, path: str, body: dict[str, Any] | None = None
    ) -> httpx.Response | None:
        """One request; a change carries an Idempotency-Key, and a lost answer (the process
        died, the connection broke) is sent once more, with the same key, to the other API."""
        headers = {"X-CSRF-Token": self.csrf}
        if method != "GET":
            headers["Idempotency-Key"] = uuid.uuid4().hex
        for attempt in range(2):
            base = self.bases[(self.home + attempt) % len(self.bases)]
            try:
                async with httpx.AsyncClient(
                    base_url=base, cookies=self.cookies, timeout=30
                ) as client:
                    answer = await client.request(method, path, json=body, headers=headers)
            except httpx.HTTPError:
                tally.failures.append((time.monotonic(), "lost"))
                continue
            self.cookies.update(answer.cookies)
            tally.answers[answer.status_code] += 1
            if answer.status_code >= 500:
                tally.failures.append((time.monotonic(), "5xx"))
            return answer
        return None

    async def sign_in(self, tally: Tally) -> None:
        for _ in range(30):
            answer = await self.send(
                tally, "POST", "/api/v1/auth/login", {"email": self.email, "password": PASSWORD}
            )
            if answer is not None and answer.status_code == 200:
                self.csrf = answer.json()["csrf_token"]
                return
            await asyncio.sleep(1)
        raise SystemExit(f"{self.email} could not sign in")

    def _remember(self, answer: httpx.Response | None) -> None:
        if answer is not None and answer.status_code in (200, 201):
            found = answer.json()
            self.sessions[found["id"]] = found

    async def refresh(self, tally: Tally) -> None:
        answer = await self.send(tally, "GET", "/api/v1/sessions")
        if answer is not None and answer.status_code == 200:
            self.sessions = {s["id"]: s for s in answer.json()["items"]}

    async def act(self, tally: Tally) -> None:
        """One random action on what this user last saw."""
        tally.actions += 1
        open_ones = [s for s in self.sessions.values() if s["state"] != "stopped"]
        roll = self.rng.random()
        if roll < 0.25 or not self.sessions:
            await self.refresh(tally)
            return
        if not open_ones or (roll < 0.35 and len(open_ones) < 2):
            await self.create(tally)
            return
        session = self.rng.choice(list(self.sessions.values()))
        sid = session["id"]
        choice = self.rng.choice(["pause", "resume", "stop", "keep", "pause", "resume", "delete"])
        if choice == "delete":
            if session["state"] != "stopped":
                choice = "stop"
            else:
                answer = await self.send(tally, "DELETE", f"/api/v1/sessions/{sid}")
                if answer is not None and answer.status_code in (200, 204):
                    self.sessions.pop(sid, None)
                return
        if choice == "keep":
            self._remember(await self.send(tally, "POST", f"/api/v1/sessions/{sid}/keep-running"))
            return
        self._remember(await self.send(tally, "POST", f"/api/v1/sessions/{sid}/{choice}"))

    async def create(self, tally: Tally) -> None:
        body: dict[str, Any] = {
            "name": "soak",
            "session_type": "terminal",
            "image_id": self.world.image_id,
            "group_id": self.group_id,
            "tier_id": str(self.rng.choice(self.world.tiers)),
            "cpu_millicores": 100,
            "memory_mib": 128,
        }
        if self.volume is None:
            answer = await self.send(tally, "GET", "/api/v1/volumes")
            if answer is not None and answer.status_code == 200:
                homes = [v["id"] for v in answer.json()["items"] if v["kind"] == "home"]
                self.volume = homes[0] if homes else None
        if self.volume is not None:
            body["home_volume_id"] = self.volume
        else:
            body["home_size_gib"] = 1
        self._remember(await self.send(tally, "POST", "/api/v1/sessions", body))

    async def stop_everything(self, tally: Tally) -> None:
        await self.refresh(tally)
        for sid, found in list(self.sessions.items()):
            if found["state"] != "stopped":
                self._remember(await self.send(tally, "POST", f"/api/v1/sessions/{sid}/stop"))


async def round_of_actions(
    users: list[User], actions: int, think_s: float, tally: Tally, progress: list[int]
) -> float:
    """Every user issues `actions` actions with exponential think times; returns the seconds
    the round took."""

    async def one(user: User) -> None:
        for _ in range(actions):
            await asyncio.sleep(user.rng.expovariate(1 / think_s))
            await user.act(tally)
            progress[0] += 1

    started = time.monotonic()
    await asyncio.gather(*(one(u) for u in users))
    return time.monotonic() - started


class Admin:
    """The super admin, signed in, churning drains and bookings."""

    def __init__(self, base: str, cookies: httpx.Cookies, csrf: str, rng: random.Random) -> None:
        self.base, self.cookies, self.csrf, self.rng = base, cookies, csrf, rng
        self.done: Counter[str] = Counter()  # what it did, by kind and answer

    async def send(
        self, tally: Tally, method: str, path: str, body: dict[str, Any] | None = None
    ) -> httpx.Response | None:
        async with httpx.AsyncClient(base_url=self.base, cookies=self.cookies, timeout=30) as c:
            try:
                answer = await c.request(
                    method, path, json=body, headers={"X-CSRF-Token": self.csrf}
                )
            except httpx.HTTPError:
                tally.failures.append((time.monotonic(), "lost"))
                return None
        tally.answers[answer.status_code] += 1
        if answer.status_code >= 500:
            tally.failures.append((time.monotonic(), "5xx"))
        return answer

    async def drains(self, tally: Tally, cluster_id: str, nodes: list[str], until: float) -> None:
        """A node drained with a few seconds' notice, ended a little later, over and over."""
        while time.monotonic() < until:
            deadline = datetime.now(UTC) + timedelta(seconds=self.rng.uniform(0, 10))
            started = await self.send(
                tally,
                "POST",
                "/api/v1/drains",
                {
                    "scope": "node",
                    "cluster_id": cluster_id,
                    "node": self.rng.choice(nodes),
                    "deadline": deadline.isoformat(),
                    "reason": "soak",
                },
            )
            if started is not None:
                self.done[f"drain {started.status_code}"] += 1
            await asyncio.sleep(max(0.0, min(self.rng.uniform(2, 20), until - time.monotonic())))
            if started is not None and started.status_code == 201:
                ended = await self.send(tally, "POST", f"/api/v1/drains/{started.json()['id']}/end")
                if ended is not None:
                    self.done[f"end drain {ended.status_code}"] += 1
            tally.actions += 1

    async def bookings(self, tally: Tally, world: World, until: float) -> None:
        """A group's booking starting now or within a minute, cancelled after a while."""
        while time.monotonic() < until:
            starts = datetime.now(UTC) + timedelta(seconds=self.rng.choice([0, 5, 30, 60]))
            made = await self.send(
                tally,
                "POST",
                "/api/v1/bookings",
                {
                    "group_id": str(self.rng.choice(world.groups)),
                    "tier_id": str(self.rng.choice(world.tiers)),
                    "count": self.rng.randint(1, 2),
                    "starts_at": starts.isoformat(),
                    "ends_at": (starts + timedelta(minutes=5)).isoformat(),
                    "title": "soak",
                    "notice_minutes": self.rng.choice([0, 1]),
                },
            )
            if made is not None:
                code = "" if made.status_code < 400 else made.json()["error"]["code"]
                self.done[f"booking {made.status_code} {code}".strip()] += 1
            await asyncio.sleep(max(0.0, min(self.rng.uniform(5, 40), until - time.monotonic())))
            if made is not None and made.status_code == 201:
                cancelled = await self.send(
                    tally, "POST", f"/api/v1/bookings/{made.json()['id']}/cancel"
                )
                if cancelled is not None:
                    self.done[f"cancel booking {cancelled.status_code}"] += 1
            tally.actions += 1


async def round_of_scheduling(
    users: list[User],
    admin: Admin,
    world: World,
    cluster_id: str,
    nodes: list[str],
    seconds: float,
    think_s: float,
) -> Tally:
    """For `seconds`: the users act, the admin churns drains and bookings, and every so often
    one group's members stop everything at once."""
    tally = Tally()
    until = time.monotonic() + seconds

    async def one(user: User) -> None:
        while time.monotonic() < until:
            await asyncio.sleep(user.rng.expovariate(1 / think_s))
            await user.act(tally)

    async def stop_a_group() -> None:
        while time.monotonic() < until:
            await asyncio.sleep(admin.rng.uniform(5, 20))
            group = admin.rng.choice(world.groups)
            members = [u for u in users if u.group_id == str(group)]
            await asyncio.gather(*(u.stop_everything(tally) for u in members))
            admin.done["a group stopped everything"] += 1

    await asyncio.gather(
        *(one(u) for u in users),
        admin.drains(tally, cluster_id, nodes, until),
        admin.bookings(tally, world, until),
        stop_a_group(),
    )
    return tally


# ---- watching and checking -------------------------------------------------------------------


class Watcher:
    """Polls the database: when a fault happens, which sessions wait on a process, and when
    each of them has moved on."""

    def __init__(self, url: str) -> None:
        from gshare.kit.db import make_engine

        self.engine = make_engine(url, pool_size=2)

    async def moving(self) -> dict[str, tuple[str, int]] | None:
        """The sessions waiting on a process: id -> (state, transitions so far); None when
        the database cannot be read now."""
        try:
            async with self.engine.connect() as conn:
                rows = await conn.execute(
                    text(
                        "SELECT s.id, s.state, (SELECT count(*) FROM session_transitions t "
                        "WHERE t.session_id = s.id) FROM sessions s "
                        "WHERE s.state = ANY(:moving)"
                    ),
                    {"moving": list(MOVING)},
                )
                return {str(r[0]): (r[1], int(r[2])) for r in rows}
        except Exception:
            return None

    async def converged(
        self, started: float, waiting: dict[str, tuple[str, int]]
    ) -> tuple[float, str]:
        """Seconds from `started` until none of `waiting` is still where it was, and the last
        one to move on (its id and the state it waited in)."""
        deadline = started + 300
        last = ""
        while time.monotonic() < deadline:
            now = await self.moving()
            if now is not None:
                still = [f"{k} ({v[0]})" for k, v in waiting.items() if now.get(k) == v]
                if not still:
                    return time.monotonic() - started, last
                last = still[0]
            await asyncio.sleep(0.25)
        return float("inf"), last

    async def settled(self, deadline_s: float) -> bool:
        """Whether, within `deadline_s`, no session waits on a process."""
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            if await self.moving() == {}:
                return True
            await asyncio.sleep(0.5)
        return False


async def violations(
    url: str, cluster: Cluster, admin_base: str, admin: httpx.Cookies
) -> list[tuple[str, str]]:
    """Every invariant of the docstring that does not hold now, as (what, detail)."""
    from gshare.kit.db import make_engine
    from gshare.sessions.metering import owed

    found: list[tuple[str, str]] = []
    async with httpx.AsyncClient(base_url=admin_base, cookies=admin, timeout=60) as client:
        report = (await client.get("/api/v1/credits/check")).json()
    found += [("ledger: " + v["invariant"], v["detail"]) for v in report.get("violations", [])]

    engine = make_engine(url, pool_size=1)
    try:
        async with engine.connect() as db:

            async def rows(sql: str) -> list[Any]:
                return list(await db.execute(text(sql)))

            for r in await rows(
                "SELECT c.uuid, c.memory_mib, c.split_count, sum(a.vram_mib), "
                "sum(coalesce(a.live_slots, 0)) FROM gpu_allocations a JOIN gpu_cards c "
                "ON c.id = a.live_card_id WHERE a.status = 'live' GROUP BY c.id "
                "HAVING sum(a.vram_mib) > c.memory_mib "
                "OR sum(coalesce(a.live_slots, 0)) > c.split_count"
            ):
                found.append(("over-allocation (database)", str(tuple(r))))
            sessions = {
                str(r[0]): r
                for r in await rows(
                    "SELECT id, state, hold_id, request_id, desired_state FROM sessions"
                )
            }
            open_holds = {
                str(r[0]) for r in await rows("SELECT id FROM credit_holds WHERE status = 'open'")
            }
            holding = {
                str(s.hold_id) for s in sessions.values() if s.state in ("starting", "running")
            }
            for hold in open_holds - holding:
                found.append(("an open hold of no session holding a card", hold))
            for hold in holding - open_holds:
                found.append(("a session holding a card without an open hold", hold))
            for sid, s in sessions.items():
                if s.state in MOVING:
                    found.append((f"left in {s.state} past the quiet period", sid))
            for r in await rows(
                "SELECT r.session_id, a.id FROM gpu_allocations a "
                "JOIN admission_requests r ON r.id = a.request_id "
                "WHERE a.status <> 'released' AND r.session_id IS NOT NULL"
            ):
                s = sessions.get(str(r[0]))
                if s is None or s.state not in ("starting", "running") or s.request_id is None:
                    found.append(("an allocation held for a session that holds none", str(r[1])))

            cards = {str(r[0]): r for r in await rows("SELECT uuid, memory_mib FROM gpu_cards")}
            live = {
                f"session-{r[0]}": r
                for r in await rows(
                    "SELECT s.id, c.uuid FROM sessions s JOIN gpu_allocations a "
                    "ON a.request_id = s.request_id JOIN gpu_cards c ON c.id = a.live_card_id "
                    "WHERE a.status = 'live'"
                )
            }

            # Billing, allocation by allocation.
            for r in await rows(
                "SELECT a.id, a.price_per_hour, a.admitted_at, a.released_at, h.captured "
                "FROM gpu_allocations a JOIN credit_holds h ON h.id = a.hold_id "
                "WHERE a.status <> 'live' AND a.released_at IS NOT NULL"
            ):
                due = owed(int(r[1]), r[2], r[3])
                if int(r[4]) != due:
                    found.append(
                        (
                            "a released allocation billed other than it owed",
                            f"{r[0]}: captured {r[4]}, owed {due}",
                        )
                    )
            # Seconds billed against seconds held by the transition history.
            billed = {
                str(r[0]): float(r[1])
                for r in await rows(
                    "SELECT r.session_id, sum(extract(epoch FROM "
                    "coalesce(a.released_at, now()) - a.admitted_at)) FROM gpu_allocations a "
                    "JOIN admission_requests r ON r.id = a.request_id "
                    "WHERE a.hold_id IS NOT NULL AND r.session_id IS NOT NULL "
                    "GROUP BY r.session_id"
                )
            }
            history: dict[str, float] = {}
            entered: dict[str, datetime] = {}
            for r in await rows(
                "SELECT session_id, to_state, at FROM session_transitions ORDER BY session_id, id"
            ):
                sid, into, at = str(r[0]), r[1], r[2]
                if into in ("starting", "running"):
                    entered.setdefault(sid, at)
                elif sid in entered:
                    history[sid] = history.get(sid, 0.0) + (at - entered.pop(sid)).total_seconds()
            for sid, seconds in billed.items():
                if abs(history.get(sid, 0.0) - seconds) > 1.0 and sid not in entered:
                    found.append(
                        (
                            "seconds billed other than seconds held",
                            f"{sid}: billed {seconds:.1f}s, held {history.get(sid, 0):.1f}s",
                        )
                    )
    finally:
        await engine.dispose()

    with cluster.client() as kube:
        resources = kube.get(
            f"/apis/gshare.io/v1alpha1/namespaces/{NAMESPACE}/gsharesessions"
        ).json()["items"]
        pods = kube.get(f"/api/v1/namespaces/{NAMESPACE}/pods").json()["items"]
    by_name = {f"session-{sid}": s for sid, s in sessions.items()}
    kept = {r["metadata"]["name"] for r in resources if not r["metadata"].get("deletionTimestamp")}
    for name in kept:
        s = by_name.get(name)
        if s is None or s.state == "stopped":
            found.append(("a GShareSession resource without a session wanting one", name))
    for name, s in by_name.items():
        if s.state in ("running", "paused") and name not in kept:
            found.append((f"a {s.state} session without its resource", name))
    running_pods = {
        p["metadata"]["name"]: p for p in pods if not p["metadata"].get("deletionTimestamp")
    }
    per_card: Counter[str] = Counter()
    for name, pod in running_pods.items():
        s = by_name.get(name)
        if s is None or s.state not in ("starting", "running"):
            found.append(("a pod without a session holding a card", name))
        card = (pod["metadata"].get("annotations") or {}).get("nvidia.com/use-gpuuuid", "")
        if name in live and card != live[name][1]:
            found.append(("a pod on another card than its allocation", f"{name}: {card}"))
        limit = pod["spec"]["containers"][0].get("resources", {}).get("limits", {})
        per_card[card] += int(limit.get("nvidia.com/gpumem", 0))
    for card, mib in per_card.items():
        if card in cards and mib > cards[card][1]:
            found.append(("over-allocation (pods)", f"{card}: {mib} MiB"))
    for name, s in by_name.items():
        if s.state == "running" and name not in running_pods:
            found.append(("a running session without its pod", name))
    return found


# ---- the run ---------------------------------------------------------------------------------


@dataclass
class Fault:
    kind: str  # "api", "worker", "operator", "postgres"
    at_progress: float  # the share of the round's actions done when it strikes
    killed_at: float = 0.0
    back_at: float = 0.0
    converged_s: float = 0.0
    last: str = ""  # the last waiting session to move on


async def round_with(
    users: list[User],
    actions: int,
    think_s: float,
    faults: list[Fault],
    watcher: Watcher,
    strike: Callable[[Fault], Awaitable[None]] | None,
) -> tuple[float, Tally]:
    """A round of actions; at each fault's moment, `strike` it (None: strike nothing, only
    measure as if, which gives the same figure without faults) and measure how long the
    sessions then waiting on a process take to move on."""
    tally, progress = Tally(), [0]
    total = len(users) * actions
    measuring: list[asyncio.Task[None]] = []

    async def strikes() -> None:
        for fault in sorted(faults, key=lambda f: f.at_progress):
            while progress[0] < fault.at_progress * total:
                await asyncio.sleep(0.1)
            waiting = await watcher.moving() or {}
            fault.killed_at = time.monotonic()
            if strike is not None:
                await strike(fault)
            fault.back_at = time.monotonic()
            waiting |= await watcher.moving() or {}

            async def measure(
                fault: Fault = fault, waiting: dict[str, tuple[str, int]] = waiting
            ) -> None:
                fault.converged_s, fault.last = await watcher.converged(fault.killed_at, waiting)

            measuring.append(asyncio.create_task(measure()))

    striking = asyncio.create_task(strikes())
    acting = asyncio.create_task(round_of_actions(users, actions, think_s, tally, progress))
    await asyncio.wait([striking, acting], return_when=asyncio.FIRST_EXCEPTION)
    if striking.done() and striking.exception() is not None:
        acting.cancel()
        raise striking.exception()  # type: ignore[misc]
    seconds = await acting
    await striking
    await asyncio.gather(*measuring)
    return seconds, tally


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def settle_and_check(
    label: str,
    users: list[User],
    watcher: Watcher,
    url: str,
    cluster: Cluster,
    base: str,
    admin: httpx.Cookies,
    quiet_s: float,
) -> list[tuple[str, str]]:
    """With no new actions: let it settle, check; stop everything, let it settle, check."""
    found: list[tuple[str, str]] = []
    for step in ("after the actions", "after stopping everything"):
        if step == "after stopping everything":
            tally = Tally()
            await asyncio.gather(*(u.stop_everything(tally) for u in users))
        await watcher.settled(quiet_s)
        await asyncio.sleep(2)  # a report and a reconcile in flight land
        now = await violations(url, cluster, base, admin)
        print(f"  {label}, {step}: {len(now)} violations", flush=True)
        for what, detail in now[:20]:
            print(f"    {what}: {detail}", flush=True)
        found += now
    return found


async def soak(opts: argparse.Namespace, folder: Path) -> int:
    rng = random.Random(opts.seed)
    from gshare.cli import bootstrap_admin, migrate
    from gshare.clusters.keystore import key_store_for, load_or_create
    from gshare.demo.stack import register_demo_cluster
    from gshare.kit.settings import Settings

    server = start_embedded(folder / "pg", delete_on_stop=True)
    cluster = Cluster("soak", folder / "cluster", testenv_bin()).start()
    everything: list[Process] = []
    try:
        await ensure_database(server.url(), "gshare")
        url = server.url("gshare")
        await asyncio.to_thread(migrate, url)
        data_dir = folder / "data"
        data_dir.mkdir()
        admin_email, admin_password = "root@example.org", "soak-" + uuid.uuid4().hex
        settings = Settings(
            _env_file=None,
            data_dir=data_dir,
            bootstrap_admin_email=admin_email,
            bootstrap_admin_password=admin_password,
        )
        await asyncio.to_thread(bootstrap_admin, settings, url)
        world = await seed(url, opts.users)
        cluster.add_gpu_nodes(a100_nodes(opts.nodes, opts.cards))
        cluster.add_volumes(opts.users + 20)
        cluster.install_crd()
        cluster.create_namespace(NAMESPACE)

        ports = [free_port(), free_port()]
        bases = [f"http://127.0.0.1:{p}" for p in ports]
        apis = [
            Process(
                f"api-{n}",
                [sys.executable, "-m", "gshare", "api"],
                python_env(url, data_dir, GSHARE_PORT=str(port)),
                folder / f"api-{n}.log",
                ready_url=f"{bases[n]}/readyz",
            )
            for n, port in enumerate(ports)
        ]
        workers = [
            Process(
                f"worker-{n}",
                [sys.executable, "-m", "gshare", "worker"],
                python_env(url, data_dir),
                folder / f"worker-{n}.log",
            )
            for n in range(2)
        ]
        for p in apis + workers:
            p.start()
        for p in apis:
            await p.ready()
        cluster_id = await asyncio.to_thread(
            register_demo_cluster,
            url,
            settings,
            cluster.server,
            cluster.embedded_kubeconfig(),
            "sessions.localhost",
        )
        now = datetime.now(UTC)
        keys = await load_or_create(key_store_for(settings), now)
        token_file = folder / "operator-token"
        token_file.write_text(keys.mint(str(cluster_id), now))
        operator_env = {k: v for k, v in os.environ.items() if not k.startswith("GSHARE_")}
        operator_env |= {
            "KUBECONFIG": str(cluster.kubeconfig),
            "GSHARE_OPERATOR_API_URL": bases[0],
            "GSHARE_OPERATOR_CLUSTER_ID": str(cluster_id),
            "GSHARE_OPERATOR_TOKEN_FILE": str(token_file),
            "GSHARE_OPERATOR_NAMESPACE": NAMESPACE,
            "GSHARE_SESSIONS_DOMAIN": "sessions.localhost",
            "GSHARE_SESSION_AUTH_URL": f"{bases[0]}/internal/v1/session-access",
        }
        operator = Process(
            "operator",
            [sys.executable, "-m", "gshare", "operator"],
            operator_env,
            folder / "operator.log",
        )
        operator.start()
        everything = [*apis, *workers, operator]
        watcher = Watcher(url)
        async with watcher.engine.connect() as conn:
            wanted = opts.nodes * opts.cards
            deadline = time.monotonic() + 120
            while (
                await conn.scalar(text("SELECT count(*) FROM gpu_cards WHERE NOT missing"))
            ) < wanted:
                if time.monotonic() > deadline:
                    raise SystemExit("the operator never reported the inventory")
                await asyncio.sleep(0.5)
                await conn.rollback()

        async with httpx.AsyncClient(base_url=bases[0]) as client:
            login = await client.post(
                "/api/v1/auth/login", json={"email": admin_email, "password": admin_password}
            )
            login.raise_for_status()
            admin_cookies = login.cookies
            catalog = await client.get("/api/v1/catalog")
        world.image_id = next(
            i["id"] for i in catalog.json()["items"] if i["session_type"] == "terminal"
        )

        users = [
            User(email, n % GROUPS, bases, world, random.Random(rng.random()))
            for n, email in enumerate(world.emails)
        ]
        signing = Tally()
        for start in range(0, len(users), 20):
            await asyncio.gather(*(u.sign_in(signing) for u in users[start : start + 20]))
        print(
            f"{len(users)} users, {opts.nodes * opts.cards} cards, {opts.actions} actions each "
            f"(think {opts.think}s); logs in {folder}",
            flush=True,
        )

        kinds = ["api", "worker", "operator"] * (1 if opts.quick else 2) + ["postgres"]
        rng.shuffle(kinds)
        spots = sorted(rng.uniform(0.05, 0.85) for _ in kinds)

        # Round 1: no faults, measured at the same moments.
        probes = [Fault("none", at) for at in spots]
        quiet_s, quiet_tally = await round_with(
            users, opts.actions, opts.think, probes, watcher, None
        )
        print(f"  no faults: {quiet_tally.actions} actions in {quiet_s:.0f}s", flush=True)
        found = await settle_and_check(
            "no faults", users, watcher, url, cluster, bases[0], admin_cookies, opts.quiet
        )

        # Round 2: faults at random moments.
        faults = [Fault(kind, at) for kind, at in zip(kinds, spots, strict=True)]
        processes = {"api": apis, "worker": workers, "operator": [operator]}

        async def strike(fault: Fault) -> None:
            if fault.kind == "postgres":
                await asyncio.to_thread(server.crash_restart)
            else:
                victim = rng.choice(processes[fault.kind])
                victim.kill()
                victim.start()
                await victim.ready()
            print(f"  {fault.kind} down for {time.monotonic() - fault.killed_at:.1f}s", flush=True)

        faulty_s, tally = await round_with(users, opts.actions, opts.think, faults, watcher, strike)
        print(f"  faults: {tally.actions} actions in {faulty_s:.0f}s", flush=True)
        found += await settle_and_check(
            "faults", users, watcher, url, cluster, bases[0], admin_cookies, opts.quiet
        )

        # Round 3: the scheduling features churning under the users.
        async with httpx.AsyncClient(base_url=bases[0]) as client:
            login = await client.post(
                "/api/v1/auth/login", json={"email": admin_email, "password": admin_password}
            )
            login.raise_for_status()
        admin = Admin(bases[0], login.cookies, login.json()["csrf_token"], rng)
        nodes = [n.name for n in a100_nodes(opts.nodes, opts.cards)]
        churn = await round_of_scheduling(
            users, admin, world, str(cluster_id), nodes, opts.scheduling * 60, opts.think
        )
        print(
            f"  scheduling: {churn.actions} actions in {opts.scheduling:g} min, answers "
            f"{dict(sorted(churn.answers.items()))}; the admin's: "
            f"{dict(sorted(admin.done.items()))}",
            flush=True,
        )
        found += await settle_and_check(
            "scheduling", users, watcher, url, cluster, bases[0], admin_cookies, opts.quiet
        )
        await watcher.engine.dispose()

        quiet_rate = quiet_tally.actions / quiet_s
        faulty_rate = tally.actions / faulty_s
        ratio = faulty_rate / quiet_rate
        converged = [f.converged_s for f in faults]
        baseline = [p.converged_s for p in probes]
        windows = [(f.killed_at, f.back_at + FAULT_WINDOW_AFTER_READY_S) for f in faults]

        def in_window(at: float) -> bool:
            return any(start <= at <= end for start, end in windows)

        inside = Counter(kind for at, kind in tally.failures if in_window(at))
        outside = Counter(kind for at, kind in tally.failures if not in_window(at))
        outside += Counter(kind for _, kind in quiet_tally.failures)
        print("\nfaults (and the same moment of the round without faults):")
        for f, probe in zip(faults, probes, strict=True):
            print(
                f"  {f.kind:9} at {f.at_progress:4.0%} of the actions: down "
                f"{f.back_at - f.killed_at:5.1f}s, every waiting session moved on after "
                f"{f.converged_s:5.1f}s (without the fault {probe.converged_s:5.1f}s); "
                f"last: {f.last or '-'}"
            )
        print(f"invariant violations: {len(found)} (goal 0)")
        print(
            f"actions per second: {quiet_rate:.1f} with no faults, {faulty_rate:.1f} with faults; "
            f"ratio {ratio:.2f} (goal >= 0.7)"
        )
        print(
            f"convergence after a fault: p50 {statistics.median(converged):.1f}s, "
            f"p99 {percentile(converged, 0.99):.1f}s (goal p99 <= 30s); at the same moments "
            f"without faults: p50 {statistics.median(baseline):.1f}s, "
            f"p99 {percentile(baseline, 0.99):.1f}s"
        )
        print(
            f"answers: {dict(sorted((quiet_tally.answers + tally.answers).items()))}; "
            f"during faults 5xx {inside['5xx']}, lost {inside['lost']}; "
            f"outside them 5xx {outside['5xx']}, lost {outside['lost']}"
        )
        check_goal(not found, "no invariant violations", quick=opts.quick)
        check_goal(ratio >= 0.7, "actions per second with faults >= 0.7x", quick=opts.quick)
        check_goal(percentile(converged, 0.99) <= 30, "convergence p99 <= 30s", quick=opts.quick)
        check_goal(outside["5xx"] == 0, "no 5xx outside the fault windows", quick=opts.quick)
        check_goal(
            churn.failures == [], "no 5xx or lost answer while scheduling churns", quick=opts.quick
        )
        if opts.quick and found:
            return 1  # even a tiny run must keep the invariants
        return 0
    finally:
        for p in everything:
            p.stop()
        cluster.stop()
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--actions", type=int, default=30, help="actions per user per round")
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--cards", type=int, default=8, help="cards per node")
    parser.add_argument("--think", type=float, default=1.5, help="mean think time, seconds")
    parser.add_argument("--quiet", type=float, default=90, help="longest wait to settle, s")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--scheduling", type=float, default=10, help="minutes of drains and bookings churning"
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes, goals not checked")
    opts = parser.parse_args()
    if opts.quick:
        opts.users, opts.actions, opts.nodes, opts.cards, opts.think = 6, 8, 1, 2, 0.3
        opts.scheduling = 0.25
    folder = Path(tempfile.mkdtemp(prefix="gshare-soak-"))
    raise SystemExit(asyncio.run(soak(opts, folder)))


if __name__ == "__main__":
    main()
