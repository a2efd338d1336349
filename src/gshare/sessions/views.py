"""Response bodies for sessions and volumes, built for many rows in a few queries."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from gshare.capacity import admission, preempting
from gshare.capacity import service as capacity
from gshare.capacity import views as capacity_views
from gshare.credits.amounts import format_amount
from gshare.identity import service as identity
from gshare.kit.settings import Settings
from gshare.sessions import lifecycle, repository, startup
from gshare.sessions.models import InteractiveSession, Volume
from gshare.sessions.schemas import (
    CostPointOut,
    MountOut,
    NoticeOut,
    SessionOut,
    SessionUsageOut,
    StartupStepOut,
    TransitionOut,
    UsagePointOut,
    VolumeOut,
    VolumeUser,
)
from gshare.sessions.service import SessionPolicy, notice_reason, policies_of
from gshare.sessions.thinning import Point
from gshare.sessions.usage import Usage


def idle_pause_at(row: InteractiveSession, policy: SessionPolicy) -> datetime | None:
    """When an idle, warned session will be paused."""
    if row.idle_since is None or row.idle_warned_at is None or not policy.idle_timeout_minutes:
        return None
    due = row.idle_since + timedelta(minutes=policy.idle_timeout_minutes)
    if row.keep_running_until is not None:
        due = max(due, row.keep_running_until)
    return due


def _sentence(text: str) -> str:
    text = text.rstrip(".")
    return text[:1].upper() + text[1:] + "."


def _notice_out(found: preempting.PendingNotice | None) -> NoticeOut | None:
    if found is None:
        return None
    return NoticeOut(
        kind=found.kind,
        reason=found.reason,
        message=_sentence(notice_reason(found.reason, found.detail)),
        noticed_at=found.noticed_at,
        deadline=found.deadline,
    )


async def sessions_out(
    db: AsyncSession,
    rows: Sequence[InteractiveSession],
    now: datetime,
    settings: Settings,
    *,
    with_history: bool = False,
) -> list[SessionOut]:
    tiers = await capacity.tiers_by_id(db, [r.tier_id for r in rows if r.tier_id])
    models = await capacity.model_names(db)
    mounts: dict[uuid.UUID, list[MountOut]] = {}
    for m in await repository.mounts_of(db, [r.id for r in rows]):
        mounts.setdefault(m.session_id, []).append(
            MountOut(
                volume_id=m.Volume.id,
                name=m.Volume.name,
                kind=m.Volume.kind,
                mount_path=m.mount_path,
                read_only=m.read_only,
            )
        )
    waiting = [r for r in rows if r.state in lifecycle.WAITING]
    standings = await admission.standings(db, now, settings) if waiting else {}
    policies = await policies_of(db, rows)
    emails = await identity.emails(db, list({r.owner_id for r in rows}))
    held = [r.id for r in rows if r.state in lifecycle.HOLDING]
    notices = await preempting.pending_for_sessions(db, held)
    waiting_for = [r.request_id for r in waiting if r.request_id]
    freed_at = await preempting.promised_for_requests(db, waiting_for)
    out = []
    for row in rows:
        tier = tiers.get(row.tier_id) if row.tier_id else None
        standing = standings.get(row.request_id) if row.request_id else None
        policy = policies[row.id]
        history = None
        if with_history:
            history = [
                TransitionOut(
                    from_state=t.from_state, to_state=t.to_state, reason=t.reason, at=t.at
                )
                for t in await repository.transitions_of(db, row.id)
            ]
        out.append(
            SessionOut(
                id=row.id,
                name=row.name,
                owner_id=row.owner_id,
                owner_email=emails.get(row.owner_id, ""),
                session_type=row.session_type,
                image=row.image,
                state=row.state,
                state_reason=row.state_reason,
                state_changed_at=row.state_changed_at,
                created_at=row.created_at,
                group_id=row.group_id,
                cluster_id=row.cluster_id,
                tier_id=row.tier_id,
                model=models.get(tier.model_id) if tier else None,
                tier_name=tier.name if tier else None,
                vram_mib=tier.vram_mib if tier else None,
                cpu_millicores=row.cpu_millicores,
                memory_mib=row.memory_mib,
                price_per_hour=format_amount(
                    row.price_per_hour if row.hold_id else (tier.price if tier else 0)
                ),
                cost=format_amount(row.cost),
                billing=row.hold_id is not None,
                queue_position=standing.position if standing else None,
                estimated_wait_seconds=int(standing.estimated_wait.total_seconds())
                if standing
                else None,
                ahead=capacity_views.ahead_out(standing.ahead) if standing else None,
                start=capacity_views.start_out(standing.start) if standing else None,
                waits_for=standing.waits_for if standing else None,
                held_for_booking=capacity_views.held_out(standing.held_for_booking)
                if standing
                else None,
                gpu_util_percent=row.gpu_util_percent,
                vram_used_mib=row.vram_used_mib,
                peak_vram_mib=row.peak_vram_mib,
                utilization_at=row.utilization_at,
                idle_since=row.idle_since,
                idle_pause_at=idle_pause_at(row, policy),
                keep_running_until=row.keep_running_until,
                notice=_notice_out(notices.get(row.id)),
                card_freed_at=freed_at.get(row.request_id) if row.request_id else None,
                can_keep_running=row.state == "running"
                and row.idle_warned_at is not None
                and bool(policy.keep_running_minutes)
                and (row.keep_running_until is None or row.keep_running_until <= now),
                actions=lifecycle.allowed(row.state),
                can_open=row.state == "running" and row.phase == "Running",
                volumes=mounts.get(row.id, []),
                startup_requested_at=row.startup_requested_at,
                startup_steps=[
                    StartupStepOut.model_validate(step, from_attributes=True)
                    for step in startup.from_json(row.startup_steps)
                ],
                transitions=history,
            )
        )
    return out


async def volumes_out(
    db: AsyncSession, volumes: Sequence[Volume], *, viewer: uuid.UUID | None
) -> list[VolumeOut]:
    """Volumes with the sessions using them: all of them for an admin (`viewer` None), the
    viewer's own otherwise, and how many of other people's."""
    users: dict[uuid.UUID, list[VolumeUser]] = {}
    others: dict[uuid.UUID, int] = {}
    for u in await repository.users_of_volumes(db, [v.id for v in volumes]):
        if viewer is not None and u.owner_id != viewer:
            others[u.volume_id] = others.get(u.volume_id, 0) + 1
            continue
        users.setdefault(u.volume_id, []).append(
            VolumeUser(session_id=u.id, name=u.name, state=u.state)
        )
    return [
        VolumeOut(
            id=v.id,
            kind=v.kind,
            name=v.name,
            size_gib=v.size_gib,
            access_mode=v.access_mode,
            group_id=v.group_id,
            cluster_id=v.cluster_id,
            created_at=v.created_at,
            used_by=users.get(v.id, []),
            used_by_others=others.get(v.id, 0),
        )
        for v in volumes
    ]


def _point_out(point: Point) -> UsagePointOut:
    return UsagePointOut(
        at=point.at,
        gpu_util_percent=point.gpu_util_percent,
        vram_used_mib=point.vram_used_mib,
        samples=point.samples,
    )


def usage_out(usage: Usage) -> SessionUsageOut:
    """The series as charts draw them: cost adds up from nothing at the start, and reaches the
    end of the span; a session that is not running has no current figures."""
    row = usage.row
    total, cost = 0, [CostPointOut(at=row.created_at, cost="0")]
    for at, amount in usage.charges:
        total += amount
        cost.append(CostPointOut(at=at, cost=format_amount(total)))
    if cost[-1].at < usage.until:
        cost.append(CostPointOut(at=usage.until, cost=format_amount(total)))
    running = row.state in ("starting", "running") and row.ended_at is None
    current = None
    if running and row.utilization_at is not None:
        current = _point_out(Point(row.utilization_at, row.gpu_util_percent, row.vram_used_mib))
    return SessionUsageOut(
        session_id=row.id,
        since=row.created_at,
        until=usage.until,
        vram_limit_mib=usage.vram_limit_mib,
        current=current,
        points=[_point_out(p) for p in usage.points],
        cost=cost,
        cost_total=format_amount(total),
    )
