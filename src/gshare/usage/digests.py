"""The weekly digest each group's admins get: the group's GPU hours, credits and idle share of
the week before, the sessions that idled most, and the members near the end of their credits.
Sent once per group and week, in the transaction that records it. Nothing here commits."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, time, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from gshare.credits import service as credits
from gshare.credits.amounts import format_amount
from gshare.events.notifications import notify_user
from gshare.identity import service as identity
from gshare.usage import repository
from gshare.usage.service import Figures

DIGEST = "usage.weekly_digest"
WEEK = timedelta(days=7)
# A week's digest waits this long after the week ends, for the rollup to count its last hour.
AFTER_THE_WEEK = timedelta(hours=1)
DIGEST_BATCH = 50
IDLE_SHOWN = 3


def last_week(now: datetime) -> date:
    """The Monday (UTC) of the last whole week whose digest may go out at `now`."""
    moment = (now - AFTER_THE_WEEK).astimezone(UTC).date()
    return moment - timedelta(days=moment.weekday()) - WEEK


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:,.1f}"


async def _body(db: AsyncSession, group_id: uuid.UUID, first: date, last: date) -> tuple[str, str]:
    visible = repository.Visible(everything=True)
    filters = repository.Filters(group_id=group_id)
    query = repository.report_query(
        since=first, until=last, by="none", every="none", visible=visible, filters=filters
    )
    rows = await repository.report(db, query)
    totals = Figures.of(rows[0]) if rows else None
    start = datetime.combine(first, time.min, UTC)
    end = datetime.combine(last, time.max, UTC)
    group_only = repository.Visible(group_ids=frozenset([group_id]))
    idle = await repository.report(
        db, repository.most_idle_query(start, end, group_only, IDLE_SHOWN)
    )
    gpu = totals.gpu_seconds if totals else 0.0
    idle_share = (totals.idle_gpu_seconds / gpu) if totals and gpu > 0 else 0.0
    title = f"{_hours(gpu)} GPU-hours, {idle_share:.0%} idle"
    lines = [
        f"The week of {first.isoformat()}: {_hours(gpu)} GPU-hours, "
        f"{_hours(totals.idle_gpu_seconds if totals else 0.0)} of them idle, "
        f"{format_amount(totals.credits if totals else 0)} credits."
    ]
    if idle:
        lines.append(
            "Idled most: "
            + "; ".join(
                f"{r.session_name or 'a removed session'} of {r.owner_email} "
                f"({_hours(float(r.idle_gpu_seconds))} idle GPU-hours)"
                for r in idle
            )
            + "."
        )
    # Not its guests: their credits are their own groups' business.
    members = await identity.full_member_ids(db, group_id)
    near = await credits.near_budget(db, members)
    if near:
        emails = await identity.emails(db, near)
        lines.append(
            "Near the end of their credits: " + ", ".join(sorted(emails[u] for u in near)) + "."
        )
    return title, "\n".join(lines)


async def send_batch(db: AsyncSession, now: datetime) -> int:
    """Send one batch of last week's digests; returns how many groups it covered (a full batch:
    call again). Nothing is sent until the rollup has counted the whole week."""
    first = last_week(now)
    last = first + timedelta(days=6)
    week_end = datetime.combine(first + WEEK, time.min, UTC)
    counted = await repository.counted_through(db)
    if counted is not None and counted < week_end:
        return 0
    groups = await repository.groups_to_digest(db, first, last, DIGEST_BATCH)
    for group_id in groups:
        admins = await identity.admin_ids(db, group_id=group_id)
        if not admins:
            org_id = await identity.group_org(db, group_id)
            admins = [] if org_id is None else await identity.admin_ids(db, org_id=org_id)
        if not await repository.claim_digest(db, group_id, first, now, len(admins)):
            continue
        name = (await identity.names(db, "group", [group_id])).get(group_id, "Your group")
        title, body = await _body(db, group_id, first, last)
        for user_id in admins:
            await notify_user(
                db,
                user_id,
                DIGEST,
                title=f"{name}'s week: {title}",
                body=body,
                now=now,
                data={"group_id": str(group_id), "week_start": first.isoformat()},
            )
    return len(groups)
