"""What a session owes for the GPU time it held. Pure.

A session is billed from the moment it is allocated a card (`billed_from`) until the card is
released, at the price per hour it was admitted at, to the whole second. What it owes is always
computed from `billed_from`, never added up tick by tick, so rounding never drifts: after any
number of captures, the total captured for an allocation is `owed(price, billed_from, t)` for the
last `t` metered, to the micro-credit.

Metering records how far each allocation has been billed (`metered_until`) in the same
transaction as the capture, so a capture happens once per second of use whatever crashes or
runs twice: the next capture starts where the last committed one ended.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

SECONDS_PER_HOUR = 3600


def whole_seconds(start: datetime, end: datetime) -> int:
    """Whole seconds from `start` to `end` (0 when `end` is not after `start`)."""
    return max(0, int((end - start) // timedelta(seconds=1)))


def owed(price_per_hour: int, billed_from: datetime, until: datetime) -> int:
    """Micro-credits owed for holding the card from `billed_from` to `until`."""
    return price_per_hour * whole_seconds(billed_from, until) // SECONDS_PER_HOUR


def metered_point(billed_from: datetime, now: datetime) -> datetime:
    """The last whole second after `billed_from` that is not after `now`: how far a capture at
    `now` bills."""
    return billed_from + timedelta(seconds=whole_seconds(billed_from, now))


@dataclass(frozen=True)
class Capture:
    amount: int  # micro-credits to capture now
    until: datetime  # the new metered_until


def capture(
    price_per_hour: int, billed_from: datetime, metered_until: datetime, now: datetime
) -> Capture:
    """What to capture at `now` for an allocation metered through `metered_until`."""
    until = max(metered_point(billed_from, now), metered_until)
    amount = owed(price_per_hour, billed_from, until) - owed(
        price_per_hour, billed_from, metered_until
    )
    return Capture(amount, until)


def needs_more(reserved: int, price_per_hour: int, lead_seconds: int) -> bool:
    """Whether a hold with `reserved` left would run out within `lead_seconds` of use."""
    return reserved < price_per_hour * lead_seconds // SECONDS_PER_HOUR + 1
