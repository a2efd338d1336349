"""Periodic credit work: the monthly refill of every wallet that has a grant."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.credits import operations, repository
from gshare.kit.db import run_in_transaction

log = logging.getLogger(__name__)
_LEVEL = {"org": 0, "group": 1, "user": 2}


def period_of(now: datetime, zone: ZoneInfo) -> str:
    """The month a moment falls in, in the configured time zone: '2026-11'."""
    return now.astimezone(zone).strftime("%Y-%m")


@dataclass
class RefillSummary:
    period: str
    refilled: int = 0
    skipped: int = 0
    credited: int = 0
    shortfall: int = 0


async def refill_month(
    sessions: async_sessionmaker[AsyncSession], period: str, now: datetime
) -> RefillSummary:
    """Refill every wallet with a grant for `period`, parents before children.

    Each wallet is refilled in its own transaction; a wallet already refilled for the period
    (by an earlier run, a crashed run, or another worker right now) is skipped.
    """
    async with sessions() as session:
        wallets = await repository.wallets_with_grants(session)
    wallets.sort(key=lambda w: (_LEVEL.get(w.kind, 9), str(w.id)))
    summary = RefillSummary(period)
    for wallet in wallets:
        wallet_id: uuid.UUID = wallet.id

        async def one(session: AsyncSession, wallet_id: uuid.UUID = wallet_id) -> object:
            return await operations.refill_wallet(
                session, wallet_id=wallet_id, period=period, now=now
            )

        result = await run_in_transaction(sessions, one)
        if not isinstance(result, operations.RefillResult):
            summary.skipped += 1
            continue
        summary.refilled += 1
        summary.credited += result.amount
        summary.shortfall += result.shortfall
    if summary.refilled:
        log.info("refilled %d wallets for %s", summary.refilled, period)
    return summary
