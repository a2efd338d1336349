"""How a session's utilization samples are thinned with age, and how its charges are binned,
so that what is kept and shown of a session stays bounded however long it runs. Pure.

Tiers, by a point's age (how long before `now` it was taken):

- the last hour: at most one point per 10 s, which is every report at the operator's default
  interval of 30 s;
- an hour to a day old: one point per 5 minutes;
- older: one point per `older_width(since, now)`: an hour, doubled as often as needed to keep
  that part of the session's life within `OLDER_BUCKETS` points.

Buckets are aligned to the Unix epoch and every width divides the next coarser one, so a bucket
lies inside one bucket of each coarser tier: points merged once merge again cleanly as they age.
A bucket's points become one point at the time of its newest point (no time is invented, so a
merged point never collides with another, and the newest point keeps its time), carrying:

- GPU utilization: the mean, weighted by how many samples each point stands for;
- VRAM used: the peak, since what matters against the tier's limit is how close it came;
- samples: how many reports it stands for, in total.

Invariants, for points taken from `since` to `now`:

- at most `MAX_POINTS` points come out, whatever the session's length;
- the newest point's time is kept, and points in the last hour at least 10 s apart are kept
  as they are;
- the samples add up to the same total and the peak VRAM is kept; each point's utilization
  lies within those it stands for (and where every point has one, the mean weighted by
  samples is unchanged);
- thinning what was thinned (at the same `now`) changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
RECENT = timedelta(hours=1)
RECENT_WIDTH = timedelta(seconds=10)
DAY = timedelta(days=1)
DAY_WIDTH = timedelta(minutes=5)
OLDER_WIDTH = timedelta(hours=1)
OLDER_BUCKETS = 168
# Buckets meeting each tier's span, counted generously: a span of n widths meets n + 1 buckets.
MAX_POINTS = RECENT // RECENT_WIDTH + 1 + (DAY - RECENT) // DAY_WIDTH + 1 + OLDER_BUCKETS + 2
# The operator reports at most every 5 s; closer reports of a session keep no point.
MIN_SPACING = timedelta(seconds=5)

# Charges are binned to one of these widths, the smallest that keeps the series within
# COST_POINTS points (beyond the last, hours doubled).
COST_WIDTHS = (
    timedelta(minutes=1),
    timedelta(minutes=5),
    timedelta(minutes=15),
    timedelta(hours=1),
)
COST_POINTS = 240


@dataclass(frozen=True)
class Point:
    """What a session's GPU did at `at`, standing for `samples` reports."""

    at: datetime
    gpu_util_percent: float | None
    vram_used_mib: int | None
    samples: int = 1


def older_width(since: datetime, now: datetime) -> timedelta:
    """The bucket width for points older than a day, for a session that began at `since`."""
    span = now - DAY - since
    width = OLDER_WIDTH
    while span > width * OLDER_BUCKETS:
        width *= 2
    return width


def _bucket(at: datetime, since: datetime, now: datetime) -> tuple[int, int]:
    """(tier, bucket number) of a point taken at `at`."""
    age = now - at
    if age < RECENT:
        return 0, (at - EPOCH) // RECENT_WIDTH
    if age < DAY:
        return 1, (at - EPOCH) // DAY_WIDTH
    return 2, (at - EPOCH) // older_width(since, now)


def merge(points: Iterable[Point]) -> Point:
    """One point for several: at the newest one's time, the weighted mean utilization, the peak
    VRAM and the samples' total."""
    group = list(points)
    newest = max(group, key=lambda p: p.at)
    weighed = [p for p in group if p.gpu_util_percent is not None]
    weight = sum(p.samples for p in weighed)
    util = (
        sum(p.gpu_util_percent * p.samples for p in weighed if p.gpu_util_percent is not None)
        / weight
        if weight
        else None
    )
    vrams = [p.vram_used_mib for p in group if p.vram_used_mib is not None]
    return Point(
        at=newest.at,
        gpu_util_percent=util,
        vram_used_mib=max(vrams) if vrams else None,
        samples=sum(p.samples for p in group),
    )


def thin(points: Iterable[Point], *, since: datetime, now: datetime) -> list[Point]:
    """The points to keep of a session that began at `since`, as of `now` (its end, once it has
    ended), oldest first. A bucket holding one point keeps it as it is."""
    buckets: dict[tuple[int, int], list[Point]] = {}
    for point in points:
        buckets.setdefault(_bucket(point.at, since, now), []).append(point)
    kept = [group[0] if len(group) == 1 else merge(group) for group in buckets.values()]
    return sorted(kept, key=lambda p: p.at)


def cost_width(since: datetime, until: datetime) -> timedelta:
    """The width to bin a session's charges by, from `since` to `until`: the series stays
    within COST_POINTS points."""
    span = until - since
    for width in COST_WIDTHS:
        if span <= width * COST_POINTS:
            return width
    width = COST_WIDTHS[-1]
    while span > width * COST_POINTS:
        width *= 2
    return width
