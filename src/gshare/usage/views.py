"""The usage domain's results as the API shows them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from gshare.credits.amounts import format_amount
from gshare.usage.schemas import (
    IdleSessionOut,
    IdleSessionsOut,
    SizingOut,
    SmallerTierOut,
    UsageFiguresOut,
    UsagePeriodOut,
    UsageReportOut,
    UsageRowOut,
)
from gshare.usage.service import Figures, Report
from gshare.usage.sizing import Sizing

HOUR = 3600.0


def _figures(f: Figures) -> dict[str, object]:
    return {
        "gpu_hours": f.gpu_seconds / HOUR,
        "idle_gpu_hours": f.idle_gpu_seconds / HOUR,
        "idle_share": f.idle_gpu_seconds / f.gpu_seconds if f.gpu_seconds > 0 else None,
        "session_hours": f.held_seconds / HOUR,
        "measured_hours": f.measured_seconds / HOUR,
        "credits": format_amount(f.credits),
        "vram_peak_mib": f.vram_peak_mib,
    }


def _point(start: date, f: Figures) -> UsagePeriodOut:
    return UsagePeriodOut(period_start=start, **_figures(f))


def report_out(report: Report) -> UsageReportOut:
    return UsageReportOut(
        since=report.since,
        until=report.until,
        by=report.by,
        every=report.every,
        totals=UsageFiguresOut(**_figures(report.totals)),
        rows=[
            UsageRowOut(
                key=row.key,
                name=row.name,
                totals=UsageFiguresOut(**_figures(row.totals)),
                series=[_point(start, f) for start, f in row.series],
            )
            for row in report.rows
        ],
    )


def idle_sessions_out(rows: Sequence[Any]) -> IdleSessionsOut:
    return IdleSessionsOut(
        items=[
            IdleSessionOut(
                session_id=r.session_id,
                session_name=r.session_name,
                owner_email=r.owner_email,
                group_name=r.group_name,
                model=r.model,
                tier=r.tier,
                gpu_hours=float(r.gpu_seconds) / HOUR,
                idle_gpu_hours=float(r.idle_gpu_seconds) / HOUR,
                credits=format_amount(int(r.credits)),
                vram_peak_mib=r.vram_peak_mib,
                vram_limit_mib=r.vram_limit_mib,
            )
            for r in rows
        ]
    )


def sizing_out(advice: Sizing) -> SizingOut:
    smaller = advice.smaller
    return SizingOut(
        sessions=advice.sessions,
        peak_vram_mib=advice.peak_mib,
        smaller=None
        if smaller is None
        else SmallerTierOut(
            tier_id=smaller.id,
            model=smaller.model,
            name=smaller.name,
            vram_mib=smaller.vram_mib,
            price_per_hour=format_amount(smaller.price_per_hour),
        ),
        near_limit=advice.near_limit,
        in_words=advice.in_words,
    )
