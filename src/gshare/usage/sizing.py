"""Right-sizing: from the peak VRAM of a user's recent sessions of one image and tier, whether a
cheaper tier of the same model would have held them, and whether they came close to the limit.
Pure.

A smaller tier is suggested only from enough sessions (`FEWEST`), and only when its VRAM holds
the highest peak among them with `HEADROOM` to spare; of those, the cheapest (then the one with
the least VRAM). A session came close to its limit when its peak reached `NEAR_LIMIT` of it.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from gshare.credits.amounts import format_amount

LOOKED_AT = 8  # the most recent sessions looked at
FEWEST = 3
HEADROOM = 1.2
NEAR_LIMIT = 0.9
MIB_PER_GIB = 1024


@dataclass(frozen=True)
class TierChoice:
    id: uuid.UUID
    model: str
    name: str
    vram_mib: int
    price_per_hour: int  # micro-credits


@dataclass(frozen=True)
class Peak:
    """A session's highest VRAM use and the limit it ran under, in MiB."""

    peak_mib: int
    limit_mib: int


@dataclass(frozen=True)
class Sizing:
    sessions: int
    peak_mib: int | None
    smaller: TierChoice | None
    near_limit: int  # sessions that reached NEAR_LIMIT of their limit
    in_words: str | None


def _gib(mib: int) -> str:
    return f"{mib / MIB_PER_GIB:,.1f}".removesuffix(".0") + " GiB"


def _price_words(smaller: TierChoice, current: TierChoice) -> str:
    if current.price_per_hour <= 0:
        return "at the same price"
    ratio = Fraction(smaller.price_per_hour, current.price_per_hour)
    named = {Fraction(1, 2): "half", Fraction(1, 4): "a quarter of", Fraction(1, 8): "an eighth of"}
    if ratio in named:
        return f"at {named[ratio]} the price"
    if smaller.price_per_hour == 0:
        return "for free"
    return (
        f"for {format_amount(smaller.price_per_hour)} credits an hour instead of "
        f"{format_amount(current.price_per_hour)}"
    )


def advise(peaks: Sequence[Peak], current: TierChoice, choices: Sequence[TierChoice]) -> Sizing:
    """What the peaks of the recent sessions on `current` say, among the tiers the user may
    choose (`choices`, any model: only the same model's count)."""
    if not peaks:
        return Sizing(0, None, None, 0, None)
    highest = max(p.peak_mib for p in peaks)
    near = sum(1 for p in peaks if p.limit_mib > 0 and p.peak_mib >= NEAR_LIMIT * p.limit_mib)
    on = f"{current.name} {current.model}"
    fitting = [
        c
        for c in choices
        if c.model == current.model
        and c.id != current.id
        and c.price_per_hour < current.price_per_hour
        and c.vram_mib >= highest * HEADROOM
        and c.vram_mib < current.vram_mib
    ]
    smaller = min(fitting, key=lambda c: (c.price_per_hour, c.vram_mib), default=None)
    if len(peaks) < FEWEST:
        smaller = None
    counted = f"your last {len(peaks)} sessions" if len(peaks) > 1 else "your last session"
    words = None
    if near:
        words = (
            f"{near} of {counted} on {on} came within {1 - NEAR_LIMIT:.0%} of its "
            f"{_gib(current.vram_mib)} limit: a tier with more memory would give them room."
        )
        smaller = None
    elif smaller is not None:
        words = (
            f"{counted[0].upper()}{counted[1:]} on {on} peaked at {_gib(highest)}: "
            f"{smaller.name} {smaller.model} would have fitted, "
            f"{_price_words(smaller, current)}."
        )
    return Sizing(len(peaks), highest, smaller, near, words)
