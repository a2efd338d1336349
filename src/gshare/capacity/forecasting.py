"""Keeping each queued request's start forecast: read the admission snapshot, run the pure
forecast (forecast.py), correct it by the outcomes of recent forecasts, store it on the
requests, and tell an owner once when their session's likely start slips by more than half an
hour. Run by the worker after each queue turn, and only when the queue or what runs changed."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from gshare.capacity import bookings, forecast, repository
from gshare.capacity.admission import capacity_snapshot, fair_share, queue_state, usage_state
from gshare.capacity.models import AdmissionRequest
from gshare.events import outbox
from gshare.events.notifications import notify_user
from gshare.kit.settings import Settings

# A likely start that moves later than the one last told by more than this is told.
SLIP = timedelta(minutes=30)
START_MOVED = "session.start_moved"
# A forecast moved by at least this much tells its owner's open consoles to show it again.
FORECAST_CHANGED = "forecast.changed"
MOVED = timedelta(minutes=1)


@dataclass(frozen=True)
class ForecastSummary:
    forecast: int  # requests given a forecast
    slipped: int  # owners told of a slip
    skipped: bool = False  # nothing changed since the last forecast


# A forecast is refreshed at least this often, as sessions run on past what was expected.
REFRESH_AT_LEAST_EVERY = timedelta(minutes=5)


async def fingerprint(db: AsyncSession, now: datetime) -> tuple[str, int]:
    """What a forecast depends on that changes between queue turns (who waits, what runs
    where, under which deadlines: a digest the database computes, so that an unchanged queue
    costs one row), and the time to `REFRESH_AT_LEAST_EVERY`; with how many GPU requests wait.
    The same fingerprint: a forecast that is still good."""
    digest, waiting = await repository.forecast_state(db)
    period = int(now.timestamp() // REFRESH_AT_LEAST_EVERY.total_seconds())
    return f"{digest}/{period}", waiting


async def refresh(
    db: AsyncSession, now: datetime, settings: Settings, *, unless: str | None = None
) -> tuple[ForecastSummary, str]:
    """Forecast every queued request (see the module's docstring); with `unless`, nothing is
    done when the fingerprint is still that one. Returns the summary and the fingerprint.
    Another process refreshing at the same moment makes this one do nothing, so that a slip
    is told once."""
    if not await repository.try_lock_forecasts(db):
        return ForecastSummary(0, 0, skipped=True), unless or ""
    mark, waiting = await fingerprint(db, now)
    if not waiting or mark == unless:
        return ForecastSummary(0, 0, skipped=bool(waiting)), mark
    rows = await repository.queued(db)
    running = await repository.forecast_running(db)
    state = await queue_state(db, rows)
    if not state.queued:
        return ForecastSummary(0, 0), mark
    state.queued, _ = await bookings.mark_booked(db, state.queued, now)
    snapshot = await capacity_snapshot(db, {q.request.model for q in state.queued}, now)
    holds = await repository.booked_holds(db, now)
    snapshot = replace(snapshot, booked_until={h.card_id: h.until for h in holds})
    tiers = {str(t.id): t for t, _ in state.tiers.values()}
    sessions = [
        forecast.RunningSession(
            s.card_id, str(s.tier_id), s.user_id, s.admitted_at, s.mig_profile, s.ends_by
        )
        for s in running
        if s.tier_id is not None
    ]
    tier_ids = list({t.id for t in tiers.values()} | {s.tier_id for s in running if s.tier_id})
    by_tier: dict[str, list[float]] = {}
    by_owner: dict[tuple[uuid.UUID, str], list[float]] = {}
    for tier_id, user_id, seconds in await repository.recent_lengths(
        db, tier_ids, forecast.RECENT_LENGTHS
    ):
        by_tier.setdefault(str(tier_id), []).append(seconds)
        by_owner.setdefault((user_id, str(tier_id)), []).append(seconds)
    tick = timedelta(seconds=settings.dequeue_interval_seconds)
    raw = forecast.forecast(
        snapshot,
        sessions,
        state.queued,
        await usage_state(db),
        now,
        forecast.History(by_tier, by_owner),
        fair_share(settings),
        forecast.ForecastSettings(tick=tick),
    )
    outcomes = [
        forecast.Outcome(*o) for o in await repository.recent_outcomes(db, forecast.RECENT_OUTCOMES)
    ]
    shown = forecast.corrected(raw, forecast.correction(outcomes, tick), now, tick)
    stored, slipped, moved = [], 0, set()
    for request_id, estimate in shown.items():
        row = state.rows[request_id]
        if _moved(row.likely_start_at, estimate.likely) or _moved(
            row.surely_start_by, estimate.surely
        ):
            moved.add(row.user_id)
        told = row.told_likely_start_at
        if told is not None and estimate.likely is not None and estimate.likely - told > SLIP:
            await _tell_slip(db, row, told, estimate, now)
            told, slipped = estimate.likely, slipped + 1
        first = raw[request_id]
        stored.append(
            {
                "id": request_id,
                "likely": estimate.likely,
                "surely": estimate.surely,
                "told": told if told is not None else estimate.likely,
                "raw_likely": _wait(first.likely, now),
                "raw_surely": _wait(first.surely, now),
                "now": now,
            }
        )
    await repository.store_forecasts(db, stored)
    await outbox.record_many(
        db,
        [outbox.NewEvent(FORECAST_CHANGED, outbox.Audience.only(u), {}) for u in sorted(moved)],
    )
    return ForecastSummary(len(stored), slipped), mark


def _moved(before: datetime | None, after: datetime | None) -> bool:
    if before is None or after is None:
        return before != after
    return abs(after - before) >= MOVED


def _wait(at: datetime | None, now: datetime) -> float | None:
    return None if at is None else max((at - now).total_seconds(), 0.0)


def _clock(at: datetime) -> str:
    return at.strftime("%a %H:%M UTC")


async def _tell_slip(
    db: AsyncSession,
    row: AdmissionRequest,
    told: datetime,
    estimate: forecast.Estimate,
    now: datetime,
) -> None:
    assert estimate.likely is not None
    surely = (
        f", almost surely before {_clock(estimate.surely)}" if estimate.surely is not None else ""
    )
    await notify_user(
        db,
        row.user_id,
        START_MOVED,
        title="Your queued session will likely start later",
        body=(
            f"Likely around {_clock(estimate.likely)}{surely}; it was {_clock(told)}. "
            "Requests ahead of it, or sessions running longer than usual, moved it."
        ),
        now=now,
        data={
            "session_id": str(row.session_id) if row.session_id else None,
            "request_id": str(row.id),
            "likely_start_at": estimate.likely.isoformat(),
            "was": told.isoformat(),
        },
    )
