"""Wallet alerts: when a wallet's owner (or, for a group's or organization's wallet, its admins)
is told that credits run low. Pure.

An alert has up to two thresholds: a balance (`below`, micro-credits) and a runway in hours at
the rate the wallet's running sessions are billed now (`runway_hours`; personal wallets only,
as only they are billed). Each is told once when crossed, and armed again once the wallet is
back above it (credits came in, or sessions stopped), so a wallet hovering at its threshold
tells once per crossing, never once per tick.

The runway counts the balance, as the console's runway does: what is held is reserved for the
very sessions that will spend it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

# The largest threshold one can set: the ledger's amounts fit far above it, and no wallet is
# meant to warn at a trillion credits.
MOST_BELOW = 10**12 * 1_000_000
MOST_RUNWAY_HOURS = 24 * 366


@dataclass(frozen=True)
class Alert:
    below: int | None
    runway_hours: int | None
    below_told_at: datetime | None = None
    runway_told_at: datetime | None = None


@dataclass(frozen=True)
class Reading:
    """A wallet as the tick reads it: its balance and the hourly rate of its open holds."""

    balance: int
    burn_per_hour: int


@dataclass(frozen=True)
class Decision:
    tell_below: bool = False
    tell_runway: bool = False
    below_told_at: datetime | None = None
    runway_told_at: datetime | None = None


def runway_hours(reading: Reading) -> float | None:
    """Hours the balance lasts at the burn rate; None when nothing is billed."""
    if reading.burn_per_hour <= 0:
        return None
    return max(reading.balance, 0) / reading.burn_per_hour


def decide(alert: Alert, reading: Reading, now: datetime) -> Decision:
    """What to tell, and the alert's told-at times after this reading."""
    low = alert.below is not None and reading.balance < alert.below
    hours = runway_hours(reading)
    short = alert.runway_hours is not None and hours is not None and hours < alert.runway_hours
    tell_below = low and alert.below_told_at is None
    tell_runway = short and alert.runway_told_at is None
    return Decision(
        tell_below=tell_below,
        tell_runway=tell_runway,
        below_told_at=(now if tell_below else alert.below_told_at) if low else None,
        runway_told_at=(now if tell_runway else alert.runway_told_at) if short else None,
    )
