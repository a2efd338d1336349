"""GPU utilization from the clusters' metrics, and pausing what is idle or has run too long."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from gshare.clusters import service as clusters
from gshare.events.notifications import notify_user
from gshare.kit.settings import Settings
from gshare.sessions import idle, repository, service, usage
from gshare.sessions.schemas import UtilizationReport
from gshare.sessions.thinning import Point


async def record_utilization(
    db: AsyncSession,
    cluster_id: uuid.UUID,
    report: UtilizationReport,
    now: datetime,
    *,
    threshold_percent: float,
) -> bool:
    """Store each reported session's GPU use, peak VRAM and since when it has been idle.
    An unreadable source is recorded as such, and nothing on the cluster is reaped until it
    reads again."""
    clusters.refuse_future_sequence(report.sequence, now)
    samples = {s.session_id: s for s in report.samples} if report.readable else {}
    # Sessions before their cluster's row, as a status report locks them (see the lock order
    # in docs/explanation/architecture.md).
    rows = await repository.on_cluster(db, cluster_id, sorted(samples))
    await clusters.heard_from(db, cluster_id, now)
    error = "" if report.readable else (report.error or "The metrics source could not be read.")
    if not await clusters.metrics_reported(db, cluster_id, now, error, report.sequence):
        return False  # a replay, or overtaken by a newer report
    if not report.readable:
        return True
    points: list[tuple[uuid.UUID, Point]] = []
    for row in rows:
        if row.state not in ("starting", "running"):
            continue
        sample = samples[row.id]
        if usage.takes_sample(row, now):
            points.append((row.id, Point(now, sample.gpu_util_percent, sample.vram_used_mib)))
        row.gpu_util_percent = sample.gpu_util_percent
        row.vram_used_mib = sample.vram_used_mib
        if sample.vram_used_mib is not None:
            row.peak_vram_mib = max(row.peak_vram_mib or 0, sample.vram_used_mib)
        row.utilization_at = now
        if row.state != "running":
            continue
        since = idle.idle_since(
            idle.Sample(sample.gpu_util_percent, sample.last_kernel_seconds, sample.has_series),
            now=now,
            running_since=row.running_since,
            previous=row.idle_since,
            threshold_percent=threshold_percent,
        )
        if since is None:
            row.idle_since = row.idle_warned_at = None
        else:
            row.idle_since = since
    await usage.record(db, points)
    return True


async def reap(db: AsyncSession, now: datetime, settings: Settings) -> dict[str, int]:
    """Warn the owners of sessions about to be paused for idleness, pause those whose time
    has come, and pause sessions past their policy's maximum length. Sessions on a cluster
    whose metrics are stale or unreadable are not judged idle."""
    rows = await repository.running_gpu_sessions(db)
    counts = {"warned": 0, "idle": 0, "max_length": 0}
    if not rows:
        return counts
    fresh = await clusters.metrics_fresh(
        db, now - timedelta(minutes=settings.metrics_stale_minutes)
    )
    policies = await service.policies_of(db, rows)
    for row in rows:
        policy = policies[row.id]
        if (
            row.state == "running"
            and policy.max_session_minutes
            and row.running_since is not None
            and now >= row.running_since + timedelta(minutes=policy.max_session_minutes)
        ):
            await service.pause_for(
                db,
                row,
                now,
                why=f"It reached the policy's maximum length of {policy.max_session_minutes} "
                "minutes. Its volumes are kept; resume it to go on.",
                code="max_length",
                title=f"Your session {row.name} was paused",
            )
            counts["max_length"] += 1
            continue
        if row.state != "running" or row.hold_id is None or row.cluster_id not in fresh:
            continue
        decided = idle.verdict(
            now=now,
            idle_since=row.idle_since,
            warned_at=row.idle_warned_at,
            keep_running_until=row.keep_running_until,
            timeout_minutes=policy.idle_timeout_minutes,
            warning_minutes=settings.idle_warning_minutes,
        )
        if decided == "warn":
            row.idle_warned_at = now
            await notify_user(
                db,
                row.owner_id,
                "session.idle",
                title=f"Your session {row.name} is idle",
                body=f"Its GPU has been idle since {row.idle_since:%H:%M} UTC; it will be paused "
                f"in about {settings.idle_warning_minutes} minutes unless it is used or you "
                "keep it running.",
                now=now,
                data={"session_id": str(row.id)},
            )
            await service.announce(db, row)
            counts["warned"] += 1
        elif decided == "pause":
            await service.pause_for(
                db,
                row,
                now,
                why=f"Its GPU was idle for {policy.idle_timeout_minutes} minutes. Its volumes "
                "are kept; resume it to go on.",
                code="idle",
                title=f"Your idle session {row.name} was paused",
            )
            counts["idle"] += 1
    return counts
