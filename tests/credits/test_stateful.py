"""A Hypothesis state machine drives the ledger on the real database and compares every step
with a plain model of balances, holds and totals."""

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
from gshare.credits.ledger import HoldExhausted, InsufficientCredits
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
            async with self.sessions() as session, session.begin():
                return await work(session)

        return self.run(go())

    def available(self, wallet: uuid.UUID) -> int:
        return self.balance[wallet] - self.held[wallet]

    @initialize()
    def wallets(self) -> None:
        async def create(session: AsyncSession) -> list[uuid.UUID]:
            return [
                await repository.account_id(session, kind, uuid.uuid4(), NOW)
                for kind in ("org", "group", "user", "user")
            ]

        self.org, self.group, self.alice, self.bob = self.tx(create)
        for wallet in (self.org, self.group, self.alice, self.bob):
            self.balance[wallet], self.held[wallet] = 0, 0
        self.pairs = [(self.org, self.group), (self.group, self.alice), (self.group, self.bob)]

    @rule(amount=st.integers(min_value=1, max_value=20_000_000))
    def mint(self, amount: int) -> None:
        self.tx(lambda s: operations.mint(s, wallet_id=self.org, amount=amount, now=NOW))
        self.balance[self.org] += amount
        self.minted += amount

    @rule(pair=st.integers(0, 2), down=st.booleans(), amount=amounts)
    def transfer(self, pair: int, down: bool, amount: int) -> None:
        parent, child = self.pairs[pair]
        source, target = (parent, child) if down else (child, parent)
        ok = amount <= self.available(source)
        try:
            self.tx(
                lambda s: operations.move(
                    s, from_id=source, to_id=target, amount=amount, kind="allocation", now=NOW
                )
            )
        except InsufficientCredits:
            assert not ok
            return
        assert ok
        self.balance[source] -= amount
        self.balance[target] += amount

    @rule(
        target=holds,
        who=st.booleans(),
        rate=st.integers(1, 4_000_000),
        window=st.sampled_from([60, 600, 3600]),
    )
    def place_hold(self, who: bool, rate: int, window: int) -> Any:
        wallet = self.alice if who else self.bob
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
                )
            )
        except InsufficientCredits:
            assert amount > self.available(wallet)
            return None
        assert amount <= self.available(wallet)
        self.held[wallet] += amount
        self.reserved[hold.id] = amount
        self.hold_wallet[hold.id] = wallet
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

        async def read(session: AsyncSession) -> tuple[dict[uuid.UUID, tuple[int, int]], Any]:
            accounts = await repository.accounts_by_id(session, list(self.balance))
            report = await invariants.check(session)
            return {k: (a.balance, a.held) for k, a in accounts.items()}, report

        stored, report = self.tx(read)
        assert stored == {k: (self.balance[k], self.held[k]) for k in self.balance}
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
