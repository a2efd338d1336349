"""Ledger arithmetic on plain integers of micro-credits. Pure: no I/O, no clock.

A wallet has a balance and a held part; what it may spend or give is available = balance - held.
Neither balance, held nor available may go below zero.

A wallet's balance is also split into lots, one per funding wallet (the wallet, or the mint,
that gave it those credits). Invariants:
- the lots of a wallet add up to its balance, and no lot is negative;
- a take-back (credits going back to a wallet that funded this one) draws only that funder's
  lot, so nobody takes back more than they gave and was not spent;
- everything else that leaves a wallet (spending, allocating further down) draws lots in one
  order, `spending_order`: the preferred funder's lot first, then the oldest lot first;
- a draw takes exactly the amount asked, never more than a lot has.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
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


class TakeBackTooLarge(Conflict):
    code = "take_back_too_large"
    message = "A wallet can take back only what it gave and has not been spent or taken back."


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


@dataclass(frozen=True)
class Lot:
    """Credits in a wallet that one funder gave; `seq` orders lots from oldest to newest."""

    funder_id: uuid.UUID
    amount: int
    seq: int


@dataclass(frozen=True)
class Draw:
    """What a movement takes from one lot."""

    funder_id: uuid.UUID
    amount: int


def spending_order(lots: Sequence[Lot], prefer: uuid.UUID | None = None) -> list[Lot]:
    """The one order in which spending draws lots: `prefer`'s lot first, then oldest first."""
    return sorted(lots, key=lambda lot: (lot.funder_id != prefer, lot.seq))


def draw_spending(lots: Sequence[Lot], amount: int, prefer: uuid.UUID | None = None) -> list[Draw]:
    """Draw `amount` across lots in spending order; each lot is emptied before the next."""
    _positive(amount)
    draws: list[Draw] = []
    left = amount
    for lot in spending_order(lots, prefer):
        if left == 0:
            break
        take = min(left, lot.amount)
        if take > 0:
            draws.append(Draw(lot.funder_id, take))
            left -= take
    if left:
        raise InsufficientCredits()
    return draws


def draw_take_back(lots: Sequence[Lot], funder_id: uuid.UUID, amount: int) -> list[Draw]:
    """A take-back by `funder_id` draws its own lot only."""
    _positive(amount)
    own = sum(lot.amount for lot in lots if lot.funder_id == funder_id)
    if amount > own:
        raise TakeBackTooLarge()
    return [Draw(funder_id, amount)]


def receiving_funder(lots: Sequence[Lot], giver_id: uuid.UUID, *, take_back: bool) -> uuid.UUID:
    """Which lot of the receiving wallet grows: the giver's, except on a take-back, where the
    credits return to the receiver's own oldest lot (an organization's minted lot, the lot a
    group's organization gave). A receiver with no lot at all keeps them under the giver."""
    if take_back and lots:
        return spending_order(lots)[0].funder_id
    return giver_id


def after_draws(lots: Sequence[Lot], draws: Sequence[Draw]) -> list[Lot]:
    """The lots once `draws` are taken out; a lot a draw does not name is left alone."""
    taken: dict[uuid.UUID, int] = {}
    for d in draws:
        taken[d.funder_id] = taken.get(d.funder_id, 0) + d.amount
    out = [Lot(lot.funder_id, lot.amount - taken.pop(lot.funder_id, 0), lot.seq) for lot in lots]
    if taken or any(lot.amount < 0 for lot in out):
        raise ValueError("a draw takes more than its lot has")
    return out
