"""The ledger's operations: each locks what it touches, checks with the pure arithmetic, posts.

They run inside the caller's transaction and never commit. Locks are always taken in the same
order (a hold first, then wallets by id), so concurrent operations cannot deadlock. A wallet's
lots are read and changed only while its row is locked, so they need no lock of their own.
Permission checks belong to the callers (service.py for the API, the worker, sessions).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from gshare.credits import ledger, repository
from gshare.credits.amounts import format_amount, hold_amount
from gshare.credits.ledger import Draw, Settlement, Wallet
from gshare.credits.models import CreditAccount, CreditHold
from gshare.credits.repository import Available, LockedWallet
from gshare.events import outbox
from gshare.events.notifications import notify_user
from gshare.kit.errors import Conflict, NotFound
from gshare.kit.ids import new_id


class HoldResolved(Conflict):
    code = "hold_resolved"
    message = "This hold is already settled or released."


async def _locked(db: AsyncSession, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, LockedWallet]:
    wallets = await repository.lock_wallets(db, ids)
    # A closed wallet's owner is gone: seen only after the lock, so no movement can slip in
    # between a deletion's check and its commit.
    if len(wallets) != len(set(ids)) or any(w.closed for w in wallets.values()):
        raise NotFound("No such wallet.", code="wallet_not_found")
    return wallets


def _set(locked: LockedWallet, after: Wallet) -> None:
    locked.balance, locked.held = after.balance, after.held


async def _apply(db: AsyncSession, locked: LockedWallet, after: Wallet) -> None:
    _set(locked, after)
    await repository.store_wallet(db, locked)
    await _announce(db, [locked])


WALLET_CHANGED = "wallet.changed"


def _audience(wallet: LockedWallet) -> outbox.Audience:
    if wallet.kind == "org":
        return outbox.Audience(org_id=wallet.owner_id)
    if wallet.kind == "group":
        return outbox.Audience(group_id=wallet.owner_id)
    return outbox.Audience(user_id=wallet.owner_id)


def _changed(wallets: Sequence[LockedWallet]) -> list[outbox.NewEvent]:
    """Every change of a wallet's figures is an event for those who may read the wallet."""
    return [
        outbox.NewEvent(
            WALLET_CHANGED,
            _audience(w),
            {
                "wallet_id": str(w.id),
                "owner_kind": w.kind,
                "owner_id": str(w.owner_id),
                "balance": format_amount(w.balance),
                "held": format_amount(w.held),
            },
        )
        for w in wallets
        if w.owner_id is not None
    ]


async def _announce(db: AsyncSession, wallets: Sequence[LockedWallet]) -> None:
    await outbox.record_many(db, _changed(wallets))


def _deltas(wallet_id: uuid.UUID, draws: Sequence[Draw]) -> dict[tuple[uuid.UUID, uuid.UUID], int]:
    return {(wallet_id, d.funder_id): -d.amount for d in draws}


@dataclass(frozen=True)
class Movement:
    transfer_id: uuid.UUID
    drawn: list[Draw]  # what left the source, lot by lot


async def mint(
    db: AsyncSession,
    *,
    wallet_id: uuid.UUID,
    amount: int,
    now: datetime,
    actor_id: uuid.UUID | None = None,
    memo: str | None = None,
    kind: str = "mint",
) -> uuid.UUID:
    """New credits into an organization's wallet, out of the mint account."""
    mint_account = await repository.account_id(db, "mint", None, now)
    target = (await _locked(db, [wallet_id]))[wallet_id]
    if target.kind != "org":
        raise Conflict("Credits are minted into organization wallets only.", code="not_an_org")
    after = ledger.receive(Wallet(target.balance, target.held), amount)
    await _apply(db, target, after)
    await repository.change_lots(db, {(wallet_id, mint_account): amount})
    return await repository.insert_transfer(
        db,
        kind=kind,
        debit=mint_account,
        credit=wallet_id,
        amount=amount,
        now=now,
        debit_after=None,
        credit_after=after.balance,
        memo=memo,
        actor_id=actor_id,
    )


async def move(
    db: AsyncSession,
    *,
    from_id: uuid.UUID,
    to_id: uuid.UUID,
    amount: int,
    kind: str,
    now: datetime,
    actor_id: uuid.UUID | None = None,
    memo: str | None = None,
) -> Movement:
    """Credits from one wallet to another; only what the source has available.

    A `return` is a take-back by a wallet that funded the source: it draws only that funder's
    lot and refills the funder's own oldest lot. Anything else draws the source's lots in
    spending order and grows the target's lot from the source."""
    if from_id == to_id:
        raise Conflict("A transfer needs two different wallets.", code="same_wallet")
    wallets = await _locked(db, [from_id, to_id])
    source, target = wallets[from_id], wallets[to_id]
    source_after = ledger.pay(Wallet(source.balance, source.held), amount)
    target_after = ledger.receive(Wallet(target.balance, target.held), amount)
    lots = await repository.lots_of(db, [from_id, to_id])
    take_back = kind == "return"
    if take_back:
        drawn = ledger.draw_take_back(lots[from_id], to_id, amount)
    else:
        drawn = ledger.draw_spending(lots[from_id], amount)
    receiver = ledger.receiving_funder(lots[to_id], from_id, take_back=take_back)
    deltas = _deltas(from_id, drawn)
    deltas[(to_id, receiver)] = deltas.get((to_id, receiver), 0) + amount
    source.balance, source.held = source_after.balance, source_after.held
    target.balance, target.held = target_after.balance, target_after.held
    transfer_id = await repository.post_movement(
        db,
        source=source,
        target=target,
        lot_deltas=deltas,
        kind=kind,
        amount=amount,
        now=now,
        memo=memo,
        actor_id=actor_id,
        events=_changed([source, target]),
    )
    return Movement(transfer_id, drawn)


async def account_id(
    db: AsyncSession, kind: str, owner_id: uuid.UUID | None, now: datetime
) -> uuid.UUID:
    """The wallet of an owner (or a system account), opened the first time it is needed."""
    return await repository.account_id(db, kind, owner_id, now)


async def available_to(
    db: AsyncSession, kind: str, owner_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, Available]:
    """What each owner's wallet has available to hold, read without a lock (a hold placed on it
    checks again under one); owners without an open wallet have 0."""
    return await repository.available_to(db, kind, owner_ids)


async def session_wallets(
    db: AsyncSession, user_id: uuid.UUID, group_id: uuid.UUID
) -> tuple[Available, uuid.UUID | None]:
    """For a session of the user in the group: what the user's wallet has available to hold
    (read without a lock, as `available_to`) and the group's wallet id, None until it has one."""
    return await repository.session_wallets(db, user_id, group_id)


async def place_hold(
    db: AsyncSession,
    *,
    wallet_id: uuid.UUID,
    session_id: uuid.UUID,
    rate_per_hour: int,
    window_seconds: int,
    now: datetime,
    for_group_wallet_id: uuid.UUID | None = None,
) -> CreditHold:
    """Reserve the rate over one window from the wallet's available credits.

    `for_group_wallet_id` names the wallet of the group the session runs for: captures spend
    that group's lot first."""
    amount = hold_amount(rate_per_hour, window_seconds)
    wallet = (await _locked(db, [wallet_id]))[wallet_id]
    if wallet.kind != "user":
        raise Conflict("Sessions are billed to personal wallets only.", code="not_a_user_wallet")
    _set(wallet, ledger.reserve(Wallet(wallet.balance, wallet.held), amount))
    hold = CreditHold(
        id=new_id(),
        account_id=wallet_id,
        session_id=session_id,
        rate_per_hour=rate_per_hour,
        window_seconds=window_seconds,
        for_group_wallet_id=for_group_wallet_id,
        reserved=amount,
        captured=0,
        status="open",
        created_at=now,
        resolved_at=None,
    )
    await repository.post_hold(db, wallet, hold, _changed([wallet]))
    return hold


async def _open_hold(db: AsyncSession, hold_id: uuid.UUID) -> tuple[CreditHold, LockedWallet]:
    """An open hold and its wallet, both locked (in one round trip)."""
    found = await repository.lock_hold_and_wallet(db, hold_id)
    if found is None:
        raise NotFound("No such hold.", code="hold_not_found")
    hold, wallet = found
    if hold.status != "open":
        raise HoldResolved()
    if wallet.closed:  # as `_locked`
        raise NotFound("No such wallet.", code="wallet_not_found")
    return hold, wallet


async def _capture_locked(
    db: AsyncSession, hold: CreditHold, wallet: LockedWallet, amount: int, now: datetime
) -> uuid.UUID:
    consumption = await repository.account_id(db, "consumption", None, now)
    after, remaining = ledger.capture(Wallet(wallet.balance, wallet.held), hold.reserved, amount)
    lots = await repository.lots_of(db, [wallet.id])
    drawn = ledger.draw_spending(lots[wallet.id], amount, prefer=hold.for_group_wallet_id)
    await _apply(db, wallet, after)
    await repository.change_lots(db, _deltas(wallet.id, drawn))
    hold.reserved = remaining
    hold.captured += amount
    await repository.store_hold(db, hold)
    return await repository.insert_transfer(
        db,
        kind="capture",
        debit=wallet.id,
        credit=consumption,
        amount=amount,
        now=now,
        debit_after=after.balance,
        credit_after=None,
        hold_id=hold.id,
    )


async def capture(db: AsyncSession, *, hold_id: uuid.UUID, amount: int, now: datetime) -> uuid.UUID:
    """Charge metered use out of an open hold."""
    hold, wallet = await _open_hold(db, hold_id)
    transfer_id = await _capture_locked(db, hold, wallet, amount, now)
    await db.flush()
    return transfer_id


async def extend_hold(
    db: AsyncSession, *, hold_id: uuid.UUID, now: datetime, windows: int = 1
) -> CreditHold:
    """Reserve another window at the hold's rate, if the wallet has it available."""
    hold, wallet = await _open_hold(db, hold_id)
    extra = hold_amount(hold.rate_per_hour, hold.window_seconds * windows)
    await _apply(db, wallet, ledger.reserve(Wallet(wallet.balance, wallet.held), extra))
    hold.reserved += extra
    await repository.store_hold(db, hold)
    return hold


async def _resolve(
    db: AsyncSession,
    hold: CreditHold,
    kind: str,
    captured: int,
    released: int,
    now: datetime,
    wallet: LockedWallet,
) -> None:
    """Close the hold, giving `released` back to its locked wallet: the wallet, its event, the
    resolution and the hold are written in one statement."""
    changed = []
    if released:
        _set(wallet, ledger.release(Wallet(wallet.balance, wallet.held), released))
        changed = [wallet]
    hold.status, hold.reserved, hold.resolved_at = kind, 0, now
    await repository.post_resolution(
        db, hold, captured=captured, released=released, wallets=changed, events=_changed(changed)
    )


async def settle_hold(
    db: AsyncSession, *, hold_id: uuid.UUID, used: int, now: datetime
) -> Settlement:
    """At stop or pause: capture what was used since the last capture, release the rest."""
    hold, wallet = await _open_hold(db, hold_id)
    outcome = ledger.settle(hold.reserved, used)
    if outcome.captured:
        await _capture_locked(db, hold, wallet, outcome.captured, now)
    await _resolve(db, hold, "settled", outcome.captured, outcome.released, now, wallet)
    return outcome


async def release_hold(db: AsyncSession, *, hold_id: uuid.UUID, now: datetime) -> int:
    """Give everything still reserved back to the wallet."""
    hold, wallet = await _open_hold(db, hold_id)
    released = hold.reserved
    await _resolve(db, hold, "released", 0, released, now, wallet)
    return released


async def open_holds(db: AsyncSession) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """Every open hold, with the session it is for (for the repair of leaks)."""
    return await repository.open_holds(db)


async def payable(db: AsyncSession, hold_id: uuid.UUID) -> int:
    """What a hold can still pay: its reserve while it is open, else nothing. The hold is locked
    until commit, so the figure stays true for the rest of the caller's transaction."""
    holds = await repository.lock_holds(db, [hold_id])
    return holds[0].reserved if holds and holds[0].status == "open" else 0


async def set_monthly_grant(
    db: AsyncSession,
    *,
    wallet_id: uuid.UUID,
    amount: int,
    funding_wallet_id: uuid.UUID | None,
) -> CreditAccount:
    """Set (amount > 0) or clear (0) a wallet's monthly grant and which wallet pays it."""
    account = await repository.wallet(db, wallet_id)
    if account is None:
        raise NotFound("No such wallet.", code="wallet_not_found")
    account.monthly_grant = amount or None
    account.grant_funding_account_id = funding_wallet_id if amount else None
    await db.flush()
    return account


@dataclass(frozen=True)
class RefillResult:
    wallet_id: uuid.UUID
    amount: int
    shortfall: int


async def refill_wallet(
    db: AsyncSession, *, wallet_id: uuid.UUID, period: str, now: datetime
) -> RefillResult | None:
    """Top one wallet up to its grant for `period`; None when already done or no grant."""
    account = await repository.wallet(db, wallet_id)
    if account is None or account.monthly_grant is None:
        return None
    grant = account.monthly_grant
    if not await repository.claim_refill(db, wallet_id, period, grant, now):
        return None
    source_id = account.grant_funding_account_id
    ids = [wallet_id] if source_id is None else [wallet_id, source_id]
    wallets = await _locked(db, ids)
    target = wallets[wallet_id]
    source = wallets.get(source_id) if source_id else None
    if account.kind != "org" and source is None:
        result = ledger.TopUp(0, max(0, grant - target.balance))  # nobody funds it
    else:
        available = None if source is None else source.balance - source.held
        result = ledger.top_up(target.balance, grant, available)
    transfer_id = None
    if result.amount and account.kind == "org":
        transfer_id = await mint(
            db,
            wallet_id=wallet_id,
            amount=result.amount,
            now=now,
            memo=f"monthly grant {period}",
            kind="refill",
        )
    elif result.amount and source_id is not None:
        moved = await move(
            db,
            from_id=source_id,
            to_id=wallet_id,
            amount=result.amount,
            kind="refill",
            now=now,
            memo=f"monthly grant {period}",
        )
        transfer_id = moved.transfer_id
    await repository.record_refill(
        db,
        wallet_id,
        period,
        amount=result.amount,
        shortfall=result.shortfall,
        transfer_id=transfer_id,
    )
    if result.amount and account.kind == "user" and account.owner_id is not None:
        await notify_user(
            db,
            account.owner_id,
            "credits.monthly_grant",
            title=f"Your monthly grant of {format_amount(result.amount)} credits was paid",
            body=f"The grant for {period} is in your wallet.",
            now=now,
            data={"wallet_id": str(wallet_id), "period": period},
        )
    return RefillResult(wallet_id, result.amount, result.shortfall)


@dataclass(frozen=True)
class Charge:
    """Metered use to capture from one open hold."""

    hold_id: uuid.UUID
    amount: int


@dataclass(frozen=True)
class Charged:
    hold_id: uuid.UUID
    captured: int  # what was captured (less than asked only when the hold ran out)
    extended: bool  # another window was reserved
    short: bool  # the hold is low and the wallet cannot extend it: the session must stop using it


async def meter_holds(
    db: AsyncSession, charges: Sequence[Charge], *, lead_seconds: int, now: datetime
) -> list[Charged]:
    """Capture metered use from many open holds at once, and extend each hold that would run
    out within `lead_seconds` by one window where its wallet has the credits.

    Set-based: the holds, their wallets and lots are locked and read in three statements and
    everything is written in one, however many holds there are. Holds are locked before wallets
    and each in id order, as every other operation does. Holds that are no longer open are
    skipped (their session was settled meanwhile)."""
    if not charges:
        return []
    wanted = {c.hold_id: c.amount for c in charges}
    holds = await repository.lock_holds(db, sorted(wanted))
    holds = [h for h in holds if h.status == "open"]
    wallets = await _locked(db, sorted({h.account_id for h in holds})) if holds else {}
    lots = await repository.lots_of(db, list(wallets))
    consumption = await repository.account_id(db, "consumption", None, now)
    figures = {w.id: Wallet(w.balance, w.held) for w in wallets.values()}
    lot_deltas: dict[tuple[uuid.UUID, uuid.UUID], int] = {}
    captures: list[tuple[uuid.UUID, uuid.UUID, int, int]] = []  # hold, wallet, amount, after
    out: list[Charged] = []
    for hold in holds:
        wallet_id = hold.account_id
        amount = min(wanted[hold.id], hold.reserved)
        if amount > 0:
            figures[wallet_id], hold.reserved = ledger.capture(
                figures[wallet_id], hold.reserved, amount
            )
            hold.captured += amount
            drawn = ledger.draw_spending(lots[wallet_id], amount, prefer=hold.for_group_wallet_id)
            lots[wallet_id] = ledger.after_draws(lots[wallet_id], drawn)
            for key, delta in _deltas(wallet_id, drawn).items():
                lot_deltas[key] = lot_deltas.get(key, 0) + delta
            captures.append((hold.id, wallet_id, amount, figures[wallet_id].balance))
        extended = short = False
        needed = hold.rate_per_hour * lead_seconds // 3600 + 1
        if hold.reserved < needed:
            extra = hold_amount(hold.rate_per_hour, hold.window_seconds)
            if extra <= figures[wallet_id].available:
                figures[wallet_id] = ledger.reserve(figures[wallet_id], extra)
                hold.reserved += extra
                extended = True
            else:
                short = True
        out.append(Charged(hold.id, amount, extended, short or amount < wanted[hold.id]))
    changed = [w for w in wallets.values() if Wallet(w.balance, w.held) != figures[w.id]]
    for w in changed:
        w.balance, w.held = figures[w.id].balance, figures[w.id].held
    await repository.post_metering(
        db,
        wallets=changed,
        holds=holds,
        lot_deltas=lot_deltas,
        captures=captures,
        consumption_id=consumption,
        now=now,
        events=_changed(changed),
    )
    return out
