"""Queries of the usage domain: the allocations the rollup has yet to count, adding to the
hour and day rows, and the reports' sums."""

from __future__ import annotations

import typing
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import Date, Select, String, cast, func, literal, or_, select, text, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from gshare.clusters.models import Cluster
from gshare.identity.models import Group, Organization, User
from gshare.sessions.models import InteractiveSession
from gshare.usage.models import UsageDay, UsageHour, UsageMonth

# Each GPU allocation not yet counted to its end (the condition of the partial index
# `ix_gpu_allocations_unrolled`, written out for the alias), locked with others' skipped; with
# what its hold has captured and, while it is live, how far metering has billed it (its
# session's `metered_until` while the session still holds that hold). Keyed from `after`, so
# that live allocations, which are never done, do not fill every batch.
_UNROLLED = text(
    "SELECT a.id, coalesce(r.session_id, r.id) AS session_id, a.user_id, a.group_id, "
    "g.org_id, a.cluster_id, a.model, coalesce(a.tier_name, a.mig_profile, '') AS tier, "
    "a.vram_mib, a.compute_percent, "
    "a.price_per_hour, a.hold_id, a.admitted_at, a.released_at, "
    "coalesce(a.rolled_until, a.admitted_at) AS rolled_until, a.rolled_credits, "
    "a.rolled_sample_at, h.captured, s.metered_until "
    "FROM gpu_allocations AS a JOIN groups AS g ON g.id = a.group_id "
    "JOIN admission_requests AS r ON r.id = a.request_id "
    "LEFT JOIN credit_holds AS h ON h.id = a.hold_id "
    "LEFT JOIN sessions AS s ON s.id = r.session_id AND s.hold_id = a.hold_id "
    "WHERE a.id > :after AND a.model IS NOT NULL AND (a.released_at IS NULL "
    "OR a.rolled_until IS NULL OR a.rolled_until < a.released_at) "
    "ORDER BY a.id LIMIT :limit FOR UPDATE OF a SKIP LOCKED"
)


async def unrolled(db: AsyncSession, after: uuid.UUID, limit: int) -> list[Any]:
    """A batch of GPU allocations the rollup has not counted to their end, after `after`."""
    return list((await db.execute(_UNROLLED, {"after": after, "limit": limit})).all())


_MARKED = text(
    "UPDATE gpu_allocations AS a SET rolled_until = v.until, rolled_credits = v.credits, "
    "rolled_sample_at = v.sample_at "
    "FROM unnest(CAST(:ids AS uuid[]), CAST(:untils AS timestamptz[]), "
    "CAST(:credits AS bigint[]), CAST(:sample_ats AS timestamptz[])) "
    "AS v(id, until, credits, sample_at) WHERE a.id = v.id"
)


async def store_marks(
    db: AsyncSession, marks: Sequence[tuple[uuid.UUID, datetime, int, datetime | None]]
) -> None:
    if marks:
        ids, untils, credits, sample_ats = (list(x) for x in zip(*marks, strict=True))
        await db.execute(
            _MARKED, {"ids": ids, "untils": untils, "credits": credits, "sample_ats": sample_ats}
        )


_FIGURES = ("held_seconds", "gpu_seconds", "idle_gpu_seconds", "measured_seconds", "credits")


def _adding(table: str, key: Sequence[str], kept: Sequence[str], extra: Sequence[str]) -> str:
    """An upsert of rows given as arrays that adds their figures to a row already there and
    keeps the higher VRAM peak."""
    columns = [*key, *kept, *_FIGURES, "vram_peak_mib", *extra]
    types = {
        "hour": "timestamptz",
        "day": "date",
        "month": "date",
        "model": "text",
        "tier": "text",
        "vram_limit_mib": "int",
        "vram_peak_mib": "int",
        "credits": "bigint",
    }
    arrays = ", ".join(
        f"CAST(:{c} AS {types.get(c, 'uuid' if c.endswith('_id') else 'float8')}[])"
        for c in columns
    )
    added = [f"{c} = {table}.{c} + excluded.{c}" for c in (*_FIGURES, *extra)]
    peak = (
        f"vram_peak_mib = CASE WHEN {table}.vram_peak_mib IS NULL THEN excluded.vram_peak_mib "
        f"WHEN excluded.vram_peak_mib IS NULL THEN {table}.vram_peak_mib "
        f"ELSE greatest({table}.vram_peak_mib, excluded.vram_peak_mib) END"
    )
    # Names from this module only, never from a request.
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) SELECT * FROM unnest({arrays}) "  # noqa: S608
        f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {', '.join([*added, peak])}"
    )


_ADD_HOURS = text(
    _adding(
        "usage_hours",
        ("allocation_id", "hour"),
        (
            "session_id",
            "user_id",
            "group_id",
            "org_id",
            "cluster_id",
            "model",
            "tier",
            "vram_limit_mib",
        ),
        ("vram_mib_seconds",),
    )
)
_ADD_DAYS = text(
    _adding(
        "usage_days",
        ("day", "user_id", "group_id", "model", "tier", "cluster_id"),
        ("org_id",),
        (),
    )
)

_ADD_MONTHS = text(
    _adding(
        "usage_months",
        ("month", "user_id", "group_id", "model", "tier", "cluster_id"),
        ("org_id",),
        (),
    )
)


async def _add(db: AsyncSession, statement: Any, rows: Sequence[dict[str, Any]]) -> None:
    if rows:
        await db.execute(statement, {c: [r[c] for r in rows] for c in rows[0]})


async def add_hours(db: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    """Add to each (allocation, hour) row; at most one row per key."""
    await _add(db, _ADD_HOURS, rows)


async def add_days(db: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    """Add to each day row; at most one row per key, in key order (so that two workers adding
    to the same days lock them in the same order)."""
    await _add(db, _ADD_DAYS, rows)


async def add_months(db: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    """Add to each month row, as `add_days`."""
    await _add(db, _ADD_MONTHS, rows)


# ---- reports -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Visible:
    """The day rows a caller may read: every row, or those of these organizations, these
    groups, and their own."""

    everything: bool = False
    org_ids: frozenset[uuid.UUID] = frozenset()
    group_ids: frozenset[uuid.UUID] = frozenset()
    user_id: uuid.UUID | None = None


@dataclass(frozen=True)
class Filters:
    org_id: uuid.UUID | None = None
    group_id: uuid.UUID | None = None
    user_id: uuid.UUID | None = None
    model: str | None = None
    tier: str | None = None
    cluster_id: uuid.UUID | None = None


def _within(
    table: type[UsageDay] | type[UsageHour] | type[UsageMonth], visible: Visible
) -> list[Any]:
    """The condition that keeps a caller to the rows `visible` allows."""
    if visible.everything:
        return []
    reach = [table.user_id == visible.user_id]
    if visible.org_ids:
        reach.append(table.org_id.in_(sorted(visible.org_ids)))
    if visible.group_ids:
        reach.append(table.group_id.in_(sorted(visible.group_ids)))
    return [or_(*reach)]


# What each grouping adds up by, among a day or month row's key columns.
_KEY_COLUMNS = {
    "user": ("user_id",),
    "group": ("group_id",),
    "organization": ("org_id",),
    "cluster": ("cluster_id",),
    "model": ("model",),
    "tier": ("model", "tier"),
    "none": (),
}
_SUMMED = ("held_seconds", "gpu_seconds", "idle_gpu_seconds", "measured_seconds", "credits")


def whole_months(since: date, until: date) -> tuple[date, date] | None:
    """The first days of the first and the last whole month from `since` through `until`
    (None: the period holds none)."""
    first = since if since.day == 1 else _next_month(since)
    ends_a_month = until == date.max or (until + timedelta(days=1)).day == 1
    month = until.replace(day=1)
    last: date | None = month
    if not ends_a_month:
        last = None if month == date.min else (month - timedelta(days=1)).replace(day=1)
    if first is None or last is None or first > last:
        return None
    return first, last


def _next_month(day: date) -> date | None:
    """The first day of the month after `day`'s (None: past the calendar's end)."""
    start = day.replace(day=1)
    if start.year == date.max.year and start.month == 12:
        return None
    return (start + timedelta(days=32)).replace(day=1)


def _rows_of(
    table: type[UsageDay] | type[UsageMonth],
    when: Any,
    first: date,
    last: date,
    visible: Visible,
    filters: Filters,
) -> Select[Any]:
    """A table's rows from `first` through `last`, as the report reads them."""
    query = select(
        when.label("day"),
        table.user_id,
        table.group_id,
        table.org_id,
        table.cluster_id,
        table.model,
        table.tier,
        *[getattr(table, c) for c in _SUMMED],
        table.vram_peak_mib,
    ).where(when >= first, when <= last, *_within(table, visible))
    for column, value in (
        (table.org_id, filters.org_id),
        (table.group_id, filters.group_id),
        (table.user_id, filters.user_id),
        (table.model, filters.model),
        (table.tier, filters.tier),
        (table.cluster_id, filters.cluster_id),
    ):
        if value is not None:
            query = query.where(column == value)
    return query


def report_query(
    *, since: date, until: date, by: str, every: str, visible: Visible, filters: Filters
) -> Select[Any]:
    """Sums from `since` through `until`, per period (`every`) and key (`by`), ordered by key
    and period; only the rows `visible` allows, narrowed by `filters`. Totals and monthly
    series read the month rows for the whole months and the day rows for the rest. The rows
    are added up by the raw key first, and named after: naming (and sorting) millions of rows
    would cost far more than the sums."""
    parts: list[Select[Any]] = []
    months = whole_months(since, until) if every in ("month", "none") else None
    if months is None:
        parts.append(_rows_of(UsageDay, UsageDay.day, since, until, visible, filters))
    else:
        first, last = months
        parts.append(_rows_of(UsageMonth, UsageMonth.month, first, last, visible, filters))
        if since < first:
            before = first - timedelta(days=1)
            parts.append(_rows_of(UsageDay, UsageDay.day, since, before, visible, filters))
        after = _next_month(last)
        if after is not None and after <= until:
            parts.append(_rows_of(UsageDay, UsageDay.day, after, until, visible, filters))
    rows = (parts[0] if len(parts) == 1 else union_all(*parts)).subquery("rows")
    if every == "day":
        period: Any = rows.c.day
    elif every in ("week", "month"):
        period = cast(func.date_trunc(every, rows.c.day), Date)
    else:
        period = None
    keys = [rows.c[c] for c in _KEY_COLUMNS[by]]
    summed = select(
        *([period.label("period")] if period is not None else []),
        *keys,
        *[func.sum(rows.c[c]).label(c) for c in _SUMMED],
        func.max(rows.c.vram_peak_mib).label("vram_peak_mib"),
    )
    grouped = [*([period] if period is not None else []), *keys]
    if grouped:
        summed = summed.group_by(*grouped)
    sums = summed.subquery("sums")
    key, name, joined = _named(by, sums)
    query = select(
        (sums.c.period if period is not None else literal(None, Date)).label("period"),
        (key if key is not None else literal(None, String)).label("key"),
        (name if name is not None else literal(None, String)).label("name"),
        *[sums.c[c] for c in _SUMMED],
        sums.c.vram_peak_mib,
    ).select_from(sums)
    if joined is not None:
        query = query.outerjoin(*joined)
    order = [c for c in (key, sums.c.period if period is not None else None) if c is not None]
    return query.order_by(*order) if order else query


def _named(by: str, sums: Any) -> tuple[Any, Any, Any]:
    """The key as text, its display name, and the table joined for the name."""
    if by == "user":
        return cast(sums.c.user_id, String), User.email, (User, User.id == sums.c.user_id)
    if by == "group":
        return cast(sums.c.group_id, String), Group.name, (Group, Group.id == sums.c.group_id)
    if by == "organization":
        to_org = (Organization, Organization.id == sums.c.org_id)
        return cast(sums.c.org_id, String), Organization.name, to_org
    if by == "cluster":
        to_cluster = (Cluster, Cluster.id == sums.c.cluster_id)
        return cast(sums.c.cluster_id, String), Cluster.name, to_cluster
    if by == "model":
        return sums.c.model, sums.c.model, None
    if by == "tier":
        key = sums.c.model + literal(" ") + sums.c.tier
        return key, key, None
    return None, None, None


async def report(db: AsyncSession, query: Select[Any]) -> list[Any]:
    return list((await db.execute(query)).all())


async def end_idle_transaction_after(db: AsyncSession, after: timedelta) -> None:
    """Have the server end this transaction if it waits longer than `after` between
    statements (a streaming client that stopped reading)."""
    milliseconds = int(after.total_seconds() * 1000)
    await db.execute(text(f"SET LOCAL idle_in_transaction_session_timeout = {milliseconds}"))


def stream_report(db: AsyncSession, query: Select[Any]) -> Any:
    """The rows of `query` from a server-side cursor, a thousand at a time."""
    return db.stream(query.execution_options(yield_per=1000))


def most_idle_query(since: datetime, until: datetime, visible: Visible, limit: int) -> Select[Any]:
    """The sessions with the most idle GPU hours in the hours from `since` to `until`
    (inclusive), most first, with
    their owner, group, session name and figures; only what `visible` allows."""
    h = UsageHour
    idle = func.sum(h.idle_gpu_seconds)
    query = (
        select(
            h.session_id,
            InteractiveSession.name.label("session_name"),
            User.email.label("owner_email"),
            Group.name.label("group_name"),
            func.min(h.model).label("model"),
            func.min(h.tier).label("tier"),
            func.sum(h.gpu_seconds).label("gpu_seconds"),
            idle.label("idle_gpu_seconds"),
            func.sum(h.credits).label("credits"),
            func.max(h.vram_peak_mib).label("vram_peak_mib"),
            func.max(h.vram_limit_mib).label("vram_limit_mib"),
        )
        .join(User, User.id == h.user_id)
        .join(Group, Group.id == h.group_id)
        .outerjoin(InteractiveSession, InteractiveSession.id == h.session_id)
        .where(h.hour >= since, h.hour <= until, *_within(h, visible))
        .group_by(h.session_id, InteractiveSession.name, User.email, Group.name)
        .having(idle > 0)
        .order_by(idle.desc(), h.session_id)
        .limit(limit)
    )
    return typing.cast(Select[Any], query)


# ---- weekly digests ------------------------------------------------------------------------

_OLDEST_UNROLLED = text(
    "SELECT min(coalesce(rolled_until, admitted_at)) FROM gpu_allocations "
    "WHERE model IS NOT NULL AND (released_at IS NULL OR rolled_until IS NULL "
    "OR rolled_until < released_at)"
)


async def counted_through(db: AsyncSession) -> datetime | None:
    """How far every GPU allocation is counted: the least mark of those not counted to their
    end (None: every allocation is)."""
    found: datetime | None = await db.scalar(_OLDEST_UNROLLED)
    return found


_TO_DIGEST = text(
    "SELECT DISTINCT d.group_id FROM usage_days d WHERE d.day >= :first AND d.day <= :last "
    "AND NOT EXISTS (SELECT 1 FROM usage_digests x WHERE x.group_id = d.group_id "
    "AND x.week_start = :first) ORDER BY d.group_id LIMIT :limit"
)


async def groups_to_digest(
    db: AsyncSession, first: date, last: date, limit: int
) -> list[uuid.UUID]:
    """Groups that used GPUs from `first` through `last` and have no digest of that week."""
    rows = await db.scalars(_TO_DIGEST, {"first": first, "last": last, "limit": limit})
    return list(rows)


_CLAIM_DIGEST = text(
    "INSERT INTO usage_digests (group_id, week_start, sent_at, told) "
    "VALUES (:group_id, :week_start, :now, :told) ON CONFLICT DO NOTHING RETURNING group_id"
)


async def claim_digest(
    db: AsyncSession, group_id: uuid.UUID, week_start: date, now: datetime, told: int
) -> bool:
    """Record the group's digest of the week; False when another worker already did."""
    claimed = await db.scalar(
        _CLAIM_DIGEST, {"group_id": group_id, "week_start": week_start, "now": now, "told": told}
    )
    return claimed is not None


# ---- right-sizing --------------------------------------------------------------------------

_RECENT_PEAKS = text(
    "SELECT h.session_id, max(h.vram_peak_mib) AS peak_mib, max(h.vram_limit_mib) AS limit_mib, "
    "max(h.hour) AS last FROM usage_hours h JOIN sessions s ON s.id = h.session_id "
    "WHERE h.user_id = :user_id AND h.model = :model AND h.tier = :tier AND s.image = :image "
    "AND h.vram_peak_mib IS NOT NULL GROUP BY h.session_id ORDER BY last DESC LIMIT :limit"
)


async def recent_peaks(
    db: AsyncSession, user_id: uuid.UUID, image: str, model: str, tier: str, limit: int
) -> list[Any]:
    """The peak VRAM of the user's most recent sessions of this image on this tier."""
    params = {"user_id": user_id, "image": image, "model": model, "tier": tier, "limit": limit}
    return list((await db.execute(_RECENT_PEAKS, params)).all())
