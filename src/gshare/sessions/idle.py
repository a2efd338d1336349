"""When a GPU session counts as idle, and what to do about it. Pure.

A sample counts as busy when the GPU's utilization is at or above the threshold, or (HAMi) a
kernel ran within the last sampling window. HAMi has no series for a container until its first
kernel: such a session has been idle since it started. Utilization reads 0 for a container
given the whole card, so there only the kernel signal (or DCGM) tells.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

KERNEL_BUSY_SECONDS = 60.0


@dataclass(frozen=True)
class Sample:
    gpu_util_percent: float | None
    last_kernel_seconds: float | None
    has_series: bool


def idle_since(
    sample: Sample,
    *,
    now: datetime,
    running_since: datetime | None,
    previous: datetime | None,
    threshold_percent: float,
) -> datetime | None:
    """Since when the session has been idle given this sample (None: it is busy); `previous`
    is what the last samples said."""
    if not sample.has_series:
        return previous or running_since or now
    if sample.gpu_util_percent is not None and sample.gpu_util_percent >= threshold_percent:
        return None
    if sample.last_kernel_seconds is not None:
        if sample.last_kernel_seconds < KERNEL_BUSY_SECONDS:
            return None
        since = now - timedelta(seconds=sample.last_kernel_seconds)
        if running_since is not None:
            since = max(since, running_since)
        # A kernel after what the last samples said (one came late, or far apart) moves it on.
        return max(previous, since) if previous is not None else since
    if sample.gpu_util_percent is None:
        return previous  # nothing to tell by
    return previous or now


Verdict = Literal["none", "warn", "pause"]


def verdict(
    *,
    now: datetime,
    idle_since: datetime | None,
    warned_at: datetime | None,
    keep_running_until: datetime | None,
    timeout_minutes: int | None,
    warning_minutes: int,
) -> Verdict:
    """Warn the owner `warning_minutes` before the idle timeout is reached; pause once it is
    reached and the warning has had its time (and any keep-running has run out)."""
    if idle_since is None or not timeout_minutes:
        return "none"
    due = idle_since + timedelta(minutes=timeout_minutes)
    if keep_running_until is not None and keep_running_until > due:
        due = keep_running_until
    warning = timedelta(minutes=warning_minutes)
    if warned_at is None:
        return "warn" if now >= due - warning else "none"
    return "pause" if now >= max(due, warned_at + warning) else "none"
