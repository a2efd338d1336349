"""Idle detection: which samples say a GPU is idle and since when, and when an idle session's
owner is warned and then the session paused, to the microsecond at each boundary."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from gshare.sessions.idle import KERNEL_BUSY_SECONDS, Sample, idle_since, verdict

NOW = datetime(2025, 3, 4, 10, 30, tzinfo=UTC)
STARTED = NOW - timedelta(hours=2)
EARLIER = NOW - timedelta(minutes=20)
TICK = timedelta(microseconds=1)
THRESHOLD = 5.0


def _since(
    sample: Sample,
    *,
    running_since: datetime | None = STARTED,
    previous: datetime | None = None,
) -> datetime | None:
    return idle_since(
        sample,
        now=NOW,
        running_since=running_since,
        previous=previous,
        threshold_percent=THRESHOLD,
    )


def utilization(percent: float | None) -> Sample:
    return Sample(gpu_util_percent=percent, last_kernel_seconds=None, has_series=True)


def kernel(seconds: float, percent: float | None = None) -> Sample:
    return Sample(gpu_util_percent=percent, last_kernel_seconds=seconds, has_series=True)


NO_SERIES = Sample(gpu_util_percent=None, last_kernel_seconds=None, has_series=False)


# ---- idle_since ----------------------------------------------------------------------------


def test_utilization_at_the_threshold_is_busy_and_just_below_is_idle_from_now() -> None:
    assert _since(utilization(THRESHOLD)) is None
    assert _since(utilization(100.0)) is None
    assert _since(utilization(THRESHOLD - 0.001)) == NOW
    assert _since(utilization(0.0)) == NOW


def test_an_idle_sample_keeps_the_time_the_earlier_samples_found() -> None:
    assert _since(utilization(0.0), previous=EARLIER) == EARLIER
    assert _since(NO_SERIES, previous=EARLIER) == EARLIER


def test_a_busy_sample_ends_the_idleness_whatever_came_before() -> None:
    assert _since(utilization(50.0), previous=EARLIER) is None
    assert _since(kernel(0.0), previous=EARLIER) is None


def test_a_sample_without_utilization_tells_nothing_either_way() -> None:
    assert _since(utilization(None)) is None
    assert _since(utilization(None), previous=EARLIER) == EARLIER


def test_a_session_with_no_series_yet_has_been_idle_since_it_started() -> None:
    assert _since(NO_SERIES) == STARTED
    assert _since(NO_SERIES, running_since=None) == NOW
    # No series means no kernel yet, whatever the other fields hold.
    odd = Sample(gpu_util_percent=90.0, last_kernel_seconds=1.0, has_series=False)
    assert _since(odd) == STARTED


def test_a_kernel_within_the_window_is_busy_and_one_at_its_edge_is_not() -> None:
    assert KERNEL_BUSY_SECONDS == 60.0
    assert _since(kernel(0.0)) is None
    assert _since(kernel(KERNEL_BUSY_SECONDS - 0.001)) is None
    assert _since(kernel(KERNEL_BUSY_SECONDS)) == NOW - timedelta(seconds=60)
    assert _since(kernel(600.0)) == NOW - timedelta(minutes=10)


def test_a_whole_card_that_reads_zero_utilization_is_busy_by_its_kernel() -> None:
    assert _since(kernel(5.0, percent=0.0)) is None


def test_a_kernel_from_before_the_session_started_counts_from_the_start() -> None:
    started = NOW - timedelta(minutes=3)
    assert _since(kernel(3600.0), running_since=started) == started
    assert _since(kernel(3600.0), running_since=None) == NOW - timedelta(hours=1)


def test_a_kernel_older_than_the_idle_time_does_not_move_it_back() -> None:
    assert _since(kernel(3600.0), previous=EARLIER) == EARLIER


def test_utilization_above_the_threshold_is_busy_even_with_an_old_kernel() -> None:
    assert _since(kernel(120.0, percent=95.0)) is None


def test_a_kernel_seen_after_the_idle_time_moves_it_to_the_kernel() -> None:
    assert _since(kernel(90.0), previous=EARLIER) == NOW - timedelta(seconds=90)


moments = st.datetimes(
    min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)
)
samples = st.builds(
    Sample,
    gpu_util_percent=st.none() | st.floats(0, 100),
    last_kernel_seconds=st.none() | st.floats(0, 10**6),
    has_series=st.booleans(),
)


@given(samples, moments, st.none() | st.timedeltas(timedelta(0), timedelta(days=30)))
def test_a_session_is_never_idle_since_a_time_after_now_or_before_it_started(
    sample: Sample, now: datetime, age: timedelta | None
) -> None:
    running_since = None if age is None else now - age
    found = idle_since(
        sample, now=now, running_since=running_since, previous=None, threshold_percent=THRESHOLD
    )
    if found is not None:
        assert found <= now
        if running_since is not None:
            assert found >= running_since


# ---- verdict -------------------------------------------------------------------------------

IDLE = NOW - timedelta(minutes=40)
TIMEOUT, WARNING = 30, 5
DUE = IDLE + timedelta(minutes=TIMEOUT)


def _verdict(
    now: datetime,
    *,
    warned_at: datetime | None = None,
    keep_running_until: datetime | None = None,
    idle: datetime | None = IDLE,
    timeout_minutes: int | None = TIMEOUT,
    warning_minutes: int = WARNING,
) -> str:
    return verdict(
        now=now,
        idle_since=idle,
        warned_at=warned_at,
        keep_running_until=keep_running_until,
        timeout_minutes=timeout_minutes,
        warning_minutes=warning_minutes,
    )


def test_a_busy_session_or_one_without_an_idle_timeout_is_left_alone() -> None:
    late = DUE + timedelta(days=1)
    assert _verdict(late, idle=None) == "none"
    assert _verdict(late, timeout_minutes=None) == "none"
    assert _verdict(late, timeout_minutes=0) == "none"
    assert _verdict(late, warned_at=DUE, timeout_minutes=None) == "none"


def test_the_owner_is_warned_from_exactly_the_warning_before_the_timeout() -> None:
    warn_from = DUE - timedelta(minutes=WARNING)
    assert _verdict(warn_from - TICK) == "none"
    assert _verdict(warn_from) == "warn"
    assert _verdict(DUE + timedelta(hours=3)) == "warn"  # never paused without a warning


def test_a_warned_session_is_paused_exactly_at_the_timeout() -> None:
    warned = DUE - timedelta(minutes=WARNING)
    assert _verdict(DUE - TICK, warned_at=warned) == "none"
    assert _verdict(DUE, warned_at=warned) == "pause"


def test_a_late_warning_still_gets_its_full_time() -> None:
    warned = DUE + timedelta(minutes=12)
    ends = warned + timedelta(minutes=WARNING)
    assert _verdict(ends - TICK, warned_at=warned) == "none"
    assert _verdict(ends, warned_at=warned) == "pause"


def test_keep_running_moves_the_warning_and_the_pause_to_its_end() -> None:
    keep = DUE + timedelta(hours=1)
    assert _verdict(DUE, keep_running_until=keep) == "none"
    assert _verdict(keep - timedelta(minutes=WARNING) - TICK, keep_running_until=keep) == "none"
    assert _verdict(keep - timedelta(minutes=WARNING), keep_running_until=keep) == "warn"
    warned = DUE - timedelta(minutes=WARNING)  # warned before the owner asked to keep it
    assert _verdict(keep - TICK, warned_at=warned, keep_running_until=keep) == "none"
    assert _verdict(keep, warned_at=warned, keep_running_until=keep) == "pause"


def test_a_keep_running_that_ends_before_the_timeout_changes_nothing() -> None:
    keep = DUE - timedelta(minutes=20)
    warned = DUE - timedelta(minutes=WARNING)
    assert _verdict(warned - TICK, keep_running_until=keep) == "none"
    assert _verdict(warned, keep_running_until=keep) == "warn"
    assert _verdict(DUE - TICK, warned_at=warned, keep_running_until=keep) == "none"
    assert _verdict(DUE, warned_at=warned, keep_running_until=keep) == "pause"


def test_with_no_warning_time_the_session_is_warned_then_paused_at_the_timeout() -> None:
    assert _verdict(DUE - TICK, warning_minutes=0) == "none"
    assert _verdict(DUE, warning_minutes=0) == "warn"
    assert _verdict(DUE, warned_at=DUE, warning_minutes=0) == "pause"


@given(
    idle=moments,
    after_idle=st.timedeltas(timedelta(0), timedelta(days=2)),
    warned_after_idle=st.none() | st.timedeltas(timedelta(0), timedelta(days=2)),
    keep=st.none() | st.timedeltas(timedelta(days=-1), timedelta(days=2)),
    timeout_minutes=st.integers(1, 24 * 60),
    warning_minutes=st.integers(0, 120),
)
def test_no_session_is_paused_unwarned_early_or_before_its_warning_ran_out(
    idle: datetime,
    after_idle: timedelta,
    warned_after_idle: timedelta | None,
    keep: timedelta | None,
    timeout_minutes: int,
    warning_minutes: int,
) -> None:
    now = idle + after_idle
    warned_at = None if warned_after_idle is None else idle + warned_after_idle
    keep_running_until = None if keep is None else idle + keep
    decided = verdict(
        now=now,
        idle_since=idle,
        warned_at=warned_at,
        keep_running_until=keep_running_until,
        timeout_minutes=timeout_minutes,
        warning_minutes=warning_minutes,
    )
    due = idle + timedelta(minutes=timeout_minutes)
    if keep_running_until is not None:
        due = max(due, keep_running_until)
    warning = timedelta(minutes=warning_minutes)
    if decided == "pause":
        assert warned_at is not None
        assert now >= due
        assert now >= warned_at + warning
    if decided == "warn":
        assert warned_at is None
        assert now >= due - warning
    if decided == "none" and warned_at is None:
        assert now < due - warning
