"""The arithmetic of the usage rollup: what one span of a GPU allocation adds to each hour. Pure.

The worker rolls every GPU allocation forward from where it was rolled to (its `Mark`) to a
target time, a batch of allocations per transaction that also moves their marks, so a span is
counted exactly once whatever crashes. A span is cut at UTC hour boundaries into `Piece`s:

- held seconds: the wall time of the piece; GPU seconds: the same times the allocation's share
  of its card (a quarter card held for an hour is a quarter of a GPU-hour);
- credits: what metering owes through the piece's end, less what was counted before it, where
  what metering owes is capped by what the allocation's hold has captured: the credits of all
  pieces of an allocation add up to its hold's captures, to the micro-credit;
- from the utilization samples taken in the span: each sample stands for the time since the
  sample before it (or the allocation's start), at most `MAX_SAMPLE_SPAN`, in the hour it was
  taken. Measured seconds add those times; idle GPU seconds those whose utilization was under
  the idle threshold (times the share); VRAM·seconds weigh each sample's VRAM by its time, and
  the peak is the highest VRAM seen.

Invariants: the held seconds of the pieces add up to the span; rolling a span in several steps
gives the same totals as in one; credits never go beyond the captures, nor below what was
counted already.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from gshare.sessions.metering import owed
from gshare.sessions.thinning import Point

HOUR = timedelta(hours=1)
# A sample stands for at most this long: a gap in the reports (a cluster cut off) is time not
# measured, not time at the last utilization seen.
MAX_SAMPLE_SPAN = timedelta(minutes=2)


@dataclass(frozen=True)
class Mark:
    """How far an allocation has been rolled up: through `until`, `credits` counted, and the
    time of the last sample counted (None: none yet)."""

    until: datetime
    credits: int = 0
    sample_at: datetime | None = None


@dataclass(frozen=True)
class Span:
    """An allocation to roll from its mark to `target`."""

    admitted_at: datetime
    price_per_hour: int
    share: float  # of the card: compute percent / 100
    captured: int | None  # what its hold has captured; None: no hold (a free tier)
    mark: Mark
    target: datetime


@dataclass
class Piece:
    """What a span adds to one hour."""

    hour: datetime
    held_seconds: float = 0.0
    gpu_seconds: float = 0.0
    idle_gpu_seconds: float = 0.0
    measured_seconds: float = 0.0
    credits: int = 0
    vram_peak_mib: int | None = None
    vram_mib_seconds: float = 0.0


def hour_of(at: datetime) -> datetime:
    return at.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def roll(
    span: Span, samples: Sequence[Point], idle_threshold_percent: float
) -> tuple[list[Piece], Mark]:
    """The pieces `span` adds, oldest first, and the allocation's new mark. `samples` are those
    taken after the mark's last sample and no later than the target, in any order."""
    start, end = span.mark.until, span.target
    if end <= start:
        return [], span.mark
    pieces: dict[datetime, Piece] = {}
    counted = span.mark.credits
    at = start
    while at < end:
        stop = min(hour_of(at) + HOUR, end)
        piece = pieces[hour_of(at)] = Piece(hour_of(at))
        seconds = (stop - at).total_seconds()
        piece.held_seconds, piece.gpu_seconds = seconds, seconds * span.share
        if span.captured is not None:
            through = min(owed(span.price_per_hour, span.admitted_at, stop), span.captured)
            piece.credits = max(through - counted, 0)
            counted = max(counted, through)
        at = stop
    previous = span.mark.sample_at or span.admitted_at
    last_sample = span.mark.sample_at
    for sample in sorted(samples, key=lambda s: s.at):
        if not previous < sample.at <= end:
            continue
        stands_for = min(sample.at - previous, MAX_SAMPLE_SPAN).total_seconds()
        previous = last_sample = sample.at
        # A sample tells of the time before it: one taken on the hour belongs to the hour before.
        hour = hour_of(sample.at - timedelta(microseconds=1))
        piece = pieces.setdefault(hour, Piece(hour))  # an earlier hour, for one that came late
        piece.measured_seconds += stands_for
        if sample.gpu_util_percent is not None and sample.gpu_util_percent < idle_threshold_percent:
            piece.idle_gpu_seconds += stands_for * span.share
        if sample.vram_used_mib is not None:
            piece.vram_mib_seconds += stands_for * sample.vram_used_mib
            if piece.vram_peak_mib is None or sample.vram_used_mib > piece.vram_peak_mib:
                piece.vram_peak_mib = sample.vram_used_mib
    ordered = sorted(pieces.values(), key=lambda p: p.hour)
    return ordered, Mark(end, counted, last_sample)
