"""Usage routes: the report, and the same as a streamed CSV file."""

from __future__ import annotations

import uuid
from datetime import date
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse

from gshare.identity.dependencies import Ctx
from gshare.identity.permissions import Action
from gshare.kit.web import AppSettings, declare, sessions_of
from gshare.usage import service, views
from gshare.usage.repository import Filters
from gshare.usage.schemas import IdleSessionsOut, SizingOut, UsageReportOut

router = APIRouter(tags=["usage"])

Text = Annotated[str | None, Query(min_length=1, max_length=120, pattern=r"^[^\x00-\x1f]*$")]


Since = Annotated[date | None, Query(description="The first UTC day; default: this month's.")]
Until = Annotated[date | None, Query(description="The last UTC day, inclusive; default: today.")]


def _query(default_by: service.Grouping, default_every: service.Period) -> Any:
    """The dependency that reads a report's parameters, with these defaults."""

    async def read(
        since: Since = None,
        until: Until = None,
        by: Annotated[service.Grouping, Query(description="What each row is.")] = default_by,
        every: Annotated[
            service.Period, Query(description="The series' period; none: totals only.")
        ] = default_every,
        org_id: uuid.UUID | None = None,
        group_id: uuid.UUID | None = None,
        user_id: uuid.UUID | None = None,
        model: Text = None,
        tier: Text = None,
        cluster_id: uuid.UUID | None = None,
    ) -> service.UsageQuery:
        filters = Filters(org_id, group_id, user_id, model, tier, cluster_id)
        return service.UsageQuery(since, until, by, every, filters)

    return Depends(read)


@router.get("/api/v1/usage", response_model=UsageReportOut, **declare(Action.USAGE_READ))
async def get_usage(
    ctx: Ctx, q: Annotated[service.UsageQuery, _query("group", "none")]
) -> UsageReportOut:
    """GPU hours held, idle GPU hours and credits charged over a period of UTC days, per user,
    group, organization, model, tier or cluster, with a series per day, week or month. Each
    caller sees their own use and that of what they administer (a super admin, everything);
    filters narrow it and never widen it. Counted up to a few minutes ago."""
    return views.report_out(await service.report(ctx, q))


@router.get(
    "/api/v1/usage/idle-sessions", response_model=IdleSessionsOut, **declare(Action.USAGE_READ)
)
async def get_idle_sessions(ctx: Ctx, since: Since = None, until: Until = None) -> IdleSessionsOut:
    """The sessions that held a card idle longest over the period, with their owner and group:
    the caller's own, and those of what they administer."""
    return views.idle_sessions_out(await service.most_idle(ctx, since, until))


@router.get("/api/v1/usage/sizing", response_model=SizingOut, **declare(Action.USAGE_READ, 404))
async def get_sizing(
    ctx: Ctx,
    image: Annotated[str, Query(min_length=1, max_length=512, pattern=r"^[^\x00-\x1f]*$")],
    tier_id: uuid.UUID,
) -> SizingOut:
    """Whether the caller's recent sessions of `image` on the tier would have fitted a cheaper
    tier of the same model they may use, or came close to the tier's VRAM limit; from their own
    sessions only."""
    return views.sizing_out(await service.sizing(ctx, image, tier_id))


def _csv(declared: dict[str, Any]) -> dict[str, Any]:
    responses = {200: {"content": {"text/csv": {}}, "description": "The CSV file."}}
    return {**declared, "responses": {**responses, **declared["responses"]}}


@router.get(
    "/api/v1/usage.csv", response_class=StreamingResponse, **_csv(declare(Action.USAGE_READ))
)
async def export_usage(
    request: Request,
    ctx: Ctx,
    settings: AppSettings,
    q: Annotated[service.UsageQuery, _query("user", "day")],
) -> StreamingResponse:
    """The report as CSV, one line per key and period, streamed however long: columns
    `period_start, key, name, gpu_hours, idle_gpu_hours, session_hours, measured_hours,
    credits, vram_peak_mib` (see the reference for each)."""
    query = service.export_query(ctx, q)
    filename = f"gshare-usage-{q.by}-{q.every}.csv"
    return StreamingResponse(
        service.export_lines(sessions_of(request), query, settings),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )
