"""Start forecasts kept on the real database: stored on the queued requests, shown in the
queue's standings, refreshed only when something changed, a slip told once, and the outcome
of each forecast kept for the correction."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update

from gshare.capacity import admission, forecasting, repository
from gshare.capacity.models import AdmissionRequest
from gshare.events.models import Event, Notification
from tests.capacity.builders import admit, capacity_world, dequeue, release, request_row


async def _refresh(sessions, now, settings, unless=None):
    async with sessions() as db, db.begin():
        return await forecasting.refresh(db, now, settings, unless=unless)


async def _slip_notices(sessions, user_id) -> list[Notification]:
    async with sessions() as db:
        return list(
            await db.scalars(
                select(Notification).where(
                    Notification.user_id == user_id, Notification.kind == forecasting.START_MOVED
                )
            )
        )


async def test_a_queued_request_gets_a_forecast_from_the_tiers_finished_sessions(
    sessions, clock
) -> None:
    t0 = clock.now()
    w = await capacity_world(sessions, t0 - timedelta(hours=4), n_cards=1, users=2)
    # Three sessions of an hour each have finished on the one card.
    for k in range(3):
        started = t0 - timedelta(hours=4) + timedelta(minutes=61 * k)
        done = await admit(sessions, w.ask(0, "exclusive"), started, w.settings)
        await release(sessions, done.request.id, started + timedelta(hours=1))
    running = await admit(sessions, w.ask(0, "exclusive"), t0 - timedelta(minutes=20), w.settings)
    assert running.allocation is not None
    waiting = await admit(sessions, w.ask(1, "exclusive"), t0, w.settings)
    assert waiting.request.status == "queued"

    summary, mark = await _refresh(sessions, t0, w.settings)
    assert summary == forecasting.ForecastSummary(1, 0)
    row = await request_row(sessions, waiting.request.id)
    # Every hour-long session seen: the running one ends in 40 minutes, in every draw.
    assert row.likely_start_at == t0 + timedelta(minutes=40)
    assert row.surely_start_by == t0 + timedelta(minutes=40)
    assert row.first_likely_start_at == row.told_likely_start_at == row.likely_start_at
    assert row.first_likely_seconds == row.first_surely_seconds == 40 * 60
    async with sessions() as db:
        told = list(
            await db.scalars(select(Event).where(Event.kind == forecasting.FORECAST_CHANGED))
        )
    assert [e.user_id for e in told] == [w.user_ids[1]]

    async with sessions() as db:
        standing = (await admission.standings(db, t0 + timedelta(minutes=10), w.settings))[
            waiting.request.id
        ]
    assert standing.start is not None
    assert standing.start.likely == t0 + timedelta(minutes=40)
    assert standing.estimated_wait == timedelta(minutes=30)
    assert standing.waits_for == f"a whole {w.model.name} card"

    # Nothing changed: nothing is done. A new request changes the fingerprint.
    again, same = await _refresh(sessions, t0 + timedelta(seconds=30), w.settings, unless=mark)
    assert again.skipped
    assert same == mark
    await admit(sessions, w.ask(1, "exclusive"), t0 + timedelta(minutes=1), w.settings)
    changed, _ = await _refresh(sessions, t0 + timedelta(minutes=1), w.settings, unless=mark)
    assert changed.forecast == 2

    # Once it starts, what the forecast said and how long it waited are an outcome.
    later = t0 + timedelta(minutes=40)
    await release(sessions, running.request.id, later)
    await dequeue(sessions, later, w.settings)
    async with sessions() as db:
        outcomes = await repository.recent_outcomes(db, 10)
    assert outcomes == [(40 * 60.0, 40 * 60.0, 40 * 60.0)]


async def test_a_slip_of_more_than_half_an_hour_is_told_once(sessions, clock) -> None:
    t0 = clock.now()
    w = await capacity_world(sessions, t0 - timedelta(hours=2), n_cards=1, users=2)
    done = await admit(sessions, w.ask(0, "exclusive"), t0 - timedelta(hours=2), w.settings)
    await release(sessions, done.request.id, t0 - timedelta(hours=1))
    await admit(sessions, w.ask(0, "exclusive"), t0 - timedelta(minutes=50), w.settings)
    waiting = await admit(sessions, w.ask(1, "exclusive"), t0, w.settings)
    await _refresh(sessions, t0, w.settings)
    assert (await request_row(sessions, waiting.request.id)).likely_start_at == t0 + timedelta(
        minutes=10
    )

    # Told 10 minutes from now; what is forecast now is 10 minutes: no slip.
    await _refresh(sessions, t0 + timedelta(seconds=15), w.settings)
    assert await _slip_notices(sessions, w.user_ids[1]) == []

    # As if an earlier forecast had told it 40 minutes sooner than the one now.
    async with sessions() as db, db.begin():
        await db.execute(
            update(AdmissionRequest)
            .where(AdmissionRequest.id == waiting.request.id)
            .values(told_likely_start_at=t0 - timedelta(minutes=30))
        )
    summary, _ = await _refresh(sessions, t0 + timedelta(seconds=30), w.settings)
    assert summary.slipped == 1
    notices = await _slip_notices(sessions, w.user_ids[1])
    assert len(notices) == 1
    assert notices[0].read_at is None
    assert notices[0].data["request_id"] == str(waiting.request.id)
    assert "it was" in notices[0].body

    summary, _ = await _refresh(sessions, t0 + timedelta(seconds=45), w.settings)
    assert summary.slipped == 0
    assert len(await _slip_notices(sessions, w.user_ids[1])) == 1


async def test_two_refreshes_at_once_tell_a_slip_once(sessions, clock) -> None:
    """While one process refreshes (and holds the forecast lock), another does nothing."""
    t0 = clock.now()
    w = await capacity_world(sessions, t0, n_cards=1, users=2)
    await admit(sessions, w.ask(0, "exclusive"), t0, w.settings)
    waiting = await admit(sessions, w.ask(1, "exclusive"), t0, w.settings)
    async with sessions() as first, first.begin():
        summary, _ = await forecasting.refresh(first, t0, w.settings)
        assert summary.forecast == 1
        async with sessions() as second, second.begin():
            other, _ = await forecasting.refresh(second, t0, w.settings)
        assert other == forecasting.ForecastSummary(0, 0, skipped=True)
    assert (await request_row(sessions, waiting.request.id)).forecast_at == t0
