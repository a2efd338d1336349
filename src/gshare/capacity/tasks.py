"""Capacity's periodic work: walking the admission queue, moving preemption and drain notices
on, and sampling fair-share usage. Each runs in its own transaction and is safe with several
workers at once (see admission.py and preempting.py)."""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.capacity import admission, forecasting, preempting
from gshare.kit import metrics
from gshare.kit.db import run_in_transaction
from gshare.kit.settings import Settings

log = logging.getLogger(__name__)


async def dequeue_once(
    sessions: async_sessionmaker[AsyncSession], settings: Settings, now: datetime
) -> admission.DequeueSummary:
    async def work(db: AsyncSession) -> admission.DequeueSummary:
        return await admission.dequeue(db, now, settings)

    summary = await run_in_transaction(sessions, work)
    _count(summary)
    if summary.admitted or summary.insufficient_credits or summary.dropped or summary.refused:
        log.info(
            "dequeue: %d admitted, %d short of credits, %d dropped, %d refused",
            len(summary.admitted),
            len(summary.insufficient_credits),
            len(summary.dropped),
            len(summary.refused),
        )
    return summary


async def preempt_once(
    sessions: async_sessionmaker[AsyncSession], settings: Settings, now: datetime
) -> preempting.WalkSummary:
    """Move every preemption and drain notice on (see preempting.py), in its own transaction."""

    async def work(db: AsyncSession) -> preempting.WalkSummary:
        return await preempting.walk(db, now, settings)

    summary = await run_in_transaction(sessions, work)
    if summary.noticed or summary.paused or summary.freed or summary.withdrawn:
        log.info(
            "notices: %d given, %d paused at their deadline, %d freed early, %d withdrawn",
            summary.noticed,
            summary.paused,
            summary.freed,
            summary.withdrawn,
        )
    return summary


async def forecast_once(
    sessions: async_sessionmaker[AsyncSession],
    settings: Settings,
    now: datetime,
    unless: str | None = None,
) -> tuple[forecasting.ForecastSummary, str]:
    """Refresh every queued request's start forecast, unless nothing changed since the one
    with fingerprint `unless`; in its own transaction."""

    async def work(db: AsyncSession) -> tuple[forecasting.ForecastSummary, str]:
        return await forecasting.refresh(db, now, settings, unless=unless)

    summary, mark = await run_in_transaction(sessions, work)
    if summary.slipped:
        log.info("forecasts: %d owners told their start slipped", summary.slipped)
    return summary, mark


def _count(summary: admission.DequeueSummary) -> None:
    """What the committed walk decided, in the metrics."""
    metrics.WORKER_GAUGES.queue_walked(summary.waiting)
    if summary.admitted:
        metrics.ADMISSIONS.labels("queue", "placed").inc(len(summary.admitted))
    ended = {
        "insufficient_credits": summary.insufficient_credits,
        "dropped": summary.dropped,
        "refused": summary.refused,
    }
    for reason, ids in ended.items():
        if ids:
            metrics.ADMISSIONS.labels("queue", "refused").inc(len(ids))
            metrics.ADMISSION_REFUSALS.labels("queue", reason).inc(len(ids))


async def sample_once(
    sessions: async_sessionmaker[AsyncSession], settings: Settings, now: datetime
) -> bool:
    async def work(db: AsyncSession) -> bool:
        return await admission.sample_usage(db, now, settings)

    return await run_in_transaction(sessions, work)
