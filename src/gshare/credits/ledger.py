"""Ledger arithmetic on plain integers of micro-credits. Pure: no I/O, no clock.

A wallet has a balance and a held part; what it may spend or give is available = balance - held.
Neither balance, held nor available may go below zero.
"""

from __future__ import annotations

from dataclasses import dataclass

from gshare.kit.errors import Conflict


class InsufficientCredits(Conflict):
    code = "insufficient_credits"
    message = "Not enough available credits."


class BalanceTooLarge(Conflict):
    code = "balance_too_large"
    message = "This would take the wallet's balance beyond what it can hold."


# The largest balance PostgreSQL's bigint holds.
BALANCE_MAX = 2**63 - 1


class HoldExhausted(Conflict):
    code = "hold_exhausted"
    message = "The hold has less reserved than that; extend it first."


@dataclass(frozen=True)
class Wallet:
    balance: int
    held: int = 0

    @property
    def available(self) -> int:
        return self.balance - self.held


def _positive(amount: int) -> None:
    if amount <= 0:
        raise ValueError("ledger amounts are positive")


def pay(wallet: Wallet, amount: int) -> Wallet:
    """Money leaves the wallet: only from what is available."""
    _positive(amount)
    if amount > wallet.available:
        raise InsufficientCredits()
    return Wallet(wallet.balance - amount, wallet.held)


def receive(wallet: Wallet, amount: int) -> Wallet:
    _positive(amount)
    if wallet.balance + amount > BALANCE_MAX:
        raise BalanceTooLarge()
    return Wallet(wallet.balance + amount, wallet.held)


def reserve(wallet: Wallet, amount: int) -> Wallet:
    """A hold takes from available without moving money."""
    _positive(amount)
    if amount > wallet.available:
        raise InsufficientCredits()
    return Wallet(wallet.balance, wallet.held + amount)


def capture(wallet: Wallet, reserved: int, amount: int) -> tuple[Wallet, int]:
    """Spend `amount` out of a hold holding `reserved`; returns the wallet and what stays held."""
    _positive(amount)
    if amount > reserved:
        raise HoldExhausted()
    return Wallet(wallet.balance - amount, wallet.held - amount), reserved - amount


def release(wallet: Wallet, amount: int) -> Wallet:
    if amount < 0 or amount > wallet.held:
        raise ValueError("cannot release more than is held")
    return Wallet(wallet.balance, wallet.held - amount)


@dataclass(frozen=True)
class Settlement:
    captured: int
    released: int
    uncollected: int  # used beyond what the hold reserved; not charged


def settle(reserved: int, used: int) -> Settlement:
    """Split a hold at the end: what was used is captured, the rest released."""
    if used < 0:
        raise ValueError("usage cannot be negative")
    captured = min(used, reserved)
    return Settlement(captured=captured, released=reserved - captured, uncollected=used - captured)


@dataclass(frozen=True)
class TopUp:
    amount: int
    shortfall: int


def top_up(balance: int, grant: int, source_available: int | None) -> TopUp:
    """A monthly refill: bring the balance up to the grant, as far as the source can pay.

    `source_available` is None for a source without limit (minting into an organization).
    A balance at or above the grant is left alone.
    """
    wanted = max(0, grant - balance)
    if source_available is None:
        return TopUp(wanted, 0)
    paid = min(wanted, max(0, source_available))
    return TopUp(paid, wanted - paid)
