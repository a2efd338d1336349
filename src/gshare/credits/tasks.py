"""Periodic credit work: the monthly refill of every wallet that has a grant, and the wallet
alerts' checks."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.credits import alerts, operations, repository
from gshare.credits.amounts import format_amount
from gshare.credits.models import CreditAccount
from gshare.events.notifications import notify_user
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


# ---- wallet alerts -------------------------------------------------------------------------

ALERT_BATCH = 500
LOW_BALANCE = "wallet.low_balance"
RUNWAY_SHORT = "wallet.runway_short"


async def _told_of(db: AsyncSession, kind: str, owner_id: uuid.UUID) -> list[uuid.UUID]:
    """Who hears of a wallet: its owner; a group's admins (its organization's when it has
    none); an organization's admins."""
    if kind == "user":
        return [owner_id]
    if kind == "org":
        return await identity.admin_ids(db, org_id=owner_id)
    found = await identity.admin_ids(db, group_id=owner_id)
    org_id = await identity.group_org(db, owner_id)
    if not found and org_id is not None:
        found = await identity.admin_ids(db, org_id=org_id)
    return found


def _words(kind: str) -> str:
    return {
        "user": "Your wallet",
        "group": "Your group's wallet",
        "org": "Your organization's wallet",
    }[kind]


async def _tell(db: AsyncSession, row: Any, decision: alerts.Decision, now: datetime) -> int:
    told = 0
    whose = _words(row.kind)
    for user_id in await _told_of(db, row.kind, row.owner_id):
        data = {"wallet_id": str(row.account_id), "balance": format_amount(row.balance)}
        if decision.tell_below:
            await notify_user(
                db,
                user_id,
                LOW_BALANCE,
                title=f"{whose} is below {format_amount(row.below)} credits",
                body=f"Its balance is {format_amount(row.balance)} credits.",
                now=now,
                data={**data, "below": format_amount(row.below)},
            )
            told += 1
        if decision.tell_runway:
            hours = alerts.runway_hours(alerts.Reading(row.balance, row.burn)) or 0.0
            await notify_user(
                db,
                user_id,
                RUNWAY_SHORT,
                title=f"{whose} lasts about {hours:.1f} more hours",
                body=(
                    f"At {format_amount(row.burn)} credits an hour, what your running sessions "
                    f"are billed now, its {format_amount(row.balance)} credits last fewer than "
                    f"{row.runway_hours} hours. Sessions pause when it runs out."
                ),
                now=now,
                data={
                    **data,
                    "runway_hours": row.runway_hours,
                    "burn_per_hour": format_amount(row.burn),
                },
            )
            told += 1
    return told


async def alert_batch(
    db: AsyncSession, now: datetime, after: uuid.UUID
) -> tuple[int, uuid.UUID | None]:
    """Check one batch of wallet alerts: tell what crossed, arm again what is back above.
    Returns how many notifications it sent and where the next batch starts (None: done)."""
    rows = await repository.alerts_due(db, after, ALERT_BATCH)
    told = 0
    for row in rows:
        alert = alerts.Alert(row.below, row.runway_hours, row.below_told_at, row.runway_told_at)
        decision = alerts.decide(alert, alerts.Reading(row.balance, int(row.burn)), now)
        if decision.tell_below or decision.tell_runway:
            told += await _tell(db, row, decision, now)
        if (decision.below_told_at, decision.runway_told_at) != (
            row.below_told_at,
            row.runway_told_at,
        ):
            await repository.mark_alert(
                db, row.account_id, decision.below_told_at, decision.runway_told_at
            )
    following = rows[-1].account_id if len(rows) == ALERT_BATCH else None
    return told, following


async def check_alerts(sessions: async_sessionmaker[AsyncSession], now: datetime) -> int:
    """One pass over every wallet alert, a batch per transaction: each crossing is told once,
    in the transaction that records it."""
    told, after = 0, uuid.UUID(int=0)
    while True:

        async def work(db: AsyncSession, after: uuid.UUID = after) -> tuple[int, uuid.UUID | None]:
            return await alert_batch(db, now, after)

        count, following = await run_in_transaction(sessions, work)
        told += count
        if following is None:
            return told
        after = following
