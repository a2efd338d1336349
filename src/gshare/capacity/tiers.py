"""Tiers per GPU model: what a session of each tier gets and costs. Pure: no I/O.

A tier is a fraction 1/n of a card, the whole card (`exclusive`), or one MIG profile. Invariants:
- a fraction 1/n has 2 <= n <= the card's split_count; its VRAM is the card's memory / n rounded
  down to a whole MiB, at least 1, and its compute share 100 / n percent rounded down, at
  least 1;
- `exclusive` gets all of the card's memory and 100 percent;
- a MIG tier gets its profile's memory and compute_slices / 7 of the compute, rounded down, at
  least 1 percent;
- prices are integer micro-credits per hour, never negative. The default is the exclusive price x
  the share (1/n, or compute_slices / 7) rounded UP to a whole micro-credit, so a card carved
  into any tier never earns less per hour than the same card taken whole; an override replaces it;
- a tier set names each tier once (two spellings of one MIG geometry are one tier).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from gshare.capacity.mig import COMPUTE_SLICES, geometry_for


class TierKind(StrEnum):
    FRACTION = "fraction"
    EXCLUSIVE = "exclusive"
    MIG = "mig"


@dataclass(frozen=True)
class CardModel:
    name: str
    memory_mib: int
    split_count: int
    exclusive_price: int  # micro-credits per hour for the whole card


@dataclass(frozen=True)
class TierSpec:
    """What an admin asks for; `price` overrides the default when set."""

    kind: TierKind
    denominator: int | None = None
    mig_profile: str | None = None
    price: int | None = None


@dataclass(frozen=True)
class Tier:
    model: str
    name: str
    kind: TierKind
    vram_mib: int
    compute_percent: int
    price: int
    price_is_default: bool
    denominator: int | None = None
    mig_profile: str | None = None


@dataclass(frozen=True)
class TierSetAccepted:
    tiers: tuple[Tier, ...]


@dataclass(frozen=True)
class TierSetRefused:
    reasons: tuple[str, ...]


TierSetDecision = TierSetAccepted | TierSetRefused


def fraction(n: int) -> TierSpec:
    return TierSpec(TierKind.FRACTION, denominator=n)


def exclusive() -> TierSpec:
    return TierSpec(TierKind.EXCLUSIVE)


def mig(profile: str) -> TierSpec:
    return TierSpec(TierKind.MIG, mig_profile=profile)


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


def default_price(card: CardModel, share_numerator: int, share_denominator: int) -> int:
    return _ceil_div(card.exclusive_price * share_numerator, share_denominator)


def _card_reasons(card: CardModel) -> list[str]:
    reasons = []
    if card.memory_mib <= 0:
        reasons.append(f"{card.name} must have some memory.")
    if card.split_count < 1:
        reasons.append(f"{card.name}'s split count must be at least 1.")
    if card.exclusive_price < 0:
        reasons.append(f"{card.name}'s exclusive price cannot be negative.")
    return reasons


def _build(card: CardModel, spec: TierSpec) -> Tier | str:
    if spec.price is not None and spec.price < 0:
        return "A price cannot be negative."
    if spec.kind is TierKind.EXCLUSIVE:
        return Tier(
            model=card.name,
            name="exclusive",
            kind=spec.kind,
            vram_mib=card.memory_mib,
            compute_percent=100,
            price=card.exclusive_price if spec.price is None else spec.price,
            price_is_default=spec.price is None,
        )
    if spec.kind is TierKind.FRACTION:
        n = spec.denominator
        if n is None or not 2 <= n <= card.split_count:
            return (
                f"A fraction of {card.name} is 1/n with n from 2 to its split count "
                f"{card.split_count}; got {n}."
            )
        if card.memory_mib // n < 1:
            return f"1/{n} of {card.name}'s {card.memory_mib} MiB is less than one MiB."
        return Tier(
            model=card.name,
            name=f"1/{n}",
            kind=spec.kind,
            vram_mib=card.memory_mib // n,
            compute_percent=max(1, 100 // n),
            price=default_price(card, 1, n) if spec.price is None else spec.price,
            price_is_default=spec.price is None,
            denominator=n,
        )
    geometry = geometry_for(card.name)
    if geometry is None:
        return f"{card.name} has no MIG geometry, so it has no MIG tiers."
    profile = geometry.profile(spec.mig_profile or "")
    if profile is None:
        return f"{card.name} has no MIG profile {spec.mig_profile!r}."
    return Tier(
        model=card.name,
        name=f"mig-{profile.name}",
        kind=spec.kind,
        vram_mib=profile.memory_mib,
        compute_percent=max(1, 100 * profile.compute_slices // COMPUTE_SLICES),
        price=(
            default_price(card, profile.compute_slices, COMPUTE_SLICES)
            if spec.price is None
            else spec.price
        ),
        price_is_default=spec.price is None,
        mig_profile=profile.name,
    )


def tier_set(card: CardModel, specs: Sequence[TierSpec]) -> TierSetDecision:
    """Build every tier of `card`, or refuse with every reason found, in the order given."""
    reasons = _card_reasons(card)
    if reasons:
        return TierSetRefused(tuple(reasons))
    tiers: list[Tier] = []
    seen: set[str] = set()
    for spec in specs:
        built = _build(card, spec)
        if isinstance(built, str):
            reasons.append(built)
        elif built.name in seen:
            reasons.append(f"{card.name} already has the tier {built.name}.")
        else:
            seen.add(built.name)
            tiers.append(built)
    if reasons:
        return TierSetRefused(tuple(reasons))
    return TierSetAccepted(tuple(tiers))


def allocations_per_card(tier: Tier, split_count: int) -> int:
    """How many sessions of `tier` one card holds at most; a MIG tier's depends on the layout."""
    if tier.kind is TierKind.FRACTION and tier.denominator is not None:
        return max(0, min(tier.denominator, split_count))
    if tier.kind is TierKind.EXCLUSIVE:
        return 1
    raise ValueError("a MIG tier's count comes from the card's MIG layout")
