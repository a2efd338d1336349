"""The ledger's invariants, checked against the database as it is.

Run by GET /api/v1/credits/check and by the tests after every scenario. A clean ledger has no
violations; each violation names the invariant and a few of the offending rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

# Given the sessions that hold open holds, which of them have ended. Supplied by the sessions
# domain; without it that invariant cannot be judged and is reported as not checked.
EndedSessions = Callable[[AsyncSession, list[uuid.UUID]], Awaitable[set[uuid.UUID]]]


@dataclass(frozen=True)
class Violation:
    invariant: str
    detail: str


@dataclass
class Report:
    minted: int = 0
    in_wallets: int = 0
    held: int = 0
    consumed: int = 0
    violations: list[Violation] = field(default_factory=list)
    not_checked: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations


async def _rows(db: AsyncSession, sql: str) -> list[str]:
    return [", ".join(str(v) for v in row) for row in (await db.execute(text(sql))).all()]


CHECKS: list[tuple[str, str]] = [
    (
        "a closed wallet holds nothing",
        "SELECT id FROM credit_accounts "
        "WHERE closed_at IS NOT NULL AND (balance <> 0 OR held <> 0) LIMIT 5",
    ),
    (
        "each transfer has one debit and one credit of equal amount",
        "SELECT t.id FROM credit_transfers t LEFT JOIN credit_entries e ON e.transfer_id = t.id "
        "GROUP BY t.id, t.amount, t.debit_account_id, t.credit_account_id "
        "HAVING count(e.id) <> 2 OR coalesce(sum(e.amount), 0) <> 0 "
        "OR coalesce(sum(e.amount) FILTER (WHERE e.account_id = t.credit_account_id), 0) "
        "<> t.amount "
        "OR coalesce(sum(e.amount) FILTER (WHERE e.account_id = t.debit_account_id), 0) "
        "<> -t.amount "
        "LIMIT 5",
    ),
    (
        "every cached balance equals the sum of its entries",
        "SELECT a.id, a.balance, coalesce(sum(e.amount), 0) FROM credit_accounts a "
        "LEFT JOIN credit_entries e ON e.account_id = a.id "
        "WHERE a.kind IN ('org', 'group', 'user') "
        "GROUP BY a.id HAVING a.balance <> coalesce(sum(e.amount), 0) LIMIT 5",
    ),
    (
        "every wallet's lots add up to its balance",
        "SELECT a.id, a.balance, coalesce(sum(l.amount), 0) FROM credit_accounts a "
        "LEFT JOIN credit_lots l ON l.account_id = a.id "
        "WHERE a.kind IN ('org', 'group', 'user') "
        "GROUP BY a.id HAVING a.balance <> coalesce(sum(l.amount), 0) LIMIT 5",
    ),
    (
        "no lot is negative, and only wallets hold lots",
        "SELECT l.account_id, l.funder_id, l.amount FROM credit_lots l "
        "JOIN credit_accounts a ON a.id = l.account_id "
        "WHERE l.amount < 0 OR a.kind NOT IN ('org', 'group', 'user') LIMIT 5",
    ),
    (
        "every wallet's last running balance equals its balance",
        "SELECT a.id, a.balance, last.balance_after FROM credit_accounts a "
        "JOIN LATERAL (SELECT balance_after FROM credit_entries WHERE account_id = a.id "
        "ORDER BY id DESC LIMIT 1) last ON true "
        "WHERE a.kind IN ('org', 'group', 'user') "
        "AND last.balance_after IS DISTINCT FROM a.balance LIMIT 5",
    ),
    (
        "no negative balance, held or available amount",
        "SELECT id, balance, held FROM credit_accounts WHERE kind IN ('org', 'group', 'user') "
        "AND (balance < 0 OR held < 0 OR held > balance) LIMIT 5",
    ),
    (
        "what a wallet holds equals what its open holds reserve",
        "SELECT a.id, a.held, coalesce(sum(h.reserved), 0) FROM credit_accounts a "
        "LEFT JOIN credit_holds h ON h.account_id = a.id AND h.status = 'open' "
        "WHERE a.kind IN ('org', 'group', 'user') "
        "GROUP BY a.id HAVING a.held <> coalesce(sum(h.reserved), 0) LIMIT 5",
    ),
    (
        "every hold is resolved at most once, and resolved holds have their resolution",
        "SELECT h.id, h.status, r.kind FROM credit_holds h "
        "LEFT JOIN credit_hold_resolutions r ON r.hold_id = h.id "
        "WHERE (h.status = 'open') <> (r.hold_id IS NULL) "
        "OR (r.hold_id IS NOT NULL AND r.kind <> h.status) LIMIT 5",
    ),
    (
        "a hold's captured total equals its capture transfers",
        "SELECT h.id, h.captured, coalesce(sum(t.amount), 0) FROM credit_holds h "
        "LEFT JOIN credit_transfers t ON t.hold_id = h.id AND t.kind = 'capture' "
        "GROUP BY h.id HAVING h.captured <> coalesce(sum(t.amount), 0) LIMIT 5",
    ),
    (
        "a monthly refill happens at most once per wallet and period",
        "SELECT account_id, period, count(*) FROM credit_refills "
        "GROUP BY account_id, period HAVING count(*) > 1 LIMIT 5",
    ),
]

_TOTALS = text(
    "SELECT "
    "(SELECT coalesce(sum(amount), 0) FROM credit_entries) AS all_entries, "
    "(SELECT coalesce(-sum(e.amount), 0) FROM credit_entries e "
    " JOIN credit_accounts a ON a.id = e.account_id WHERE a.kind = 'mint') AS minted, "
    "(SELECT coalesce(sum(e.amount), 0) FROM credit_entries e "
    " JOIN credit_accounts a ON a.id = e.account_id WHERE a.kind = 'consumption') AS consumed, "
    "(SELECT coalesce(sum(balance), 0) FROM credit_accounts "
    " WHERE kind IN ('org', 'group', 'user')) AS in_wallets, "
    "(SELECT coalesce(sum(held), 0) FROM credit_accounts "
    " WHERE kind IN ('org', 'group', 'user')) AS held"
)


async def check(db: AsyncSession, ended_sessions: EndedSessions | None = None) -> Report:
    totals = (await db.execute(_TOTALS)).one()
    report = Report(
        minted=int(totals.minted),
        in_wallets=int(totals.in_wallets),
        held=int(totals.held),
        consumed=int(totals.consumed),
    )
    if totals.all_entries != 0:
        report.violations.append(
            Violation("all entries sum to zero", f"they sum to {totals.all_entries}")
        )
    if report.minted != report.in_wallets + report.consumed:
        report.violations.append(
            Violation(
                "everything minted is in a wallet or consumed",
                f"minted {report.minted}, in wallets {report.in_wallets}, "
                f"consumed {report.consumed}",
            )
        )
    for name, sql in CHECKS:
        rows = await _rows(db, sql)
        if rows:
            report.violations.append(Violation(name, "; ".join(rows)))
    name = "no hold is left open for a session that has ended"
    if ended_sessions is None:
        report.not_checked.append(name)
    else:
        open_ids = [
            uuid.UUID(str(r[0]))
            for r in await db.execute(
                text("SELECT session_id FROM credit_holds WHERE status = 'open'")
            )
        ]
        ended = await ended_sessions(db, open_ids) if open_ids else set()
        if ended:
            report.violations.append(Violation(name, ", ".join(sorted(map(str, ended)))[:500]))
    return report
