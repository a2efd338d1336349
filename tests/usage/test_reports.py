"""Usage reports through the API: sums per key and period, each caller reading only their own
use and what they administer, the CSV export the same figures, and bad input a clear 422."""

from __future__ import annotations

import csv
import io
import uuid
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

from gshare.credits.amounts import MICRO
from gshare.identity.models import Group, Organization, User
from gshare.usage.models import NO_CLUSTER, UsageDay
from tests.builders import PASSWORD, Builder
from tests.eventually import eventually
from tests.processes import start_api, stop
from tests.usage.builders import months_of

USAGE = "/api/v1/usage"
DAY = date(2026, 11, 2)  # a Monday


def _day(day: date, user: User, group: Group, org: Organization, **figures: Any) -> UsageDay:
    hours = figures.pop("hours", 1.0)
    return UsageDay(
        day=day,
        user_id=user.id,
        group_id=group.id,
        org_id=org.id,
        model=figures.pop("model", "A100-80GB"),
        tier=figures.pop("tier", "1/4"),
        cluster_id=NO_CLUSTER,
        held_seconds=hours * 3600 * 4,
        gpu_seconds=hours * 3600,
        idle_gpu_seconds=figures.pop("idle", 0.0) * 3600,
        measured_seconds=hours * 3600 * 4,
        credits=figures.pop("credits", 1) * MICRO,
        vram_peak_mib=figures.pop("peak", 1000),
    )


class Tenants:
    """Two organizations; A has groups A1 and A2; a member, an admin of A1, an admin of A, and
    a super admin; each member used a known amount."""

    def __init__(self, build: Builder) -> None:
        self.build = build

    async def make(self) -> Tenants:
        b = self.build
        self.org_a, self.org_b = await b.org("Org A"), await b.org("=cmd|' /C calc'!A0")
        self.a1, self.a2 = await b.group(self.org_a, "A1"), await b.group(self.org_a, "A2")
        self.b1 = await b.group(self.org_b, "B1")
        self.alice, self.bob, self.carol = [await b.user(n) for n in ("Alice", "Bob", "Carol")]
        for user, group in ((self.alice, self.a1), (self.bob, self.a2), (self.carol, self.b1)):
            await b.member(user, group)
        self.a1_admin, self.a_admin, self.root = (
            await b.user("A1 Admin"),
            await b.user("A Admin"),
            await b.user("Root", super_admin=True),
        )
        await b.group_admin(self.a1_admin, self.a1)
        await b.org_admin(self.a_admin, self.org_a)
        rows = []
        for n in range(10):  # ten days from Monday 2 November: two weeks
            day = DAY + timedelta(days=n)
            rows += [
                _day(day, self.alice, self.a1, self.org_a, hours=1.0, idle=0.25, credits=2),
                _day(day, self.bob, self.a2, self.org_a, hours=2.0, credits=3, tier="1/2"),
                _day(day, self.carol, self.b1, self.org_b, hours=4.0, credits=5, peak=70_000),
            ]
        async with b.sessions() as db, db.begin():
            db.add_all([*rows, *months_of(rows)])
        return self

    async def client(self, user: User) -> httpx.AsyncClient:
        return await self.build.signed_in(user)


async def _get(client: httpx.AsyncClient, **params: Any) -> dict[str, Any]:
    params = {"since": "2026-11-01", "until": "2026-11-30", **params}
    response = await client.get(USAGE, params=params)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def test_each_caller_reads_their_own_and_what_they_administer(build: Builder) -> None:
    t = await Tenants(build).make()
    seen = {}
    for who in (t.alice, t.bob, t.a1_admin, t.a_admin, t.root):
        report = await _get(await t.client(who), by="user")
        seen[who.name] = {row["name"]: row["totals"]["gpu_hours"] for row in report["rows"]}
    assert seen["Alice"] == {t.alice.email: 10.0}
    assert seen["Bob"] == {t.bob.email: 20.0}
    assert seen["A1 Admin"] == {t.alice.email: 10.0}
    assert seen["A Admin"] == {t.alice.email: 10.0, t.bob.email: 20.0}
    assert seen["Root"] == {t.alice.email: 10.0, t.bob.email: 20.0, t.carol.email: 40.0}


async def test_filters_narrow_and_never_widen(build: Builder) -> None:
    t = await Tenants(build).make()
    alice = await t.client(t.alice)
    for params in (
        {"group_id": str(t.b1.id)},
        {"org_id": str(t.org_b.id)},
        {"user_id": str(t.carol.id)},
        {"group_id": str(uuid.uuid4())},
    ):
        report = await _get(alice, **params)
        assert report["rows"] == [], params
        assert report["totals"]["gpu_hours"] == 0
        assert report["totals"]["idle_share"] is None
    a_admin = await t.client(t.a_admin)
    only_a2 = await _get(a_admin, group_id=str(t.a2.id), by="tier")
    assert [(r["key"], r["totals"]["credits"]) for r in only_a2["rows"]] == [
        ("A100-80GB 1/2", "30")
    ]


async def test_totals_and_series_per_week_month_and_day(build: Builder) -> None:
    t = await Tenants(build).make()
    root = await t.client(t.root)
    weekly = await _get(root, by="organization", every="week")
    by_name = {r["name"]: r for r in weekly["rows"]}
    a = by_name["Org A"]
    assert a["key"] == str(t.org_a.id)
    assert [p["period_start"] for p in a["series"]] == ["2026-11-02", "2026-11-09"]
    assert [p["gpu_hours"] for p in a["series"]] == [21.0, 9.0]  # 7 days, then 3, of 3 h
    assert a["totals"]["credits"] == "50"
    assert a["totals"]["idle_gpu_hours"] == 2.5
    assert round(a["totals"]["idle_share"], 6) == round(2.5 / 30, 6)
    assert weekly["totals"]["credits"] == "100"
    assert weekly["totals"]["vram_peak_mib"] == 70_000
    monthly = await _get(root, by="none", every="month")
    (row,) = monthly["rows"]
    assert row["key"] is None
    assert [p["period_start"] for p in row["series"]] == ["2026-11-01"]
    daily = await _get(root, by="model", every="day", since="2026-11-03", until="2026-11-04")
    (model,) = daily["rows"]
    assert model["key"] == "A100-80GB"
    assert len(model["series"]) == 2
    assert model["totals"]["gpu_hours"] == 14.0


async def test_the_csv_export_has_the_reports_figures_and_harmless_names(build: Builder) -> None:
    t = await Tenants(build).make()
    root = await t.client(t.root)
    response = await root.get(
        f"{USAGE}.csv",
        params={
            "since": "2026-11-01",
            "until": "2026-11-30",
            "by": "organization",
            "every": "month",
        },
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    assert "attachment" in response.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert list(rows[0]) == [
        "period_start",
        "key",
        "name",
        "gpu_hours",
        "idle_gpu_hours",
        "session_hours",
        "measured_hours",
        "credits",
        "vram_peak_mib",
    ]
    by_key = {r["key"]: r for r in rows}
    assert by_key[str(t.org_a.id)]["credits"] == "50"
    assert float(by_key[str(t.org_a.id)]["gpu_hours"]) == 30.0
    # A name that a spreadsheet would run as a formula is shown as text.
    assert by_key[str(t.org_b.id)]["name"] == "'=cmd|' /C calc'!A0"
    alice = await t.client(t.alice)
    own = await alice.get(f"{USAGE}.csv", params={"since": "2026-11-01", "until": "2026-11-30"})
    assert {r["key"] for r in csv.DictReader(io.StringIO(own.text))} == {str(t.alice.id)}


async def test_bad_input_is_a_clear_422_and_anonymous_callers_a_401(build: Builder) -> None:
    t = await Tenants(build).make()
    alice = await t.client(t.alice)
    for params, code in (
        ({"since": "2026-11-30", "until": "2026-11-01"}, "period_reversed"),
        ({"since": "2020-01-01", "until": "2026-11-01"}, "period_too_long"),
        ({"since": "0001-01-01", "until": "9999-12-31"}, "period_too_long"),
        ({"by": "wallet"}, "invalid_request"),
        ({"every": "year"}, "invalid_request"),
        ({"since": "2026-13-01"}, "invalid_request"),
        ({"since": "99999-01-01"}, "invalid_request"),
        ({"model": "A100\x00"}, "invalid_request"),
        ({"model": "x" * 121}, "invalid_request"),
        ({"group_id": "not-a-uuid"}, "invalid_request"),
    ):
        for path in (USAGE, f"{USAGE}.csv"):
            response = await alice.get(path, params=params)
            assert response.status_code == 422, (path, params, response.text)
            assert response.json()["error"]["code"] == code, (path, params)
    far = await _get(alice, since="9999-01-01", until="9999-12-31", every="week")
    assert far["rows"] == []
    for path in (USAGE, f"{USAGE}.csv"):
        assert (await build.anonymous().get(path)).status_code == 401


def _hour(user: User, group: Group, org: Organization, idle_hours: float, name: str) -> Any:
    from datetime import UTC, datetime

    from gshare.usage.models import UsageHour

    return UsageHour(
        allocation_id=uuid.uuid4(),
        hour=datetime(2026, 11, 3, 10, tzinfo=UTC),
        session_id=uuid.uuid4(),
        user_id=user.id,
        group_id=group.id,
        org_id=org.id,
        cluster_id=None,
        model="A100-80GB",
        tier="1/2",
        vram_limit_mib=40960,
        held_seconds=3600,
        gpu_seconds=1800,
        idle_gpu_seconds=idle_hours * 3600,
        measured_seconds=3600,
        credits=4 * MICRO,
        vram_peak_mib=9000,
        vram_mib_seconds=0.0,
    )


async def test_the_most_idle_sessions_are_those_the_caller_may_see(build: Builder) -> None:
    t = await Tenants(build).make()
    async with build.sessions() as db, db.begin():
        db.add_all(
            [
                _hour(t.alice, t.a1, t.org_a, 0.25, "a"),
                _hour(t.bob, t.a2, t.org_a, 0.5, "b"),
                _hour(t.carol, t.b1, t.org_b, 0.75, "c"),
                _hour(t.carol, t.b1, t.org_b, 0.0, "never idle"),
            ]
        )

    async def idle(who: User, **params: str) -> list[tuple[str, float]]:
        client = await t.client(who)
        params = {"since": "2026-11-01", "until": "2026-11-30", **params}
        response = await client.get(f"{USAGE}/idle-sessions", params=params)
        assert response.status_code == 200, response.text
        items = response.json()["items"]
        return [(i["owner_email"], i["idle_gpu_hours"]) for i in items]

    assert await idle(t.root) == [(t.carol.email, 0.75), (t.bob.email, 0.5), (t.alice.email, 0.25)]
    assert await idle(t.a_admin) == [(t.bob.email, 0.5), (t.alice.email, 0.25)]
    assert await idle(t.a1_admin) == [(t.alice.email, 0.25)]
    assert await idle(t.bob) == [(t.bob.email, 0.5)]
    assert await idle(t.root, since="2026-11-04") == []
    assert await idle(t.root, since="9999-12-01", until="9999-12-31") == []
    reversed_period = await (await t.client(t.bob)).get(
        f"{USAGE}/idle-sessions", params={"since": "2026-11-30", "until": "2026-11-01"}
    )
    assert reversed_period.status_code == 422


async def test_a_model_named_like_a_formula_is_text_in_the_csv(build: Builder) -> None:
    t = await Tenants(build).make()
    async with build.sessions() as db, db.begin():
        formula = _day(DAY, t.alice, t.a1, t.org_a, model='=HYPERLINK("http://x","y")')
        db.add_all([formula, *months_of([formula])])
    root = await t.client(t.root)
    for by in ("model", "tier"):
        response = await root.get(
            f"{USAGE}.csv",
            params={"since": "2026-11-01", "until": "2026-11-30", "by": by, "every": "none"},
        )
        keys = [r["key"] for r in csv.DictReader(io.StringIO(response.text))]
        assert [k for k in keys if "HYPERLINK" in k] == [
            f'\'=HYPERLINK("http://x","y"){"" if by == "model" else " 1/4"}'
        ]
        assert all(not k.startswith(("=", "+", "-", "@")) for k in keys)


async def test_the_idle_list_covers_at_most_93_days(build: Builder) -> None:
    t = await Tenants(build).make()
    alice = await t.client(t.alice)
    fits = await alice.get(
        f"{USAGE}/idle-sessions", params={"since": "2026-08-20", "until": "2026-11-20"}
    )
    assert fits.status_code == 200
    too_long = await alice.get(
        f"{USAGE}/idle-sessions", params={"since": "2026-08-19", "until": "2026-11-20"}
    )
    assert too_long.status_code == 422
    assert too_long.json()["error"]["code"] == "period_too_long"


async def test_exports_beyond_what_the_process_streams_at_once_are_told_to_wait(
    build: Builder,
) -> None:
    from gshare.usage import service

    t = await Tenants(build).make()
    alice = await t.client(t.alice)
    for _ in range(service.EXPORTS_AT_ONCE):
        await service._exports.acquire()
    try:
        busy = await alice.get(f"{USAGE}.csv")
        assert busy.status_code == 429
        assert busy.json()["error"]["code"] == "exports_busy"
        assert int(busy.headers["retry-after"]) > 0
    finally:
        for _ in range(service.EXPORTS_AT_ONCE):
            service._exports.release()
    assert (await alice.get(f"{USAGE}.csv")).status_code == 200


async def test_an_export_whose_client_stops_reading_gives_its_connection_back(
    build: Builder, database_url: str, tmp_path: Path
) -> None:
    """Over real TCP: an export far larger than the sockets' buffers, whose client reads one
    line and stops, waits on the client with its transaction idle; the server ends it once it
    has waited longer than the stall setting, and the API goes on answering."""
    t = await Tenants(build).make()
    async with build.sessions() as db, db.begin():
        await db.execute(
            text(
                "INSERT INTO usage_days SELECT DATE '2026-11-01', gen_random_uuid(), :group, "
                "'A100-80GB', '1/4', :nil, :org, 3600, 900, 0, 3600, 1000000, 1 "
                "FROM generate_series(1, 120000)"
            ),
            {"group": t.a1.id, "org": t.org_a.id, "nil": NO_CLUSTER},
        )
    api, base = start_api(database_url, tmp_path / "data", GSHARE_USAGE_EXPORT_STALL_SECONDS="1")

    async def stalled() -> int:
        async with build.sessions() as db:
            found = await db.scalar(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND state = 'idle in transaction' AND backend_type = 'client backend'"
                )
            )
        return int(found or 0)

    async def ended() -> bool:
        return await stalled() == 0

    try:
        async with httpx.AsyncClient(base_url=base, timeout=30) as root:
            signed = await root.post(
                "/api/v1/auth/login", json={"email": t.root.email, "password": PASSWORD}
            )
            assert signed.status_code == 200, signed.text
            params = {"since": "2026-11-01", "until": "2026-11-01", "by": "user"}
            async with root.stream("GET", f"{USAGE}.csv", params=params) as response:
                assert response.status_code == 200
                lines = response.aiter_lines()
                assert (await anext(lines)).startswith("period_start,")
                await eventually(stalled, "the export to wait on its client", timeout=30)
                await eventually(ended, "the server to end the stalled export", timeout=30)
            # The API still answers, with its connections back.
            report = await root.get(USAGE, params={"since": "2026-11-01", "until": "2026-11-30"})
            assert report.status_code == 200
    finally:
        stop(api)


def test_whole_months_are_found_at_any_edge_of_the_calendar() -> None:
    from gshare.usage.repository import whole_months

    assert whole_months(date(2026, 11, 1), date(2026, 11, 30)) == (
        date(2026, 11, 1),
        date(2026, 11, 1),
    )
    assert whole_months(date(2026, 11, 2), date(2026, 11, 30)) is None
    assert whole_months(date(2025, 12, 4), date(2026, 12, 3)) == (
        date(2026, 1, 1),
        date(2026, 11, 1),
    )
    assert whole_months(date(2026, 2, 1), date(2026, 2, 28)) == (date(2026, 2, 1),) * 2
    assert whole_months(date(1, 1, 1), date(1, 1, 30)) is None
    assert whole_months(date(1, 1, 1), date(1, 1, 31)) == (date(1, 1, 1),) * 2
    assert whole_months(date(9999, 12, 2), date(9999, 12, 31)) is None
    assert whole_months(date(9999, 11, 1), date(9999, 12, 31)) == (
        date(9999, 11, 1),
        date(9999, 12, 1),
    )


async def test_a_report_over_whole_months_and_their_edges_adds_up_as_the_days_do(
    build: Builder,
) -> None:
    """From the 4th of a month to the 3rd two months later: the days of the first and last
    months, the whole month between; the totals and each month's figures are the days'."""
    t = await Tenants(build).make()
    dora = await build.user("Dora")
    await build.member(dora, t.a1)
    rows = [
        _day(date(2026, 9, 1) + timedelta(days=n), dora, t.a1, t.org_a, hours=1.0 + n % 3)
        for n in range(100)
    ]
    async with build.sessions() as db, db.begin():
        db.add_all([*rows, *months_of(rows)])
    client = await t.client(dora)
    params = {"since": "2026-09-04", "until": "2026-11-03", "by": "user", "every": "month"}
    report = await _get(client, **params)
    (row,) = report["rows"]
    days = [r for r in rows if date(2026, 9, 4) <= r.day <= date(2026, 11, 3)]
    assert row["totals"]["gpu_hours"] == sum(d.gpu_seconds for d in days) / 3600
    by_month = {p["period_start"]: p["gpu_hours"] for p in row["series"]}
    assert by_month == {
        f"2026-{m:02d}-01": sum(d.gpu_seconds for d in days if d.day.month == m) / 3600
        for m in (9, 10, 11)
    }
    daily = await _get(client, **{**params, "every": "day"})
    assert daily["totals"] == report["totals"]
    whole = await _get(client, since="2026-10-01", until="2026-10-31", by="none")
    assert whole["totals"]["credits"] == str(31)
