"""Every ledger query. The posting path uses plain SQL statements: it is the hot path."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, select, text, update
from sqlalchemy.dialects.postgresql import distinct_on, insert
from sqlalchemy.ext.asyncio import AsyncSession

from gshare.credits.ledger import Lot
from gshare.credits.models import (
    CreditAccount,
    CreditEntry,
    CreditHold,
    CreditRefill,
    CreditTransfer,
    WalletAlert,
)
from gshare.events import outbox
from gshare.kit.ids import new_id
from gshare.kit.pagination import PageRequest


@dataclass
class LockedWallet:
    id: uuid.UUID
    kind: str
    owner_id: uuid.UUID | None
    balance: int
    held: int
    closed: bool = False


_OWNED_ACCOUNT = text("SELECT id FROM credit_accounts WHERE kind = :kind AND owner_id = :owner")
_SYSTEM_ACCOUNT = text("SELECT id FROM credit_accounts WHERE kind = :kind AND owner_id IS NULL")


async def account_id(
    db: AsyncSession, kind: str, owner_id: uuid.UUID | None, now: datetime
) -> uuid.UUID:
    """The account of an owner (or a system account), created the first time it is needed."""
    query, params = (
        (_SYSTEM_ACCOUNT, {"kind": kind})
        if owner_id is None
        else (_OWNED_ACCOUNT, {"kind": kind, "owner": owner_id})
    )
    found: uuid.UUID | None = await db.scalar(query, params)
    if found is not None:
        return found
    statement = insert(CreditAccount).values(
        id=new_id(), kind=kind, owner_id=owner_id, balance=0, held=0, created_at=now
    )
    if owner_id is None:
        statement = statement.on_conflict_do_nothing(
            index_elements=["kind"], index_where=text("owner_id IS NULL")
        )
    else:
        statement = statement.on_conflict_do_nothing(index_elements=["kind", "owner_id"])
    await db.execute(statement)
    found = await db.scalar(query, params)
    assert found is not None
    return found


async def ensure_accounts(
    db: AsyncSession, kind: str, owner_ids: Sequence[uuid.UUID], now: datetime
) -> dict[uuid.UUID, CreditAccount]:
    """The wallets of many owners of one kind, each created the first time it is needed, in
    two statements whatever their number."""
    if not owner_ids:
        return {}
    await db.execute(
        insert(CreditAccount)
        .values(
            [
                {
                    "id": new_id(),
                    "kind": kind,
                    "owner_id": owner,
                    "balance": 0,
                    "held": 0,
                    "created_at": now,
                }
                for owner in dict.fromkeys(owner_ids)
            ]
        )
        .on_conflict_do_nothing(index_elements=["kind", "owner_id"])
    )
    return await wallets_of(db, kind, owner_ids)


_LOCK = text(
    "SELECT id, kind, owner_id, balance, held, closed_at IS NOT NULL AS closed "
    "FROM credit_accounts "
    "WHERE id = ANY(:ids) ORDER BY id FOR UPDATE"
)


async def lock_wallets(db: AsyncSession, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, LockedWallet]:
    """Lock wallets in one fixed order (by id), so concurrent movements never deadlock."""
    rows = (await db.execute(_LOCK, {"ids": list(ids)})).all()
    return {r.id: LockedWallet(r.id, r.kind, r.owner_id, r.balance, r.held, r.closed) for r in rows}


_CLOSE = text(
    "UPDATE credit_accounts SET closed_at = now() WHERE id = :id AND balance = 0 AND held = 0 "
    "RETURNING id"
)


async def close_wallet(db: AsyncSession, wallet_id: uuid.UUID) -> bool:
    """Close an empty wallet (its row must be locked); False when it holds credits."""
    return (await db.execute(_CLOSE, {"id": wallet_id})).first() is not None


_SET = text("UPDATE credit_accounts SET balance = :balance, held = :held WHERE id = :id")
_SET_MANY = (
    "w AS (UPDATE credit_accounts AS a SET balance = v.balance, held = v.held "
    "FROM unnest(CAST(:ids AS uuid[]), CAST(:balances AS bigint[]), CAST(:helds AS bigint[])) "
    "AS v(id, balance, held) WHERE a.id = v.id RETURNING a.id)"
)
_TRANSFER_ROW = (
    "t AS (INSERT INTO credit_transfers "
    "(id, kind, debit_account_id, credit_account_id, amount, memo, actor_id, hold_id, created_at) "
    "VALUES (:id, :kind, :debit, :credit, :amount, :memo, :actor, :hold, :at) RETURNING id)"
)
_ENTRY_ROWS = (
    "INSERT INTO credit_entries (transfer_id, account_id, amount, balance_after, created_at) "
    "SELECT t.id, v.account_id, v.amount, v.balance_after, :at FROM t, (VALUES "
    "(CAST(:debit AS uuid), -CAST(:amount AS bigint), CAST(:debit_after AS bigint), 1), "
    "(CAST(:credit AS uuid), CAST(:amount AS bigint), CAST(:credit_after AS bigint), 2)) "
    "AS v(account_id, amount, balance_after, side) ORDER BY v.side"
)
# Lots change by deltas: existing lots are updated, new ones inserted. (An upsert would check a
# negative delta against the table's constraint before finding the row.) Two writers never
# race on one lot: they hold its wallet's lock.
_LOT_DELTAS = (
    "d AS (SELECT * FROM unnest(CAST(:accounts AS uuid[]), CAST(:funders AS uuid[]), "
    "CAST(:deltas AS bigint[])) AS d(account_id, funder_id, delta)), "
    "up AS (UPDATE credit_lots l SET amount = l.amount + d.delta FROM d "
    "WHERE l.account_id = d.account_id AND l.funder_id = d.funder_id "
    "RETURNING l.account_id, l.funder_id)"
)
_NEW_LOTS = (
    "INSERT INTO credit_lots (account_id, funder_id, amount) "
    "SELECT d.account_id, d.funder_id, d.delta FROM d WHERE NOT EXISTS "
    "(SELECT 1 FROM up WHERE up.account_id = d.account_id AND up.funder_id = d.funder_id)"
)
# The transfer and its two entries in one round trip.
_TRANSFER = text(f"WITH {_TRANSFER_ROW} {_ENTRY_ROWS}")
_LOTS = text(
    "SELECT account_id, funder_id, amount, seq FROM credit_lots WHERE account_id = ANY(:ids)"
)
_CHANGE_LOTS = text(f"WITH {_LOT_DELTAS} {_NEW_LOTS}")
# Everything a movement writes, in one round trip: the hot path.
_POST_MOVEMENT = text(
    f"WITH {_SET_MANY}, {_LOT_DELTAS}, ins AS ({_NEW_LOTS} RETURNING 1), {outbox.RECORD_CTE}, "
    f"{_TRANSFER_ROW} {_ENTRY_ROWS}"
)


async def store_wallet(db: AsyncSession, wallet: LockedWallet) -> None:
    await db.execute(_SET, {"id": wallet.id, "balance": wallet.balance, "held": wallet.held})


async def lots_of(db: AsyncSession, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, list[Lot]]:
    """The lots of wallets the caller has locked (lots change only under their wallet's lock)."""
    found: dict[uuid.UUID, list[Lot]] = {i: [] for i in ids}
    for r in await db.execute(_LOTS, {"ids": list(ids)}):
        found[r.account_id].append(Lot(r.funder_id, r.amount, r.seq))
    return found


def _lot_params(deltas: dict[tuple[uuid.UUID, uuid.UUID], int]) -> dict[str, list[Any]]:
    changed = [(k, v) for k, v in deltas.items() if v]
    return {
        "accounts": [k[0] for k, _ in changed],
        "funders": [k[1] for k, _ in changed],
        "deltas": [v for _, v in changed],
    }


async def change_lots(db: AsyncSession, deltas: dict[tuple[uuid.UUID, uuid.UUID], int]) -> None:
    """Add each delta to the lot (wallet, funder); zero deltas are skipped."""
    params = _lot_params(deltas)
    if params["deltas"]:
        await db.execute(_CHANGE_LOTS, params)


async def post_movement(
    db: AsyncSession,
    *,
    source: LockedWallet,
    target: LockedWallet,
    lot_deltas: dict[tuple[uuid.UUID, uuid.UUID], int],
    kind: str,
    amount: int,
    now: datetime,
    events: Sequence[outbox.NewEvent],
    memo: str | None = None,
    actor_id: uuid.UUID | None = None,
) -> uuid.UUID:
    """Write a movement between two locked wallets: both balances, the lots, the transfer,
    its entries and the events announcing it, in one statement."""
    transfer_id = new_id()
    await db.execute(
        _POST_MOVEMENT,
        {
            "ids": [source.id, target.id],
            "balances": [source.balance, target.balance],
            "helds": [source.held, target.held],
            **_lot_params(lot_deltas),
            "id": transfer_id,
            "kind": kind,
            "debit": source.id,
            "credit": target.id,
            "amount": amount,
            "memo": memo,
            "actor": actor_id,
            "hold": None,
            "at": now,
            "debit_after": source.balance,
            "credit_after": target.balance,
            **outbox.params(events),
        },
    )
    outbox.recorded(db)
    return transfer_id


async def insert_transfer(
    db: AsyncSession,
    *,
    kind: str,
    debit: uuid.UUID,
    credit: uuid.UUID,
    amount: int,
    now: datetime,
    debit_after: int | None,
    credit_after: int | None,
    memo: str | None = None,
    actor_id: uuid.UUID | None = None,
    hold_id: uuid.UUID | None = None,
) -> uuid.UUID:
    transfer_id = new_id()
    await db.execute(
        _TRANSFER,
        {
            "id": transfer_id,
            "kind": kind,
            "debit": debit,
            "credit": credit,
            "amount": amount,
            "memo": memo,
            "actor": actor_id,
            "hold": hold_id,
            "at": now,
            "debit_after": debit_after,
            "credit_after": credit_after,
        },
    )
    return transfer_id


_HOLD_COLUMNS = (
    "id, account_id, session_id, rate_per_hour, window_seconds, for_group_wallet_id, "
    "reserved, captured, status, created_at, resolved_at"
)
_INSERT_HOLD_SQL = (
    "INSERT INTO credit_holds (id, account_id, session_id, rate_per_hour, window_seconds, "
    "for_group_wallet_id, reserved, captured, status, created_at, resolved_at) VALUES "
    "(:id, :account_id, :session_id, :rate_per_hour, :window_seconds, :for_group_wallet_id, "
    ":reserved, :captured, :status, :created_at, :resolved_at)"
)
_STORE_HOLD_SQL = (
    "UPDATE credit_holds SET reserved = :reserved, captured = :captured, status = :status, "
    "resolved_at = :resolved_at WHERE id = :id"
)
_STORE_HOLD = text(_STORE_HOLD_SQL)
# A hold placed, in one round trip: its wallet's new figures, the events announcing them and
# the hold.
_POST_HOLD = text(f"WITH {_SET_MANY}, {outbox.RECORD_CTE} {_INSERT_HOLD_SQL}")
# A hold resolved, in one round trip: its wallet's new figures when they changed (none in
# `:ids` when not) with their events, the resolution and the hold's final figures.
_POST_RESOLUTION = text(
    f"WITH {_SET_MANY}, {outbox.RECORD_CTE}, "  # noqa: S608
    "r AS (INSERT INTO credit_hold_resolutions (hold_id, kind, captured, released, at) "
    "VALUES (:id, :status, :captured_now, :released_now, :resolved_at) RETURNING 1) "
    f"{_STORE_HOLD_SQL}"
)


def _hold_values(hold: CreditHold) -> dict[str, Any]:
    return {name: getattr(hold, name) for name in _HOLD_COLUMNS.split(", ")}


# The hold's row is locked before its wallet's (row marks are taken in the order of the FROM
# list), the order every operation on a hold keeps.
_LOCK_HOLD_AND_WALLET = text(
    "SELECT h.id, h.account_id, h.session_id, h.rate_per_hour, h.window_seconds, "
    "h.for_group_wallet_id, h.reserved, h.captured, h.status, h.created_at, h.resolved_at, "
    "a.kind AS wallet_kind, a.owner_id AS wallet_owner_id, a.balance AS wallet_balance, "
    "a.held AS wallet_held, a.closed_at IS NOT NULL AS wallet_closed "
    "FROM credit_holds h JOIN credit_accounts a ON a.id = h.account_id "
    "WHERE h.id = :id FOR UPDATE OF h, a"
)


async def lock_hold_and_wallet(
    db: AsyncSession, hold_id: uuid.UUID
) -> tuple[CreditHold, LockedWallet] | None:
    """A hold and its wallet, both rows locked, in one statement: the hold as `lock_hold`'s
    detached copy, the wallet as `lock_wallets` gives it."""
    row = (await db.execute(_LOCK_HOLD_AND_WALLET, {"id": hold_id})).first()
    if row is None:
        return None
    f = dict(row._mapping)
    wallet = LockedWallet(
        f["account_id"],
        f.pop("wallet_kind"),
        f.pop("wallet_owner_id"),
        f.pop("wallet_balance"),
        f.pop("wallet_held"),
        f.pop("wallet_closed"),
    )
    return CreditHold(**f), wallet


@dataclass(slots=True)
class HoldFigures:
    """What metering reads and changes of a hold: a plain copy, cheap to make by the thousand."""

    id: uuid.UUID
    account_id: uuid.UUID
    rate_per_hour: int
    window_seconds: int
    for_group_wallet_id: uuid.UUID | None
    reserved: int
    captured: int
    status: str


async def open_holds(db: AsyncSession) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """Every open hold: (hold id, the session it is for)."""
    rows = await db.execute(text("SELECT id, session_id FROM credit_holds WHERE status = 'open'"))
    return [(r.id, r.session_id) for r in rows]


_LOCK_HOLDS = text(
    "SELECT id, account_id, rate_per_hour, window_seconds, for_group_wallet_id, reserved, "
    "captured, status FROM credit_holds WHERE id = ANY(:ids) ORDER BY id FOR UPDATE"
)


async def lock_holds(db: AsyncSession, ids: Sequence[uuid.UUID]) -> list[HoldFigures]:
    """Holds, their rows locked in id order."""
    rows = (await db.execute(_LOCK_HOLDS, {"ids": list(ids)})).all()
    return [HoldFigures(*row) for row in rows]


# Everything one metering batch writes, in one statement: wallets, lots, holds, one capture
# transfer per hold with its two entries, and the wallet events. Entries are written in the
# order the captures were computed (a wallet's running balance follows it), hence ORDINALITY.
_POST_METERING = text(
    f"WITH {_SET_MANY}, {_LOT_DELTAS}, ins AS ({_NEW_LOTS} RETURNING 1), {outbox.RECORD_CTE}, "  # noqa: S608
    "h AS (UPDATE credit_holds AS c SET reserved = v.reserved, captured = v.captured "
    "FROM unnest(CAST(:hold_ids AS uuid[]), CAST(:reserveds AS bigint[]), "
    "CAST(:captureds AS bigint[])) AS v(id, reserved, captured) WHERE c.id = v.id RETURNING 1), "
    "cap AS (SELECT * FROM unnest(CAST(:transfer_ids AS uuid[]), CAST(:cap_holds AS uuid[]), "
    "CAST(:cap_wallets AS uuid[]), CAST(:cap_amounts AS bigint[]), CAST(:cap_afters AS bigint[])) "
    "WITH ORDINALITY AS cap(id, hold_id, wallet_id, amount, after, n)), "
    "t AS (INSERT INTO credit_transfers "
    "(id, kind, debit_account_id, credit_account_id, amount, memo, actor_id, hold_id, created_at) "
    "SELECT id, 'capture', wallet_id, :consumption, amount, NULL, NULL, hold_id, :at FROM cap "
    "RETURNING id) "
    "INSERT INTO credit_entries (transfer_id, account_id, amount, balance_after, created_at) "
    "SELECT e.transfer_id, e.account_id, e.amount, e.balance_after, :at FROM t, (SELECT cap.id "
    "AS transfer_id, cap.wallet_id AS account_id, -cap.amount AS amount, cap.after AS "
    "balance_after, cap.n AS k, 1 AS side FROM cap UNION ALL SELECT cap.id, "
    "CAST(:consumption AS uuid), cap.amount, NULL, cap.n, 2 FROM cap) AS e "
    "WHERE e.transfer_id = t.id ORDER BY e.k, e.side"
)


async def post_metering(
    db: AsyncSession,
    *,
    wallets: Sequence[LockedWallet],
    holds: Sequence[HoldFigures],
    lot_deltas: dict[tuple[uuid.UUID, uuid.UUID], int],
    captures: Sequence[tuple[uuid.UUID, uuid.UUID, int, int]],
    consumption_id: uuid.UUID,
    now: datetime,
    events: Sequence[outbox.NewEvent],
) -> None:
    """Write one metering batch (`captures`: hold, wallet, amount, the wallet's balance after)."""
    transfer_ids = [new_id() for _ in captures]
    await db.execute(
        _POST_METERING,
        {
            "ids": [w.id for w in wallets],
            "balances": [w.balance for w in wallets],
            "helds": [w.held for w in wallets],
            **_lot_params(lot_deltas),
            **outbox.params(events),
            "hold_ids": [h.id for h in holds],
            "reserveds": [h.reserved for h in holds],
            "captureds": [h.captured for h in holds],
            "transfer_ids": transfer_ids,
            "cap_holds": [c[0] for c in captures],
            "cap_wallets": [c[1] for c in captures],
            "cap_amounts": [c[2] for c in captures],
            "cap_afters": [c[3] for c in captures],
            "consumption": consumption_id,
            "at": now,
        },
    )
    if events:
        outbox.recorded(db)


def _wallet_params(wallets: Sequence[LockedWallet]) -> dict[str, list[Any]]:
    return {
        "ids": [w.id for w in wallets],
        "balances": [w.balance for w in wallets],
        "helds": [w.held for w in wallets],
    }


def _stored_hold(hold: CreditHold) -> dict[str, Any]:
    return {
        "id": hold.id,
        "reserved": hold.reserved,
        "captured": hold.captured,
        "status": hold.status,
        "resolved_at": hold.resolved_at,
    }


async def store_hold(db: AsyncSession, hold: CreditHold) -> None:
    await db.execute(_STORE_HOLD, _stored_hold(hold))


async def post_hold(
    db: AsyncSession, wallet: LockedWallet, hold: CreditHold, events: Sequence[outbox.NewEvent]
) -> None:
    """Write a new hold with its locked wallet's new figures and the events announcing them,
    in one statement."""
    await db.execute(
        _POST_HOLD, {**_wallet_params([wallet]), **_hold_values(hold), **outbox.params(events)}
    )
    if events:
        outbox.recorded(db)


async def post_resolution(
    db: AsyncSession,
    hold: CreditHold,
    *,
    captured: int,
    released: int,
    wallets: Sequence[LockedWallet],
    events: Sequence[outbox.NewEvent],
) -> None:
    """Write a resolved hold (its status, `resolved_at` and final figures set), the resolution
    (what this settlement `captured` and `released`) and the new figures of these locked
    wallets with their events, in one statement."""
    await db.execute(
        _POST_RESOLUTION,
        {
            **_stored_hold(hold),
            "captured_now": captured,
            "released_now": released,
            **_wallet_params(wallets),
            **outbox.params(events),
        },
    )
    if events:
        outbox.recorded(db)


async def sessions_of_holds(
    db: AsyncSession, hold_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, uuid.UUID]:
    """The session each hold was placed for."""
    if not hold_ids:
        return {}
    rows = await db.execute(
        text("SELECT id, session_id FROM credit_holds WHERE id = ANY(:ids)"),
        {"ids": list(set(hold_ids))},
    )
    return {r.id: r.session_id for r in rows}


async def wallet(db: AsyncSession, wallet_id: uuid.UUID) -> CreditAccount | None:
    return await db.get(CreditAccount, wallet_id)


_AVAILABLE = text(
    "SELECT owner_id, id, balance - held, closed_at FROM credit_accounts "
    "WHERE kind = :kind AND owner_id = ANY(:owners)"
)


@dataclass(frozen=True)
class Available:
    wallet_id: uuid.UUID | None
    amount: int  # balance less what holds reserve; 0 without an open wallet


async def available_to(
    db: AsyncSession, kind: str, owner_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, Available]:
    """What each owner's wallet has available, in one query; owners without a wallet have 0."""
    rows = await db.execute(_AVAILABLE, {"kind": kind, "owners": list(owner_ids)})
    found = {r[0]: Available(r[1], 0 if r[3] is not None else int(r[2])) for r in rows}
    return {o: found.get(o, Available(None, 0)) for o in owner_ids}


_SESSION_WALLETS = text(
    "SELECT kind, id, balance - held, closed_at FROM credit_accounts "
    "WHERE (kind = 'user' AND owner_id = :user) OR (kind = 'group' AND owner_id = :group)"
)


async def session_wallets(
    db: AsyncSession, user_id: uuid.UUID, group_id: uuid.UUID
) -> tuple[Available, uuid.UUID | None]:
    """What the user's wallet has available and the id of the group's wallet (None until the
    group has one), in one query."""
    user, group = Available(None, 0), None
    for kind, wallet_id, available, closed_at in await db.execute(
        _SESSION_WALLETS, {"user": user_id, "group": group_id}
    ):
        if kind == "user":
            user = Available(wallet_id, 0 if closed_at is not None else int(available))
        else:
            group = wallet_id
    return user, group


async def wallet_of(db: AsyncSession, kind: str, owner_id: uuid.UUID) -> CreditAccount | None:
    return await db.scalar(
        select(CreditAccount).where(CreditAccount.kind == kind, CreditAccount.owner_id == owner_id)
    )


async def wallets_of(
    db: AsyncSession, kind: str, owner_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, CreditAccount]:
    rows = await db.scalars(
        select(CreditAccount).where(
            CreditAccount.kind == kind, CreditAccount.owner_id.in_(list(owner_ids))
        )
    )
    return {row.owner_id: row for row in rows if row.owner_id is not None}


async def last_refills(
    db: AsyncSession, account_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, CreditRefill]:
    rows = await db.scalars(
        select(CreditRefill)
        .where(CreditRefill.account_id.in_(list(account_ids)))
        .order_by(CreditRefill.account_id, CreditRefill.period.desc())
        .ext(distinct_on(CreditRefill.account_id))
    )
    return {row.account_id: row for row in rows}


@dataclass(frozen=True)
class EntryRow:
    entry: CreditEntry
    transfer: CreditTransfer
    counterparty_id: uuid.UUID


async def entries(
    db: AsyncSession,
    account_id: uuid.UUID,
    page: PageRequest,
    *,
    kind: str | None,
    since: datetime | None,
    until: datetime | None,
) -> list[EntryRow]:
    counter = func.coalesce(
        func.nullif(CreditTransfer.debit_account_id, account_id), CreditTransfer.credit_account_id
    )
    query = (
        select(CreditEntry, CreditTransfer, counter)
        .join(CreditTransfer, CreditTransfer.id == CreditEntry.transfer_id)
        .where(CreditEntry.account_id == account_id)
    )
    if kind is not None:
        query = query.where(CreditTransfer.kind == kind)
    if since is not None:
        query = query.where(CreditEntry.created_at >= since)
    if until is not None:
        query = query.where(CreditEntry.created_at < until)
    after = page.after_sequence()
    if after is not None:
        query = query.where(CreditEntry.id < after)
    query = query.order_by(CreditEntry.id.desc()).limit(page.limit + 1)
    rows = (await db.execute(query)).all()
    return [EntryRow(r[0], r[1], r[2]) for r in rows]


async def accounts_by_id(
    db: AsyncSession, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, CreditAccount]:
    rows = await db.scalars(select(CreditAccount).where(CreditAccount.id.in_(list(ids))))
    return {row.id: row for row in rows}


async def consumption_by_day(
    db: AsyncSession, account_id: uuid.UUID, since: datetime
) -> dict[str, int]:
    day = func.to_char(func.timezone("UTC", CreditEntry.created_at), "YYYY-MM-DD")
    rows = await db.execute(
        select(day, func.sum(-CreditEntry.amount))
        .join(CreditTransfer, CreditTransfer.id == CreditEntry.transfer_id)
        .where(
            CreditEntry.account_id == account_id,
            CreditTransfer.kind == "capture",
            CreditEntry.created_at >= since,
        )
        .group_by(day)
    )
    return {r[0]: int(r[1]) for r in rows}


async def captures_of_session(
    db: AsyncSession, session_id: uuid.UUID, width: timedelta
) -> list[tuple[datetime, int]]:
    """What was captured for a session's holds, summed per `width` (aligned to the Unix epoch):
    (the last capture's time in the bin, amount), oldest first."""
    seconds = width.total_seconds()
    rows = await db.execute(
        text(
            "SELECT max(t.created_at) AS at, sum(t.amount) AS amount "
            "FROM credit_holds h JOIN credit_transfers t ON t.hold_id = h.id "
            "WHERE h.session_id = :session_id AND t.kind = 'capture' "
            "GROUP BY floor(extract(epoch FROM t.created_at) / :seconds) ORDER BY 1"
        ),
        {"session_id": session_id, "seconds": seconds},
    )
    return [(r.at, int(r.amount)) for r in rows]


async def wallets_with_grants(db: AsyncSession) -> list[CreditAccount]:
    rows = await db.scalars(select(CreditAccount).where(CreditAccount.monthly_grant.is_not(None)))
    return list(rows)


async def claim_refill(
    db: AsyncSession, account_id: uuid.UUID, period: str, grant: int, now: datetime
) -> bool:
    """Claim this wallet's refill for the period; False when it was already done."""
    claimed = await db.scalar(
        insert(CreditRefill)
        .values(account_id=account_id, period=period, grant=grant, amount=0, shortfall=0, at=now)
        .on_conflict_do_nothing()
        .returning(CreditRefill.account_id)
    )
    return claimed is not None


async def record_refill(
    db: AsyncSession,
    account_id: uuid.UUID,
    period: str,
    *,
    amount: int,
    shortfall: int,
    transfer_id: uuid.UUID | None,
) -> None:
    await db.execute(
        text(
            "UPDATE credit_refills SET amount = :amount, shortfall = :shortfall, "
            "transfer_id = :transfer WHERE account_id = :account AND period = :period"
        ),
        {
            "amount": amount,
            "shortfall": shortfall,
            "transfer": transfer_id,
            "account": account_id,
            "period": period,
        },
    )


# ---- wallet alerts -------------------------------------------------------------------------


async def alert_of(db: AsyncSession, account_id: uuid.UUID) -> WalletAlert | None:
    query = select(WalletAlert).where(WalletAlert.account_id == account_id)
    found: WalletAlert | None = await db.scalar(query)
    return found


async def burn_per_hour(db: AsyncSession, account_id: uuid.UUID) -> int:
    """The hourly rate of the wallet's open holds: what its running sessions are billed."""
    query = select(func.coalesce(func.sum(CreditHold.rate_per_hour), 0)).where(
        CreditHold.account_id == account_id, CreditHold.status == "open"
    )
    return int(await db.scalar(query) or 0)


# Alerts with each wallet's balance and burn, locked (others' skipped), a batch from `after`.
_ALERTS_DUE = text(
    "SELECT w.account_id, w.below, w.runway_hours, w.below_told_at, w.runway_told_at, "
    "a.kind, a.owner_id, a.balance, "
    "(SELECT coalesce(sum(h.rate_per_hour), 0) FROM credit_holds h "
    "WHERE h.account_id = w.account_id AND h.status = 'open') AS burn "
    "FROM wallet_alerts w JOIN credit_accounts a ON a.id = w.account_id "
    "WHERE w.account_id > :after AND a.closed_at IS NULL "
    "ORDER BY w.account_id LIMIT :limit FOR UPDATE OF w SKIP LOCKED"
)


async def alerts_due(db: AsyncSession, after: uuid.UUID, limit: int) -> list[Any]:
    return list((await db.execute(_ALERTS_DUE, {"after": after, "limit": limit})).all())


async def mark_alert(
    db: AsyncSession,
    account_id: uuid.UUID,
    below_told_at: datetime | None,
    runway_told_at: datetime | None,
) -> None:
    await db.execute(
        update(WalletAlert)
        .where(WalletAlert.account_id == account_id)
        .values(below_told_at=below_told_at, runway_told_at=runway_told_at)
    )


async def put_alert(
    db: AsyncSession,
    account_id: uuid.UUID,
    below: int | None,
    runway_hours: int | None,
    set_by: uuid.UUID,
    now: datetime,
) -> None:
    """Set or replace a wallet's alert, armed anew; one row however many set it at once."""
    values = {
        "below": below,
        "runway_hours": runway_hours,
        "set_by": set_by,
        "set_at": now,
        "below_told_at": None,
        "runway_told_at": None,
    }
    await db.execute(
        insert(WalletAlert)
        .values(account_id=account_id, **values)
        .on_conflict_do_update(index_elements=[WalletAlert.account_id], set_=values)
    )


async def remove_alert(db: AsyncSession, account_id: uuid.UUID) -> None:
    await db.execute(delete(WalletAlert).where(WalletAlert.account_id == account_id))


_NEAR_BUDGET = text(
    "SELECT a.owner_id FROM credit_accounts a LEFT JOIN wallet_alerts w ON w.account_id = a.id "
    "WHERE a.kind = 'user' AND a.owner_id = ANY(:ids) AND a.closed_at IS NULL AND ("
    "w.below_told_at IS NOT NULL OR w.runway_told_at IS NOT NULL "
    "OR (a.monthly_grant > 0 AND a.balance * 10 < a.monthly_grant)) ORDER BY a.owner_id"
)


async def near_budget(db: AsyncSession, user_ids: Sequence[uuid.UUID]) -> list[uuid.UUID]:
    if not user_ids:
        return []
    return list(await db.scalars(_NEAR_BUDGET, {"ids": list(user_ids)}))
