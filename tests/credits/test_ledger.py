"""The pure ledger arithmetic and amount parsing."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gshare.credits import ledger
from gshare.credits.amounts import (
    MICRO,
    AmountError,
    format_amount,
    hold_amount,
    parse_amount,
)
from gshare.credits.ledger import (
    Draw,
    HoldExhausted,
    InsufficientCredits,
    Lot,
    TakeBackTooLarge,
    Wallet,
)

micro = st.integers(min_value=1, max_value=10**18)


@given(micro)
def test_amounts_round_trip_through_text(value: int) -> None:
    assert parse_amount(format_amount(value)) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [("12.5", 12_500_000), ("0.004167", 4_167), ("1", MICRO), ("007.100000", 7_100_000)],
)
def test_parsing(text: str, value: int) -> None:
    assert parse_amount(text) == value


@pytest.mark.parametrize("text", ["-1", "+1", "0", "0.0000001", "1e3", "abc", "", "NaN", "1_000"])
def test_bad_amounts(text: str) -> None:
    with pytest.raises(AmountError):
        parse_amount(text)


def test_formatting_drops_trailing_zeros_and_keeps_signs() -> None:
    assert [format_amount(v) for v in (12_500_000, 4_167, -3_500_000, 0)] == [
        "12.5",
        "0.004167",
        "-3.5",
        "0",
    ]


def test_a_hold_rounds_up_to_a_whole_micro_credit() -> None:
    assert hold_amount(MICRO, 3600) == MICRO
    assert hold_amount(1, 60) == 1  # a sixtieth of a micro-credit still reserves one


@given(micro, micro, micro)
def test_paying_never_goes_below_available(balance: int, held: int, amount: int) -> None:
    wallet = Wallet(balance + held, held)
    if amount > wallet.available:
        with pytest.raises(InsufficientCredits):
            ledger.pay(wallet, amount)
    else:
        after = ledger.pay(wallet, amount)
        assert after.available == wallet.available - amount
        assert after.held == held


@given(micro, micro)
def test_reserve_then_release_restores_the_wallet(balance: int, amount: int) -> None:
    wallet = Wallet(balance)
    if amount > balance:
        with pytest.raises(InsufficientCredits):
            ledger.reserve(wallet, amount)
        return
    held = ledger.reserve(wallet, amount)
    assert held.available == balance - amount
    assert ledger.release(held, amount) == wallet


def test_capture_takes_from_the_hold_only() -> None:
    wallet, remaining = ledger.capture(Wallet(10, 6), reserved=6, amount=4)
    assert (wallet, remaining) == (Wallet(6, 2), 2)
    with pytest.raises(HoldExhausted):
        ledger.capture(wallet, reserved=2, amount=3)


@given(st.integers(0, 10**12), st.integers(0, 10**12))
def test_settlement_splits_the_hold(reserved: int, used: int) -> None:
    outcome = ledger.settle(reserved, used)
    assert outcome.captured + outcome.released == reserved
    assert outcome.captured + outcome.uncollected == used
    assert min(outcome.captured, outcome.released, outcome.uncollected) >= 0


@pytest.mark.parametrize(
    ("balance", "grant", "source", "expected"),
    [
        (0, 100, None, (100, 0)),  # minted: no limit
        (30, 100, 50, (50, 20)),  # partial, shortfall recorded
        (100, 100, 50, (0, 0)),  # at the grant: left alone
        (150, 100, 50, (0, 0)),  # above the grant: left alone
        (0, 100, 0, (0, 100)),
    ],
)
def test_top_up(balance: int, grant: int, source: int | None, expected: tuple[int, int]) -> None:
    result = ledger.top_up(balance, grant, source)
    assert (result.amount, result.shortfall) == expected


# ---- lots ----------------------------------------------------------------------------------

_funders = [uuid.UUID(int=i) for i in range(1, 6)]
lot_sets = st.lists(
    st.tuples(st.sampled_from(_funders), st.integers(0, 10**6)),
    max_size=5,
    unique_by=lambda t: t[0],
).map(lambda pairs: [Lot(f, a, seq) for seq, (f, a) in enumerate(pairs)])


@given(lot_sets, st.integers(1, 5 * 10**6), st.none() | st.sampled_from(_funders))
def test_spending_draws_exactly_in_the_one_order(
    lots: list[Lot], amount: int, prefer: uuid.UUID | None
) -> None:
    total = sum(lot.amount for lot in lots)
    if amount > total:
        with pytest.raises(InsufficientCredits):
            ledger.draw_spending(lots, amount, prefer)
        return
    draws = ledger.draw_spending(lots, amount, prefer)
    assert sum(d.amount for d in draws) == amount
    after = ledger.after_draws(lots, draws)
    assert sum(lot.amount for lot in after) == total - amount
    assert all(lot.amount >= 0 for lot in after)
    # A lot is touched only once every lot before it in the order is empty.
    ordered = ledger.spending_order(after, prefer)
    left = {lot.funder_id: lot.amount for lot in ordered}
    drawn = {d.funder_id for d in draws}
    for i, lot in enumerate(ordered):
        if lot.funder_id in drawn:
            assert all(left[earlier.funder_id] == 0 for earlier in ordered[:i])
    if prefer is not None and any(lot.funder_id == prefer and lot.amount for lot in lots):
        assert draws[0].funder_id == prefer


def test_spending_takes_the_preferred_lot_then_the_oldest() -> None:
    a, b, c = _funders[:3]
    lots = [Lot(a, 5, 1), Lot(b, 5, 2), Lot(c, 5, 3)]
    assert ledger.draw_spending(lots, 7) == [Draw(a, 5), Draw(b, 2)]
    assert ledger.draw_spending(lots, 7, prefer=c) == [Draw(c, 5), Draw(a, 2)]


@given(lot_sets, st.sampled_from(_funders), st.integers(1, 2 * 10**6))
def test_a_take_back_draws_only_the_takers_lot(
    lots: list[Lot], funder: uuid.UUID, amount: int
) -> None:
    own = sum(lot.amount for lot in lots if lot.funder_id == funder)
    if amount > own:
        with pytest.raises(TakeBackTooLarge):
            ledger.draw_take_back(lots, funder, amount)
        return
    after = ledger.after_draws(lots, ledger.draw_take_back(lots, funder, amount))
    for before, now in zip(lots, after, strict=True):
        expected = before.amount - amount if before.funder_id == funder else before.amount
        assert now.amount == expected


def test_credits_taken_back_return_to_the_takers_own_oldest_lot() -> None:
    org, mint, other = _funders[:3]
    lots = [Lot(other, 0, 7), Lot(mint, 3, 2)]
    assert ledger.receiving_funder(lots, org, take_back=True) == mint
    assert ledger.receiving_funder(lots, org, take_back=False) == org
    assert ledger.receiving_funder([], org, take_back=True) == org


def test_a_draw_beyond_a_lot_is_impossible() -> None:
    a, b = _funders[:2]
    with pytest.raises(ValueError):
        ledger.after_draws([Lot(a, 1, 1)], [Draw(a, 2)])
    with pytest.raises(ValueError):
        ledger.after_draws([Lot(a, 1, 1)], [Draw(b, 1)])
