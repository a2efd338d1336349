"""Credit responses: turns ledger rows into the API's shapes, loading what they name in batches.

Every function here runs a fixed number of queries however many rows it is given.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from gshare.credits import invariants, repository
from gshare.credits.amounts import format_amount
from gshare.credits.models import CreditAccount, CreditRefill
from gshare.credits.repository import EntryRow
from gshare.credits.schemas import (
    EntryOut,
    GroupWalletsOut,
    InvariantReportOut,
    InvariantViolationOut,
    MonthlyGrantOut,
    RefillOut,
    TransferOut,
    WalletOut,
    WalletTreeOut,
)
from gshare.identity import service as identity
from gshare.kit.hooks import Hook

SYSTEM_NAMES = {"mint": "New credits", "consumption": "GPU usage"}


async def owner_names(db: AsyncSession, accounts: Sequence[CreditAccount]) -> dict[uuid.UUID, str]:
    found: dict[uuid.UUID, str] = {}
    for kind in ("org", "group", "user"):
        ids = [a.owner_id for a in accounts if a.kind == kind and a.owner_id is not None]
        if ids:
            found |= await identity.names(db, kind, ids)
    return found


def _grant_out(account: CreditAccount, refill: CreditRefill | None) -> MonthlyGrantOut | None:
    if account.monthly_grant is None:
        return None
    last = None
    if refill is not None:
        last = RefillOut(
            period=refill.period,
            amount=format_amount(refill.amount),
            shortfall=format_amount(refill.shortfall),
            at=refill.at,
        )
    return MonthlyGrantOut(
        amount=format_amount(account.monthly_grant),
        funding_wallet_id=account.grant_funding_account_id,
        last_refill=last,
    )


async def wallets_out(db: AsyncSession, accounts: Sequence[CreditAccount]) -> list[WalletOut]:
    names = await owner_names(db, accounts)
    refills = await repository.last_refills(db, [a.id for a in accounts])
    return [
        WalletOut(
            id=a.id,
            owner_kind=a.kind,
            owner_id=a.owner_id,
            owner_name=names.get(a.owner_id, "") if a.owner_id else "",
            balance=format_amount(a.balance),
            held=format_amount(a.held),
            available=format_amount(a.balance - a.held),
            monthly_grant=_grant_out(a, refills.get(a.id)),
            created_at=a.created_at,
        )
        for a in accounts
    ]


async def wallet_out(db: AsyncSession, account: CreditAccount) -> WalletOut:
    """One wallet as it is now (re-read: the ledger writes balances with plain SQL)."""
    await db.refresh(account)
    return (await wallets_out(db, [account]))[0]


# The names of sessions that holds were placed for; the sessions domain answers (for the
# caller's own sessions only: a hold is always on its owner's wallet).
session_names: Hook[[list[uuid.UUID]], dict[uuid.UUID, str]] = Hook("session names")


async def entries_out(
    db: AsyncSession, rows: Sequence[EntryRow], *, hidden: set[uuid.UUID] | None = None
) -> list[EntryOut]:
    """Entries as the caller sees them: the other side of an entry in `hidden` (a wallet the
    caller may not read) is shown without its wallet, name, memo or actor."""
    hidden = hidden or set()
    counterparts = await repository.accounts_by_id(
        db, [r.counterparty_id for r in rows if r.counterparty_id not in hidden]
    )
    names = await owner_names(db, list(counterparts.values()))
    actors = await identity.emails(
        db,
        [
            r.transfer.actor_id
            for r in rows
            if r.transfer.actor_id is not None and r.counterparty_id not in hidden
        ],
    )
    holds = await repository.sessions_of_holds(
        db, [r.transfer.hold_id for r in rows if r.transfer.hold_id is not None]
    )
    named: dict[uuid.UUID, str] = {}
    for found in await session_names.results(db, list(set(holds.values()))):
        named |= found
    out = []
    for row in rows:
        other = counterparts.get(row.counterparty_id)
        name = None
        if other is not None:
            name = SYSTEM_NAMES.get(other.kind) or (
                names.get(other.owner_id) if other.owner_id else None
            )
        session_id = holds.get(row.transfer.hold_id) if row.transfer.hold_id else None
        out.append(
            EntryOut(
                id=row.entry.id,
                transfer_id=row.transfer.id,
                at=row.entry.created_at,
                kind=row.transfer.kind,
                amount=format_amount(row.entry.amount),
                balance_after=format_amount(row.entry.balance_after or 0),
                counterparty_wallet_id=other.id if other and other.owner_id else None,
                counterparty_name=name,
                memo=None if row.counterparty_id in hidden else row.transfer.memo,
                actor_email=actors.get(row.transfer.actor_id) if row.transfer.actor_id else None,
                hold_id=row.transfer.hold_id,
                session_id=session_id if session_id in named else None,
                session_name=named.get(session_id) if session_id else None,
            )
        )
    return out


async def transfer_out(
    db: AsyncSession,
    *,
    transfer_id: uuid.UUID,
    source: CreditAccount | None,
    target: CreditAccount,
    amount: int,
    memo: str | None,
    at: datetime,
) -> TransferOut:
    """A transfer with both wallets as they are afterwards; no source for minted credits."""
    return TransferOut(
        transfer_id=transfer_id,
        from_wallet=await wallet_out(db, source) if source is not None else None,
        to_wallet=await wallet_out(db, target),
        amount=format_amount(amount),
        memo=memo,
        at=at,
    )


@dataclass(frozen=True)
class GroupWallets:
    group_id: uuid.UUID
    group_name: str
    wallet: CreditAccount
    members: list[CreditAccount]


async def wallet_tree_out(
    db: AsyncSession, org: CreditAccount | None, groups: Sequence[GroupWallets]
) -> WalletTreeOut:
    """The whole tree in one batch: the queries do not grow with groups or members."""
    accounts: list[CreditAccount] = [] if org is None else [org]
    for group in groups:
        accounts += [group.wallet, *group.members]
    by_id = {out.id: out for out in await wallets_out(db, accounts)}
    return WalletTreeOut(
        org=by_id[org.id] if org is not None else None,
        groups=[
            GroupWalletsOut(
                group_id=g.group_id,
                group_name=g.group_name,
                wallet=by_id[g.wallet.id],
                members=[by_id[m.id] for m in g.members],
            )
            for g in groups
        ],
    )


def report_out(report: invariants.Report, at: datetime) -> InvariantReportOut:
    return InvariantReportOut(
        ok=report.ok,
        checked_at=at,
        violations=[
            InvariantViolationOut(invariant=v.invariant, detail=v.detail) for v in report.violations
        ],
        not_checked=report.not_checked,
        minted=format_amount(report.minted),
        in_wallets=format_amount(report.in_wallets),
        held=format_amount(report.held),
        consumed=format_amount(report.consumed),
    )
