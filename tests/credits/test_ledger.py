"""The pure ledger arithmetic and amount parsing."""

from __future__ import annotations

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
from gshare.credits.ledger import HoldExhausted, InsufficientCredits, Wallet

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
