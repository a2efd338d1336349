"""The pure throttle arithmetic."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gshare.identity.throttle import ACCOUNT_LIMITS, wait_seconds

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def test_under_the_limit_there_is_no_wait() -> None:
    failures = [NOW - timedelta(seconds=s) for s in range(9, 0, -1)]
    assert wait_seconds(failures, NOW, ACCOUNT_LIMITS) == 0


def test_at_the_minute_limit_wait_until_the_oldest_falls_out() -> None:
    failures = [NOW - timedelta(seconds=50 - s) for s in range(10)]  # 50s ago .. 41s ago
    assert wait_seconds(failures, NOW, ACCOUNT_LIMITS) == 10


def test_the_hour_limit_counts_failures_spread_over_the_hour() -> None:
    failures = [NOW - timedelta(minutes=59) + timedelta(seconds=30 * i) for i in range(100)]
    wait = wait_seconds(failures, NOW, ACCOUNT_LIMITS)
    assert 50 <= wait <= 61


def test_old_failures_do_not_count() -> None:
    failures = [NOW - timedelta(hours=2)] * 500
    assert wait_seconds(failures, NOW, ACCOUNT_LIMITS) == 0
