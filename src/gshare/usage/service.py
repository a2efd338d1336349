"""The usage rollup's tick (a batch of allocations per transaction) and the reports read from
what it wrote. Nothing here commits."""

from __future__ import annotations

import asyncio
import csv
import io
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal

from sqlalchemy import Select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.capacity import service as capacity
from gshare.credits.amounts import format_amount
from gshare.identity.authz import Context, require
from gshare.identity.permissions import Action
from gshare.kit.errors import NotFound, TooManyRequests, Unprocessable
from gshare.kit.settings import Settings
from gshare.sessions import usage as session_usage
from gshare.usage import repository
from gshare.usage import sizing as sizing_rules
from gshare.usage.models import NO_CLUSTER
from gshare.usage.rollup import Mark, Piece, Span, roll

ROLLUP_BATCH = 500
# How far behind now the rollup stays: samples reported late (the operator reports every 30 s)
# have arrived by then, and what it counts it never counts again.
SETTLE = timedelta(minutes=2)
_FIRST = uuid.UUID(int=0)


def target_of(row: Any, now: datetime) -> datetime:
    """How far an allocation can be counted now: not past its release, nor the settling delay,
    and while it is billed, not past what metering has captured (so that each hour's credits
    are those of that hour)."""
    target = now - SETTLE
    released: datetime | None = row.released_at
    if released is not None:
        return min(target, released)
    if row.hold_id is not None:
        metered: datetime | None = row.metered_until
        # None: its session moved on to another hold meanwhile; counted once it is released.
        target = min(target, metered if metered is not None else row.rolled_until)
    return target


async def roll_batch(
    db: AsyncSession, now: datetime, settings: Settings, after: uuid.UUID = _FIRST
) -> uuid.UUID | None:
    """Count one batch of GPU allocations forward; returns where the next batch starts (None:
    this was the last). The hour and day rows and the allocations' marks change together."""
    rows = await repository.unrolled(db, after, ROLLUP_BATCH)
    if not rows:
        return None
    targets = {row.id: target_of(row, now) for row in rows}
    moving = [row for row in rows if targets[row.id] > row.rolled_until]
    samples = await session_usage.samples_in(
        db,
        [
            (row.session_id, row.rolled_sample_at or row.admitted_at, targets[row.id])
            for row in moving
        ],
    )
    hours: list[dict[str, Any]] = []
    days: dict[tuple[Any, ...], dict[str, Any]] = {}
    months: dict[tuple[Any, ...], dict[str, Any]] = {}
    marks = []
    for row in moving:
        span = Span(
            admitted_at=row.admitted_at,
            price_per_hour=row.price_per_hour,
            share=row.compute_percent / 100,
            captured=row.captured if row.hold_id is not None else None,
            mark=Mark(row.rolled_until, row.rolled_credits, row.rolled_sample_at),
            target=targets[row.id],
        )
        pieces, mark = roll(span, samples.get(row.session_id, []), settings.idle_threshold_percent)
        marks.append((row.id, mark.until, mark.credits, mark.sample_at))
        for piece in pieces:
            hours.append(_hour_row(row, piece))
            day = piece.hour.date()
            _add_to(days, "day", day, row, piece)
            _add_to(months, "month", day.replace(day=1), row, piece)
    await repository.add_hours(db, hours)
    await repository.add_days(db, _in_key_order(days))
    await repository.add_months(db, _in_key_order(months))
    await repository.store_marks(db, marks)
    return rows[-1].id if len(rows) == ROLLUP_BATCH else None


def _figures(piece: Piece) -> dict[str, Any]:
    return {
        "held_seconds": piece.held_seconds,
        "gpu_seconds": piece.gpu_seconds,
        "idle_gpu_seconds": piece.idle_gpu_seconds,
        "measured_seconds": piece.measured_seconds,
        "credits": piece.credits,
        "vram_peak_mib": piece.vram_peak_mib,
    }


def _hour_row(row: Any, piece: Piece) -> dict[str, Any]:
    return {
        "allocation_id": row.id,
        "hour": piece.hour,
        "session_id": row.session_id,
        "user_id": row.user_id,
        "group_id": row.group_id,
        "org_id": row.org_id,
        "cluster_id": row.cluster_id,
        "model": row.model,
        "tier": row.tier,
        "vram_limit_mib": row.vram_mib,
        **_figures(piece),
        "vram_mib_seconds": piece.vram_mib_seconds,
    }


def _add_to(
    sums: dict[tuple[Any, ...], dict[str, Any]], column: str, when: date, row: Any, piece: Piece
) -> None:
    """Add the piece to the day's (or month's) row of its user, group, model, tier and
    cluster; `column` names the date."""
    key = (when, row.user_id, row.group_id, row.model, row.tier, row.cluster_id or NO_CLUSTER)
    found = sums.get(key)
    if found is None:
        sums[key] = {
            column: when,
            "user_id": row.user_id,
            "group_id": row.group_id,
            "model": row.model,
            "tier": row.tier,
            "cluster_id": row.cluster_id or NO_CLUSTER,
            "org_id": row.org_id,
            **_figures(piece),
        }
        return
    for name, value in _figures(piece).items():
        if name == "vram_peak_mib":
            if value is not None and (found[name] is None or value > found[name]):
                found[name] = value
        else:
            found[name] += value


def _in_key_order(sums: dict[tuple[Any, ...], dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows in key order: two workers adding to the same rows lock them in one order."""
    return [sums[k] for k in sorted(sums, key=lambda k: tuple(map(str, k)))]


# ---- reports -------------------------------------------------------------------------------

Grouping = Literal["user", "group", "organization", "model", "tier", "cluster", "none"]
Period = Literal["day", "week", "month", "none"]
# The longest period one report covers, and the most (key, period) rows one answers with: a
# longer answer is the CSV export's.
LONGEST_REPORT = timedelta(days=732)
MOST_REPORT_ROWS = 20_000


@dataclass(frozen=True)
class UsageQuery:
    since: date | None = None
    until: date | None = None
    by: Grouping = "group"
    every: Period = "none"
    filters: repository.Filters = field(default_factory=repository.Filters)


@dataclass(frozen=True)
class Figures:
    held_seconds: float
    gpu_seconds: float
    idle_gpu_seconds: float
    measured_seconds: float
    credits: int
    vram_peak_mib: int | None

    @classmethod
    def of(cls, row: Any) -> Figures:
        return cls(
            float(row.held_seconds or 0),
            float(row.gpu_seconds or 0),
            float(row.idle_gpu_seconds or 0),
            float(row.measured_seconds or 0),
            int(row.credits or 0),
            row.vram_peak_mib,
        )

    def __add__(self, other: Figures) -> Figures:
        peaks = [p for p in (self.vram_peak_mib, other.vram_peak_mib) if p is not None]
        return Figures(
            self.held_seconds + other.held_seconds,
            self.gpu_seconds + other.gpu_seconds,
            self.idle_gpu_seconds + other.idle_gpu_seconds,
            self.measured_seconds + other.measured_seconds,
            self.credits + other.credits,
            max(peaks, default=None),
        )


NOTHING = Figures(0.0, 0.0, 0.0, 0.0, 0, None)


@dataclass(frozen=True)
class ReportRow:
    key: str | None
    name: str | None
    totals: Figures
    series: list[tuple[date, Figures]]


@dataclass(frozen=True)
class Report:
    since: date
    until: date
    by: Grouping
    every: Period
    totals: Figures
    rows: list[ReportRow]


def reach(ctx: Context) -> repository.Visible:
    """What the caller may read: a super admin everything; anyone else their own use, and that
    of the organizations and groups they administer."""
    actor = ctx.actor
    if actor.is_super_admin:
        return repository.Visible(everything=True)
    return repository.Visible(
        org_ids=frozenset(actor.org_admin_of),
        group_ids=frozenset(actor.group_admin_of),
        user_id=actor.user_id,
    )


def _period_of(ctx: Context, q: UsageQuery) -> tuple[date, date]:
    today = ctx.now.astimezone(UTC).date()
    since = q.since or today.replace(day=1)
    until = q.until or max(today, since)
    if since > until:
        raise Unprocessable("The period ends before it starts.", code="period_reversed")
    if until - since > LONGEST_REPORT:
        raise Unprocessable(
            "A report covers at most two years; export a longer period in parts.",
            code="period_too_long",
        )
    return since, until


def _query(ctx: Context, q: UsageQuery) -> tuple[date, date, Select[Any]]:
    require(ctx, Action.USAGE_READ, target_type="usage")
    since, until = _period_of(ctx, q)
    query = repository.report_query(
        since=since, until=until, by=q.by, every=q.every, visible=reach(ctx), filters=q.filters
    )
    return since, until, query


async def report(ctx: Context, q: UsageQuery) -> Report:
    """Totals over the period per key of `q.by`, each with its series per `q.every`."""
    since, until, query = _query(ctx, q)
    found = await repository.report(ctx.db, query.limit(MOST_REPORT_ROWS + 1))
    if len(found) > MOST_REPORT_ROWS:
        raise Unprocessable(
            f"The report would have more than {MOST_REPORT_ROWS:,} rows: narrow it, group it "
            "by a longer period, or export it as CSV.",
            code="report_too_large",
        )
    rows: dict[str | None, ReportRow] = {}
    for row in found:
        figures = Figures.of(row)
        current = rows.get(row.key)
        if current is None:
            current = rows[row.key] = ReportRow(row.key, row.name, NOTHING, [])
        rows[row.key] = ReportRow(row.key, row.name, current.totals + figures, current.series)
        if row.period is not None:
            current.series.append((row.period, figures))
    totals = sum((r.totals for r in rows.values()), NOTHING)
    return Report(since, until, q.by, q.every, totals, list(rows.values()))


CSV_COLUMNS = (
    "period_start",
    "key",
    "name",
    "gpu_hours",
    "idle_gpu_hours",
    "session_hours",
    "measured_hours",
    "credits",
    "vram_peak_mib",
)


def _csv_line(values: Sequence[object]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(values)
    return out.getvalue()


def _csv_values(row: Any) -> list[object]:
    f = Figures.of(row)
    return [
        "" if row.period is None else row.period.isoformat(),
        _spreadsheet_safe(row.key or ""),  # a model's name, as its cluster reported it
        _spreadsheet_safe(row.name or ""),
        f"{f.gpu_seconds / 3600:.6f}",
        f"{f.idle_gpu_seconds / 3600:.6f}",
        f"{f.held_seconds / 3600:.6f}",
        f"{f.measured_seconds / 3600:.6f}",
        format_amount(f.credits),
        "" if f.vram_peak_mib is None else f.vram_peak_mib,
    ]


def _spreadsheet_safe(text: str) -> str:
    """A name a tenant typed, so that a spreadsheet opening the file shows it rather than
    running it as a formula."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


# Exports streaming at once in this process, each holding a database connection; lines sent
# at a time; how long a client may stop reading before its export is ended.
EXPORTS_AT_ONCE = 4
EXPORT_CHUNK = 1000
_exports = asyncio.Semaphore(EXPORTS_AT_ONCE)


def export_query(ctx: Context, q: UsageQuery) -> Select[Any]:
    """The report's query for a CSV export, checked for the caller now (the export streams
    after the request's transaction has ended). Refused while this process streams as many
    exports as it allows: each holds a database connection."""
    query = _query(ctx, q)[2]
    if _exports.locked():
        raise TooManyRequests(
            "Other exports are running; try again in a minute.",
            code="exports_busy",
            retry_after=30,
        )
    return query


async def export_lines(
    sessions: async_sessionmaker[AsyncSession], query: Select[Any], settings: Settings
) -> AsyncIterator[str]:
    """The CSV of `query`: a header, then a line per row, read from a server-side cursor in
    a transaction of its own, so that memory stays flat however many rows there are."""
    async with _exports:
        yield _csv_line(CSV_COLUMNS)
        async with sessions() as db, db.begin():
            # A client that stops reading must not hold the connection, nor an old snapshot,
            # for long: the server ends the transaction once it waits that long for a fetch.
            stall = timedelta(seconds=settings.usage_export_stall_seconds)
            await repository.end_idle_transaction_after(db, stall)
            result = await repository.stream_report(db, query)
            lines: list[str] = []
            async for row in result:
                lines.append(_csv_line(_csv_values(row)))
                if len(lines) == EXPORT_CHUNK:
                    yield "".join(lines)
                    lines = []
            if lines:
                yield "".join(lines)


MOST_IDLE = 20
# The longest period the idle list covers: it reads hours, not days.
LONGEST_IDLE_LIST = timedelta(days=93)


async def most_idle(ctx: Context, since: date | None, until: date | None) -> list[Any]:
    """The sessions that idled most over the period (UTC days, inclusive), as the caller may
    see them."""
    require(ctx, Action.USAGE_READ, target_type="usage")
    first, last = _period_of(ctx, UsageQuery(since, until))
    if last - first >= LONGEST_IDLE_LIST:
        raise Unprocessable(
            f"The sessions that idled most are listed for at most {LONGEST_IDLE_LIST.days} days "
            "at a time.",
            code="period_too_long",
        )
    start = datetime.combine(first, time.min, UTC)
    end = datetime.combine(last, time.max, UTC)  # not the next day: 9999-12-31 has none
    query = repository.most_idle_query(start, end, reach(ctx), MOST_IDLE)
    return await repository.report(ctx.db, query)


# ---- right-sizing --------------------------------------------------------------------------


async def sizing(ctx: Context, image: str, tier_id: uuid.UUID) -> sizing_rules.Sizing:
    """What the caller's own recent sessions of `image` on the tier say about its size, among
    the tiers they may choose."""
    require(ctx, Action.USAGE_READ, target_type="usage")
    usable = await capacity.usable_tiers(ctx, None)
    chosen = await capacity.tiers_by_id(ctx.db, [tier_id])
    if tier_id not in chosen:
        raise NotFound("No such tier.", code="tier_not_found")
    names = await capacity.model_names(ctx.db)
    tier = chosen[tier_id]

    def choice(t: Any) -> sizing_rules.TierChoice:
        return sizing_rules.TierChoice(t.id, names[t.model_id], t.name, t.vram_mib, t.price)

    current = choice(tier)
    rows = await repository.recent_peaks(
        ctx.db, ctx.actor.user_id, image, current.model, current.name, sizing_rules.LOOKED_AT
    )
    peaks = [sizing_rules.Peak(r.peak_mib, r.limit_mib) for r in rows]
    return sizing_rules.advise(peaks, current, [choice(t) for t, _ in usable])
