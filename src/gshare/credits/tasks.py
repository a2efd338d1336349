"""Periodic credit work: the monthly refill of every wallet that has a grant."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.credits import operations, repository
from gshare.credits.models import CreditAccount
from gshare.identity import service as identity
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
    cleared: int = 0
    failed: int = 0


async def grant_still_applies(db: AsyncSession, account: CreditAccount, now: datetime) -> bool:
    """A grant is paid only while what it was set for lasts: the organization exists, the group
    still belongs to the organization that pays, the user is still in the group that pays (a
    guest until their membership expires)."""
    if account.owner_id is None:
        return False
    if account.kind == "org":
        return bool(await identity.names(db, "org", [account.owner_id]))
    funding_id = account.grant_funding_account_id
    funding = await repository.wallet(db, funding_id) if funding_id else None
    if funding is None or funding.owner_id is None:
        return False
    if account.kind == "group":
        org_id = await identity.group_org(db, account.owner_id)
        return funding.kind == "org" and org_id == funding.owner_id
    return funding.kind == "group" and await identity.is_current_member(
        db, account.owner_id, funding.owner_id, now
    )


async def refill_month(
    sessions: async_sessionmaker[AsyncSession], period: str, now: datetime
) -> RefillSummary:
    """Refill every wallet with a grant for `period`, parents before children.

    Each wallet is refilled in its own transaction; a wallet already refilled for the period
    (by an earlier run, a crashed run, or another worker right now) is skipped. A grant whose
    reason has gone (a member who left the paying group, a deleted group) is cleared instead of
    paid. One wallet failing is logged and does not stop the others.
    """
    async with sessions() as db:
        wallets = await repository.wallets_with_grants(db)
    wallets.sort(key=lambda w: (_LEVEL.get(w.kind, 9), str(w.id)))
    summary = RefillSummary(period)
    for wallet in wallets:
        wallet_id: uuid.UUID = wallet.id

        async def one(db: AsyncSession, wallet_id: uuid.UUID = wallet_id) -> object:
            account = await repository.wallet(db, wallet_id)
            if account is None or account.monthly_grant is None:
                return None
            if not await grant_still_applies(db, account, now):
                await operations.set_monthly_grant(
                    db, wallet_id=wallet_id, amount=0, funding_wallet_id=None
                )
                log.info(
                    "cleared the monthly grant of wallet %s: its payer no longer applies", wallet_id
                )
                return "cleared"
            return await operations.refill_wallet(db, wallet_id=wallet_id, period=period, now=now)

        try:
            result = await run_in_transaction(sessions, one)
        except Exception:
            log.exception("the refill of wallet %s failed; the others go on", wallet_id)
            summary.failed += 1
            continue
        if result == "cleared":
            summary.cleared += 1
            continue
        if not isinstance(result, operations.RefillResult):
            summary.skipped += 1
            continue
        summary.refilled += 1
        summary.credited += result.amount
        summary.shortfall += result.shortfall
    if summary.refilled or summary.cleared or summary.failed:
        log.info(
            "monthly refill %s: %d refilled, %d grants cleared, %d failed",
            period,
            summary.refilled,
            summary.cleared,
            summary.failed,
        )
    return summary
