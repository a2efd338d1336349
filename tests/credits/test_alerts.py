"""Wallet alerts' decisions (pure): each crossing told once, armed again once back above, and
a runway only where something is billed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from gshare.credits.alerts import Alert, Reading, decide, runway_hours

NOW = datetime(2026, 12, 4, 9, tzinfo=UTC)


def test_a_crossing_is_told_once_and_armed_again_above() -> None:
    alert = Alert(below=100, runway_hours=None)
    first = decide(alert, Reading(balance=99, burn_per_hour=0), NOW)
    assert first.tell_below
    assert first.below_told_at == NOW
    told = Alert(100, None, first.below_told_at)
    again = decide(told, Reading(50, 0), NOW + timedelta(minutes=1))
    assert not again.tell_below
    assert again.below_told_at == NOW
    back = decide(told, Reading(100, 0), NOW + timedelta(minutes=2))
    assert not back.tell_below
    assert back.below_told_at is None


def test_the_runway_counts_the_balance_at_the_rate_billed_and_none_when_nothing_is() -> None:
    assert runway_hours(Reading(balance=300, burn_per_hour=100)) == 3.0
    assert runway_hours(Reading(balance=-5, burn_per_hour=100)) == 0.0
    assert runway_hours(Reading(balance=300, burn_per_hour=0)) is None
    alert = Alert(below=None, runway_hours=4)
    assert decide(alert, Reading(300, 100), NOW).tell_runway
    assert not decide(alert, Reading(300, 0), NOW).tell_runway
    assert not decide(alert, Reading(400, 100), NOW).tell_runway


@given(
    st.lists(st.tuples(st.integers(-100, 400), st.integers(0, 200)), min_size=1, max_size=60),
    st.integers(0, 300),
    st.integers(1, 5),
)
def test_told_exactly_once_per_crossing_over_any_sequence(
    readings: list[tuple[int, int]], below: int, hours: int
) -> None:
    """The model: a threshold is crossed when a reading is under it and the one before was not
    (the first reading counts as coming from above)."""
    alert = Alert(below, hours)
    was_low = was_short = False
    crossings = tells = 0
    for n, (balance, burn) in enumerate(readings):
        reading = Reading(balance, burn)
        low = balance < below
        hours_left = runway_hours(reading)
        short = hours_left is not None and hours_left < hours
        crossings += (low and not was_low) + (short and not was_short)
        d = decide(alert, reading, NOW + timedelta(minutes=n))
        tells += d.tell_below + d.tell_runway
        assert (d.below_told_at is not None) == low
        assert (d.runway_told_at is not None) == short
        alert = Alert(below, hours, d.below_told_at, d.runway_told_at)
        was_low, was_short = low, short
    assert tells == crossings
