"""A session's use over its life: GPU samples kept as its cluster reports them and thinned with
age (thinning.py), and its charges over time from the ledger's captures. Nothing here commits."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from gshare.capacity import service as capacity
from gshare.credits import service as credits
from gshare.identity.authz import Context
from gshare.sessions import repository, service
from gshare.sessions.models import InteractiveSession, SessionSample
from gshare.sessions.thinning import MIN_SPACING, Point, cost_width, thin

THIN_BATCH = 200
# An ended session is thinned once more as of its end, then never changes: a pass looks this
# far back for sessions that ended, so a worker down for a day still catches them.
ENDED_LOOKBACK = timedelta(days=2)


def takes_sample(row: InteractiveSession, now: datetime) -> bool:
    """Whether a report at `now` adds a point: reports closer than the operator's shortest
    interval do not, so a cluster reporting too often cannot flood the table."""
    return row.utilization_at is None or now - row.utilization_at >= MIN_SPACING


async def record(db: AsyncSession, points: Sequence[tuple[uuid.UUID, Point]]) -> None:
    """Store reported points; a second one for a session at the same time is dropped."""
    await repository.add_samples(
        db,
        [
            {
                "session_id": session_id,
                "at": p.at,
                "gpu_util_percent": p.gpu_util_percent,
                "vram_used_mib": p.vram_used_mib,
                "samples": p.samples,
            }
            for session_id, p in points
        ],
    )


async def samples_in(
    db: AsyncSession, spans: Sequence[tuple[uuid.UUID, datetime, datetime]]
) -> dict[uuid.UUID, list[Point]]:
    """Each session's samples taken after its span's first time and no later than its second,
    for the usage rollup."""
    out: dict[uuid.UUID, list[Point]] = {}
    for row in await repository.samples_in(db, spans):
        out.setdefault(row.session_id, []).append(
            Point(row.at, row.gpu_util_percent, row.vram_used_mib, 1)
        )
    return out


def _point(row: SessionSample) -> Point:
    return Point(row.at, row.gpu_util_percent, row.vram_used_mib, row.samples)


def _until(created_at: datetime, ended_at: datetime | None, now: datetime) -> datetime:
    return max(created_at, min(now, ended_at) if ended_at is not None else now)


async def _thin_one(
    db: AsyncSession, session_id: uuid.UUID, since: datetime, until: datetime
) -> int:
    # All of them: a pass that missed rows would leave them unthinned for good.
    stored = [_point(r) for r in await repository.samples_of(db, session_id, limit=None)]
    kept = thin(stored, since=since, now=until)
    kept_at = {p.at for p in kept}
    removed = [p.at for p in stored if p.at not in kept_at]
    before = {p.at: p for p in stored}
    changed = [
        {
            "at": p.at,
            "gpu_util_percent": p.gpu_util_percent,
            "vram_used_mib": p.vram_used_mib,
            "samples": p.samples,
        }
        for p in kept
        if before[p.at] != p
    ]
    await repository.replace_samples(db, session_id, removed, changed)
    return len(removed)


async def thin_batch(
    db: AsyncSession, now: datetime, after_id: uuid.UUID | None
) -> tuple[int, uuid.UUID | None]:
    """Thin the samples of one batch of sessions, live or recently ended, in id order after
    `after_id`: (rows removed, the last session's id when there may be more). An ended
    session is thinned as of its end, so its last hour keeps its detail."""
    if not await repository.try_lock_thinning(db):
        return 0, None  # another worker is thinning
    batch = await repository.sessions_to_thin(
        db, ended_after=now - ENDED_LOOKBACK, after_id=after_id, limit=THIN_BATCH
    )
    removed = 0
    for row in batch:
        removed += await _thin_one(
            db, row.id, row.created_at, _until(row.created_at, row.ended_at, now)
        )
    return removed, batch[-1].id if len(batch) == THIN_BATCH else None


@dataclass(frozen=True)
class Usage:
    row: InteractiveSession
    until: datetime
    vram_limit_mib: int | None
    points: list[Point]
    charges: list[tuple[datetime, int]]  # captured per bin, oldest first


async def usage(ctx: Context, session_id: uuid.UUID) -> Usage:
    """A session's use over its life, for whoever may read the session. What is stored is
    thinned again here, so the answer stays bounded even before the worker has thinned it."""
    row = await service.get(ctx, session_id)
    until = _until(row.created_at, row.ended_at, ctx.now)
    stored = [_point(r) for r in await repository.samples_of(ctx.db, row.id)]
    tiers = await capacity.tiers_by_id(ctx.db, [row.tier_id]) if row.tier_id else {}
    tier = tiers.get(row.tier_id) if row.tier_id else None
    charges = await credits.charges_of_session(ctx.db, row.id, cost_width(row.created_at, until))
    return Usage(
        row=row,
        until=until,
        vram_limit_mib=tier.vram_mib if tier else None,
        points=thin(stored, since=row.created_at, now=until),
        charges=charges,
    )
