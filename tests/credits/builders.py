"""Ledger builders: wallets funded through the real operations, and the invariant check."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.credits import invariants, operations, repository
from gshare.credits.amounts import MICRO


@dataclass
class Wallets:
    org: uuid.UUID
    group: uuid.UUID
    users: list[uuid.UUID]


async def funded_wallets(
    sessions: async_sessionmaker[AsyncSession],
    now: datetime,
    *,
    users: int = 1,
    org_credits: int = 1000,
    group_credits: int = 500,
    user_credits: int = 100,
) -> Wallets:
    """An org, one group and `users` user wallets (owners are made-up ids; the ledger does not
    look at identities), funded top-down with the real operations."""
    async with sessions() as session, session.begin():
        org = await repository.account_id(session, "org", uuid.uuid4(), now)
        group = await repository.account_id(session, "group", uuid.uuid4(), now)
        people = [
            await repository.account_id(session, "user", uuid.uuid4(), now) for _ in range(users)
        ]
        if org_credits:
            await operations.mint(session, wallet_id=org, amount=org_credits * MICRO, now=now)
        if group_credits:
            await operations.move(
                session,
                from_id=org,
                to_id=group,
                amount=group_credits * MICRO,
                kind="allocation",
                now=now,
            )
        for person in people:
            if user_credits:
                await operations.move(
                    session,
                    from_id=group,
                    to_id=person,
                    amount=user_credits * MICRO,
                    kind="allocation",
                    now=now,
                )
    return Wallets(org, group, people)


async def assert_ledger_clean(sessions: async_sessionmaker[AsyncSession]) -> invariants.Report:
    async with sessions() as session:
        report = await invariants.check(session)
    assert report.violations == [], report.violations
    return report


async def grants(
    sessions: async_sessionmaker[AsyncSession], w: Wallets, *, org: int, group: int, user: int
) -> None:
    """Monthly grants down the tree: the org minted, the group paid by the org, users by the
    group (amounts in whole credits)."""
    async with sessions() as session, session.begin():
        await operations.set_monthly_grant(
            session, wallet_id=w.org, amount=org * MICRO, funding_wallet_id=None
        )
        await operations.set_monthly_grant(
            session, wallet_id=w.group, amount=group * MICRO, funding_wallet_id=w.org
        )
        for person in w.users:
            await operations.set_monthly_grant(
                session, wallet_id=person, amount=user * MICRO, funding_wallet_id=w.group
            )
