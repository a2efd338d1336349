"""A Hypothesis state machine drives the ledger on the real database and compares every step
with a plain model of balances, lots by funder, holds and totals."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    rule,
)
from sqlalchemy.ext.asyncio import AsyncSession

from gshare.credits import invariants, operations, repository
from gshare.credits.amounts import hold_amount
from gshare.credits.ledger import HoldExhausted, InsufficientCredits, TakeBackTooLarge
from gshare.credits.models import CreditAccount
from gshare.credits.operations import HoldResolved
from gshare.kit.db import make_engine, make_sessionmaker
from gshare.kit.embedded_db import EmbeddedPostgres, drop_database, ensure_database
from tests.conftest import TEMPLATE

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
_numbers = itertools.count()
T = TypeVar("T")
SERVER: dict[str, EmbeddedPostgres] = {}
amounts = st.integers(min_value=1, max_value=3_000_000)


class LedgerMachine(RuleBasedStateMachine):
    holds = Bundle("holds")

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        server = SERVER["pg"]
        self.name = f"stateful_{next(_numbers)}"
        self.run(ensure_database(server.url(), self.name, template=TEMPLATE))
        self.engine = make_engine(server.url(self.name), pool_size=2)
        self.sessions = make_sessionmaker(self.engine)
        self.balance: dict[uuid.UUID, int] = {}
        self.held: dict[uuid.UUID, int] = {}
        self.reserved: dict[uuid.UUID, int] = {}  # open holds
        self.hold_wallet: dict[uuid.UUID, uuid.UUID] = {}
        self.hold_group: dict[uuid.UUID, uuid.UUID | None] = {}
        # wallet -> funder -> amount, funders in the order they first gave (oldest first)
        self.lots: dict[uuid.UUID, dict[uuid.UUID, int]] = {}
        self.minted = 0
        self.consumed = 0

    def run(self, coro: Awaitable[T]) -> T:
        return self.loop.run_until_complete(coro)

    def teardown(self) -> None:
        self.run(self.engine.dispose())
        self.run(drop_database(SERVER["pg"].url(), self.name))
        self.loop.close()

    def tx(self, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
        async def go() -> T:
            async with self.sessions() as db, db.begin():
                return await work(db)

        return self.run(go())

    def available(self, wallet: uuid.UUID) -> int:
        return self.balance[wallet] - self.held[wallet]

    def spend(self, wallet: uuid.UUID, amount: int, prefer: uuid.UUID | None = None) -> None:
        """The documented order: the preferred funder's lot, then the oldest."""
        lots = self.lots[wallet]
        order = sorted(lots, key=lambda f: f != prefer)  # stable: oldest first otherwise
        for funder in order:
            take = min(amount, lots[funder])
            lots[funder] -= take
            amount -= take
        assert amount == 0

    def give(self, wallet: uuid.UUID, funder: uuid.UUID, amount: int) -> None:
        self.lots[wallet][funder] = self.lots[wallet].get(funder, 0) + amount

    @initialize()
    def wallets(self) -> None:
        async def create(db: AsyncSession) -> list[uuid.UUID]:
            return [
                await repository.account_id(db, kind, uuid.uuid4(), NOW)
                for kind in ("org", "group", "group", "user", "user")
            ] + [await repository.account_id(db, "mint", None, NOW)]

        self.org, self.group, self.group2, self.alice, self.bob, self.mint_account = self.tx(create)
        for wallet in (self.org, self.group, self.group2, self.alice, self.bob):
            self.balance[wallet], self.held[wallet] = 0, 0
            self.lots[wallet] = {}
        # Alice is in both groups, so her wallet holds lots from two funders.
        self.pairs = [
            (self.org, self.group),
            (self.org, self.group2),
            (self.group, self.alice),
            (self.group, self.bob),
            (self.group2, self.alice),
        ]

    @rule(amount=st.integers(min_value=1, max_value=20_000_000))
    def mint(self, amount: int) -> None:
        self.tx(lambda s: operations.mint(s, wallet_id=self.org, amount=amount, now=NOW))
        self.balance[self.org] += amount
        self.give(self.org, self.mint_account, amount)
        self.minted += amount

    @rule(pair=st.integers(0, 4), down=st.booleans(), amount=amounts)
    def transfer(self, pair: int, down: bool, amount: int) -> None:
        parent, child = self.pairs[pair]
        source, target = (parent, child) if down else (child, parent)
        kind = "allocation" if down else "return"
        ok = amount <= self.available(source)
        within_lot = down or amount <= self.lots[child].get(parent, 0)
        try:
            self.tx(
                lambda s: operations.move(
                    s, from_id=source, to_id=target, amount=amount, kind=kind, now=NOW
                )
            )
        except InsufficientCredits:
            assert not ok
            return
        except TakeBackTooLarge:
            assert ok
            assert not within_lot
            return
        assert ok
        assert within_lot
        self.balance[source] -= amount
        self.balance[target] += amount
        if down:
            self.spend(source, amount)
            self.give(target, source, amount)
        else:
            self.lots[source][target] -= amount
            own = next(iter(self.lots[target]), source)  # the taker's oldest lot
            self.give(target, own, amount)

    @rule(
        target=holds,
        who=st.booleans(),
        rate=st.integers(1, 4_000_000),
        window=st.sampled_from([60, 600, 3600]),
        for_group=st.sampled_from([None, 0, 1]),
    )
    def place_hold(self, who: bool, rate: int, window: int, for_group: int | None) -> Any:
        wallet = self.alice if who else self.bob
        group = None if for_group is None else (self.group, self.group2)[for_group]
        amount = hold_amount(rate, window)
        try:
            hold = self.tx(
                lambda s: operations.place_hold(
                    s,
                    wallet_id=wallet,
                    session_id=uuid.uuid4(),
                    rate_per_hour=rate,
                    window_seconds=window,
                    now=NOW,
                    for_group_wallet_id=group,
                )
            )
        except InsufficientCredits:
            assert amount > self.available(wallet)
            return None
        assert amount <= self.available(wallet)
        self.held[wallet] += amount
        self.reserved[hold.id] = amount
        self.hold_wallet[hold.id] = wallet
        self.hold_group[hold.id] = group
        return hold.id

    @rule(hold=holds, amount=amounts)
    def capture(self, hold: uuid.UUID | None, amount: int) -> None:
        if hold is None:
            return
        wallet = self.hold_wallet[hold]
        try:
            self.tx(lambda s: operations.capture(s, hold_id=hold, amount=amount, now=NOW))
        except HoldResolved:
            assert hold not in self.reserved
            return
        except HoldExhausted:
            assert amount > self.reserved[hold]
            return
        self.reserved[hold] -= amount
        self.held[wallet] -= amount
        self.balance[wallet] -= amount
        self.spend(wallet, amount, self.hold_group[hold])
        self.consumed += amount

    @rule(hold=holds)
    def extend(self, hold: uuid.UUID | None) -> None:
        if hold is None:
            return
        wallet = self.hold_wallet[hold]
        try:
            extended = self.tx(lambda s: operations.extend_hold(s, hold_id=hold, now=NOW))
        except HoldResolved:
            assert hold not in self.reserved
            return
        except InsufficientCredits:
            return
        extra = hold_amount(extended.rate_per_hour, extended.window_seconds)
        self.reserved[hold] += extra
        self.held[wallet] += extra

    @rule(hold=consumes(holds), used=st.integers(0, 5_000_000), settle=st.booleans())
    def resolve(self, hold: uuid.UUID | None, used: int, settle: bool) -> None:
        if hold is None:
            return
        wallet = self.hold_wallet[hold]
        reserved = self.reserved.pop(hold)
        if settle:
            outcome = self.tx(lambda s: operations.settle_hold(s, hold_id=hold, used=used, now=NOW))
            assert outcome.captured == min(used, reserved)
            self.balance[wallet] -= outcome.captured
            if outcome.captured:
                self.spend(wallet, outcome.captured, self.hold_group[hold])
            self.consumed += outcome.captured
        else:
            self.tx(lambda s: operations.release_hold(s, hold_id=hold, now=NOW))
        self.held[wallet] -= reserved
        with pytest.raises(HoldResolved):
            self.tx(lambda s: operations.release_hold(s, hold_id=hold, now=NOW))

    @invariant()
    def matches_the_model(self) -> None:
        if not self.balance:
            return

        async def read(db: AsyncSession) -> tuple[dict[uuid.UUID, tuple[int, int]], Any, Any]:
            accounts = await repository.accounts_by_id(db, list(self.balance))
            lots = await repository.lots_of(db, list(self.balance))
            report = await invariants.check(db)
            return {k: (a.balance, a.held) for k, a in accounts.items()}, lots, report

        stored, lots, report = self.tx(read)
        assert stored == {k: (self.balance[k], self.held[k]) for k in self.balance}
        for wallet, expected in self.lots.items():
            ordered = sorted(lots[wallet], key=lambda lot: lot.seq)
            assert [(lot.funder_id, lot.amount) for lot in ordered] == list(expected.items())
        assert report.violations == []
        assert (report.minted, report.consumed) == (self.minted, self.consumed)


@pytest.fixture
def machine_server(postgres: EmbeddedPostgres) -> EmbeddedPostgres:
    SERVER["pg"] = postgres
    return postgres


def test_the_ledger_matches_its_model(machine_server: EmbeddedPostgres) -> None:
    LedgerMachine.TestCase.settings = settings(
        max_examples=25,
        stateful_step_count=25,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    runner = LedgerMachine.TestCase("runTest")
    runner.runTest()


__all__ = ["CreditAccount"]
