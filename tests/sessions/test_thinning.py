"""Thinning a session's utilization samples with age: bounded however long the session ran,
the newest point and the recent detail kept, totals, peaks and means preserved."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gshare.sessions.thinning import (
    COST_POINTS,
    DAY,
    MAX_POINTS,
    OLDER_BUCKETS,
    Point,
    cost_width,
    older_width,
    thin,
)

NOW = datetime(2026, 12, 3, 12, 0, 7, 250_000, tzinfo=UTC)
YEAR = timedelta(days=400)


@st.composite
def lives(draw: st.DrawFn) -> tuple[datetime, list[Point]]:
    """A session that began up to 400 days ago and the points it has: dense ones anywhere in
    its life, as a lost thinning pass or a fast reporter would leave them."""
    length = draw(st.timedeltas(min_value=timedelta(0), max_value=YEAR))
    since = NOW - length
    ages = draw(
        st.lists(
            st.one_of(
                st.timedeltas(min_value=timedelta(0), max_value=length),
                st.timedeltas(min_value=timedelta(0), max_value=min(length, 2 * DAY)),
            ),
            max_size=250,
        )
    )
    points = {}
    for age in ages:
        at = NOW - age
        points[at] = Point(
            at,
            draw(st.one_of(st.none(), st.floats(min_value=0, max_value=100))),
            draw(st.one_of(st.none(), st.integers(min_value=0, max_value=2**31 - 1))),
            draw(st.integers(min_value=1, max_value=50)),
        )
    # A dense run, as a reporter every few seconds leaves between two thinning passes.
    step = draw(st.timedeltas(min_value=timedelta(seconds=1), max_value=timedelta(minutes=10)))
    start = draw(st.timedeltas(min_value=timedelta(0), max_value=length))
    for i in range(draw(st.integers(0, 2000))):
        if step * i > start:
            break
        at = NOW - start + step * i
        points[at] = Point(at, float(i % 101), i % 7 * 1024 if i % 5 else None, 1 + i % 3)
    return since, list(points.values())


def _weighted_mean(points: list[Point]) -> float | None:
    weighed = [(p.gpu_util_percent, p.samples) for p in points if p.gpu_util_percent is not None]
    total = sum(w for _, w in weighed)
    return sum(u * w for u, w in weighed) / total if total else None


@settings(max_examples=60, deadline=None)
@given(lives())
def test_thinning_keeps_a_bounded_faithful_summary(life: tuple[datetime, list[Point]]) -> None:
    since, points = life
    kept = thin(points, since=since, now=NOW)
    assert len(kept) <= MAX_POINTS
    assert [p.at for p in kept] == sorted({p.at for p in kept})
    assert {p.at for p in kept} <= {p.at for p in points}  # no time is invented
    if points:
        assert kept[-1].at == max(p.at for p in points)
        assert sum(p.samples for p in kept) == sum(p.samples for p in points)
        vrams = [p.vram_used_mib for p in points if p.vram_used_mib is not None]
        assert max(
            (p.vram_used_mib for p in kept if p.vram_used_mib is not None), default=None
        ) == (max(vrams) if vrams else None)
        utils = [p.gpu_util_percent for p in points if p.gpu_util_percent is not None]
        for p in kept:
            if p.gpu_util_percent is not None:
                assert min(utils) - 1e-9 <= p.gpu_util_percent <= max(utils) + 1e-9
        if len(utils) == len(points):  # then the mean, weighted by samples, is kept too
            assert _weighted_mean(kept) == pytest.approx(_weighted_mean(points), abs=1e-9)
    assert thin(kept, since=since, now=NOW) == kept


@settings(max_examples=30, deadline=None)
@given(lives(), st.timedeltas(min_value=timedelta(0), max_value=YEAR))
def test_thinning_again_later_stays_bounded_and_keeps_the_totals(
    life: tuple[datetime, list[Point]], later: timedelta
) -> None:
    since, points = life
    first = thin(points, since=since, now=NOW)
    second = thin(first, since=since, now=NOW + later)
    assert len(second) <= MAX_POINTS
    assert sum(p.samples for p in second) == sum(p.samples for p in points)


def test_points_of_the_last_hour_at_the_default_interval_are_all_kept() -> None:
    points = [Point(NOW - timedelta(seconds=30 * i), 50.0, 1024) for i in range(120)]
    assert thin(points, since=NOW - timedelta(hours=1), now=NOW) == sorted(
        points, key=lambda p: p.at
    )


def test_a_bucket_keeps_its_newest_time_mean_utilization_and_peak_vram() -> None:
    bucket_start = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)  # four hours old: 5-minute buckets
    points = [
        Point(bucket_start + timedelta(seconds=30), 10.0, 4096, samples=1),
        Point(bucket_start + timedelta(seconds=90), 40.0, 1024, samples=3),
        Point(bucket_start + timedelta(seconds=120), None, None, samples=2),
    ]
    (merged,) = thin(points, since=bucket_start - DAY, now=NOW)
    assert merged == Point(bucket_start + timedelta(seconds=120), 32.5, 4096, samples=6)


def test_the_bound_holds_for_a_year_with_two_days_of_reports_every_five_seconds() -> None:
    dense = [Point(NOW - timedelta(seconds=5 * i), 1.0, 1) for i in range(2 * 24 * 720)]
    sparse = [Point(NOW - timedelta(minutes=10 * i, seconds=3), 1.0, 1) for i in range(52_560)]
    kept = thin(dense + sparse, since=NOW - timedelta(days=366), now=NOW)
    assert 750 <= len(kept) <= MAX_POINTS


def test_a_year_long_session_keeps_a_week_of_hours_at_most() -> None:
    points = [Point(NOW - timedelta(minutes=30 * i), 1.0, 1) for i in range(365 * 48)]
    kept = thin(points, since=NOW - timedelta(days=365), now=NOW)
    assert len(kept) <= MAX_POINTS
    assert older_width(NOW - timedelta(days=365), NOW) == timedelta(hours=64)
    older = [p for p in kept if NOW - p.at >= DAY]
    assert len(older) <= OLDER_BUCKETS + 2


@pytest.mark.parametrize(
    ("length", "width"),
    [
        (timedelta(minutes=10), timedelta(minutes=1)),
        (timedelta(hours=4), timedelta(minutes=1)),
        (timedelta(hours=5), timedelta(minutes=5)),
        (timedelta(days=2), timedelta(minutes=15)),
        (timedelta(days=10), timedelta(hours=1)),
        (timedelta(days=100), timedelta(hours=16)),
    ],
)
def test_charges_are_binned_to_keep_the_cost_series_short(
    length: timedelta, width: timedelta
) -> None:
    assert cost_width(NOW - length, NOW) == width
    assert length / width <= COST_POINTS
