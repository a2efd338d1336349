"""Tiers per GPU model: VRAM, compute share, default and overridden prices, tier-set validation."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gshare.capacity.tiers import (
    CardModel,
    Tier,
    TierKind,
    TierSetAccepted,
    TierSetRefused,
    TierSpec,
    allocations_per_card,
    exclusive,
    fraction,
    mig,
    tier_set,
)

CREDIT = 1_000_000  # micro-credits


@dataclass(frozen=True)
class CardBuilder:
    """`card(model="A100-80GB").priced(7).split(10)`: a card model for tests."""

    model: CardModel

    def priced(self, credits_per_hour: float) -> CardBuilder:
        return CardBuilder(replace(self.model, exclusive_price=int(credits_per_hour * CREDIT)))

    def split(self, split_count: int) -> CardBuilder:
        return CardBuilder(replace(self.model, split_count=split_count))

    def tiers(self, *specs: TierSpec) -> tuple[Tier, ...]:
        decision = tier_set(self.model, specs)
        assert isinstance(decision, TierSetAccepted), decision
        return decision.tiers

    def refused(self, *specs: TierSpec) -> tuple[str, ...]:
        decision = tier_set(self.model, specs)
        assert isinstance(decision, TierSetRefused), decision
        return decision.reasons


MEMORY = {"A100-40GB": 40_960, "A100-80GB": 81_920, "H100-80GB": 81_559, "L4": 23_034}


def card(model: str = "A100-80GB") -> CardBuilder:
    return CardBuilder(CardModel(model, MEMORY[model], split_count=10, exclusive_price=8 * CREDIT))


def test_fraction_exclusive_and_mig_tiers_of_an_a100_80gb() -> None:
    assert card().priced(7).tiers(fraction(4), exclusive(), mig("3g.40gb")) == (
        Tier("A100-80GB", "1/4", TierKind.FRACTION, 20_480, 25, 1_750_000, True, denominator=4),
        Tier("A100-80GB", "exclusive", TierKind.EXCLUSIVE, 81_920, 100, 7_000_000, True),
        Tier(
            "A100-80GB",
            "mig-3g.40gb",
            TierKind.MIG,
            40_192,
            42,
            3_000_000,
            True,
            mig_profile="3g.40gb",
        ),
    )


def test_vram_is_rounded_down_and_compute_floored() -> None:
    (third,) = card("H100-80GB").tiers(fraction(3))
    assert (third.vram_mib, third.compute_percent) == (27_186, 33)


def test_default_price_rounds_up_to_a_whole_micro_credit() -> None:
    (third,) = card().priced(1).tiers(fraction(3))
    assert third.price == 333_334
    (one_g,) = card().priced(1).tiers(mig("1g.10gb"))
    assert one_g.price == 142_858
    assert one_g.compute_percent == 14


def test_an_overridden_price_replaces_the_default() -> None:
    (half, whole) = card().tiers(
        TierSpec(TierKind.FRACTION, denominator=2, price=5 * CREDIT),
        TierSpec(TierKind.EXCLUSIVE, price=0),
    )
    assert (half.price, half.price_is_default) == (5 * CREDIT, False)
    assert (whole.price, whole.price_is_default) == (0, False)


def test_the_two_spellings_of_one_mig_profile_are_one_tier() -> None:
    assert card().refused(mig("7g.80gb"), mig("7g.79gb")) == (
        "A100-80GB already has the tier mig-7g.80gb.",
    )
    (full,) = card().tiers(mig("7g.79gb"))
    assert full.name == "mig-7g.80gb"


def test_invalid_tier_sets_are_refused_with_every_reason() -> None:
    assert card().split(4).refused(
        fraction(4),
        fraction(4),
        fraction(8),
        fraction(1),
        mig("1g.5gb"),
        TierSpec(TierKind.EXCLUSIVE, price=-1),
    ) == (
        "A100-80GB already has the tier 1/4.",
        "A fraction of A100-80GB is 1/n with n from 2 to its split count 4; got 8.",
        "A fraction of A100-80GB is 1/n with n from 2 to its split count 4; got 1.",
        "A100-80GB has no MIG profile '1g.5gb'.",
        "A price cannot be negative.",
    )


def test_a_card_without_mig_has_no_mig_tiers() -> None:
    assert card("L4").refused(mig("1g.10gb")) == (
        "L4 has no MIG geometry, so it has no MIG tiers.",
    )


def test_a_fraction_tier_holds_at_most_split_count_allocations() -> None:
    (eighth, whole) = card().tiers(fraction(8), exclusive())
    assert allocations_per_card(eighth, 10) == 8
    assert allocations_per_card(eighth, 5) == 5
    assert allocations_per_card(whole, 10) == 1
    (one_g,) = card().tiers(mig("1g.10gb"))
    with pytest.raises(ValueError):
        allocations_per_card(one_g, 10)


@given(
    memory=st.integers(1, 200_000),
    split_count=st.integers(2, 64),
    price=st.integers(0, 10**12),
    data=st.data(),
)
def test_a_fraction_tier_never_exceeds_its_share(
    memory: int, split_count: int, price: int, data: st.DataObject
) -> None:
    n = data.draw(st.integers(2, split_count))
    model = CardModel("X", memory, split_count, price)
    decision = tier_set(model, [fraction(n)])
    if memory < n:  # under one MiB each: no such tier
        assert isinstance(decision, TierSetRefused)
        return
    assert isinstance(decision, TierSetAccepted)
    (tier,) = decision.tiers
    assert tier.vram_mib * n <= memory < (tier.vram_mib + 1) * n
    assert tier.compute_percent == max(1, 100 // n)
    # Carved whole, the card earns at least its exclusive price and less than one extra
    # micro-credit per slot.
    assert price <= tier.price * n < price + n
