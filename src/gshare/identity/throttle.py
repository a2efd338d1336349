"""How long a sign-in must wait, given when recent attempts failed. Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta

# (window, most failures allowed in it)
ACCOUNT_LIMITS = ((timedelta(minutes=1), 10), (timedelta(hours=1), 100))
CLIENT_LIMITS = ((timedelta(minutes=1), 30), (timedelta(hours=1), 300))
LONGEST_WINDOW = timedelta(hours=1)


def wait_seconds(
    failures: Sequence[datetime],
    now: datetime,
    limits: Sequence[tuple[timedelta, int]],
) -> int:
    """Seconds until another attempt is allowed; 0 when it is allowed now.

    `failures` are sorted oldest first. When a window already holds its limit, the next attempt
    waits until the oldest failure that counts toward the limit falls out of the window.
    """
    wait = 0.0
    for window, limit in limits:
        recent = [t for t in failures if t > now - window]
        if len(recent) >= limit:
            frees_at = recent[len(recent) - limit] + window
            wait = max(wait, (frees_at - now).total_seconds())
    return math.ceil(wait) if wait > 0 else 0
