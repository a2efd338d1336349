"""Credit use cases for the API: each checks who may act, then calls the ledger operations.

Responses are built in views.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from gshare.credits import alerts, invariants, operations, repository, views
from gshare.credits.amounts import AmountError, format_amount, parse_amount
from gshare.credits.ledger import Draw
from gshare.credits.models import CreditAccount, CreditHold
from gshare.credits.schemas import (
    ConsumptionDayOut,
    ConsumptionOut,
    EntryOut,
    TransferOut,
    WalletAlertOut,
    WalletOut,
    WalletTreeOut,
)
from gshare.events.notifications import notify_user
from gshare.identity import service as identity
from gshare.identity.authz import Context, audit, require
from gshare.identity.permissions import Action, Scope, is_allowed
from gshare.kit.errors import BadRequest, Conflict, Forbidden, NotFound
from gshare.kit.hooks import Hook
from gshare.kit.pagination import PageRequest, page_of


class InvalidAmount(BadRequest):
    """An amount is not a positive decimal of credits with at most six decimals, or is out of
    range; the message says which."""

    code = "invalid_amount"


def amount_of(text: str, *, allow_zero: bool = False) -> int:
    try:
        return parse_amount(text, allow_zero=allow_zero)
    except AmountError as exc:
        raise InvalidAmount(str(exc)) from exc


# ---- reading wallets -----------------------------------------------------------------------


async def _read_scope(ctx: Context, account: CreditAccount) -> tuple[Action, Scope]:
    owner = account.owner_id
    assert owner is not None
    if account.kind == "org":
        return Action.WALLET_READ_ORG, Scope(org_id=owner)
    if account.kind == "group":
        org_id = await identity.group_org(ctx.db, owner)
        return Action.WALLET_READ_GROUP, Scope(org_id=org_id, group_id=owner)
    user_scope = await identity.user_scope_of(ctx.db, owner)
    return Action.WALLET_READ_USER, Scope(user=user_scope)


async def _readable(ctx: Context, wallet_id: uuid.UUID) -> CreditAccount:
    account = await repository.wallet(ctx.db, wallet_id)
    if account is None or account.owner_id is None:
        raise NotFound("No such wallet.", code="wallet_not_found")
    action, scope = await _read_scope(ctx, account)
    require(ctx, action, scope, target_type="wallet", target_id=account.id)
    return account


async def _wallet_of_owner(ctx: Context, kind: str, owner_id: uuid.UUID) -> CreditAccount:
    """An owner's wallet, created on first use; 404 when the owner does not exist."""
    if not await identity.names(ctx.db, kind, [owner_id]):
        raise NotFound(
            f"No such {'organization' if kind == 'org' else kind}.", code=f"{kind}_not_found"
        )
    wallet_id = await repository.account_id(ctx.db, kind, owner_id, ctx.now)
    account = await repository.wallet(ctx.db, wallet_id)
    assert account is not None
    return account


async def my_wallet(ctx: Context) -> WalletOut:
    account = await _wallet_of_owner(ctx, "user", ctx.actor.user_id)
    return await views.wallet_out(ctx.db, account)


async def get_wallet(ctx: Context, wallet_id: uuid.UUID) -> WalletOut:
    return await views.wallet_out(ctx.db, await _readable(ctx, wallet_id))


async def owner_wallet(ctx: Context, kind: str, owner_id: uuid.UUID) -> WalletOut:
    account = await _wallet_of_owner(ctx, kind, owner_id)
    return await get_wallet(ctx, account.id)


async def list_entries(
    ctx: Context,
    wallet_id: uuid.UUID,
    page: PageRequest,
    *,
    kind: str | None,
    since: datetime | None,
    until: datetime | None,
) -> tuple[list[EntryOut], str | None]:
    account = await _readable(ctx, wallet_id)
    rows, cursor = page_of(
        await repository.entries(ctx.db, account.id, page, kind=kind, since=since, until=until),
        page,
        lambda r: (r.entry.id,),
    )
    hidden = await _unreadable_counterparties(ctx, account, [r.counterparty_id for r in rows])
    return await views.entries_out(ctx.db, rows, hidden=hidden), cursor


async def _unreadable_counterparties(
    ctx: Context, account: CreditAccount, ids: Sequence[uuid.UUID]
) -> set[uuid.UUID]:
    """The other sides of these entries that the caller may not read. One user's wallet can be
    funded by groups of several organizations: an admin of one sees those entries' amounts, but
    not the other organization's wallet, names, memos or people. The owner sees everything."""
    own = account.kind == "user" and account.owner_id == ctx.actor.user_id
    if ctx.actor.is_super_admin or own:
        return set()
    hidden: set[uuid.UUID] = set()
    for other in (await repository.accounts_by_id(ctx.db, list(set(ids)))).values():
        if other.owner_id is None:
            continue  # the mint or consumption: names only
        action, scope = await _read_scope(ctx, other)
        if not is_allowed(ctx.actor, action, scope):
            hidden.add(other.id)
    return hidden


async def consumption(ctx: Context, wallet_id: uuid.UUID, days: int) -> ConsumptionOut:
    account = await _readable(ctx, wallet_id)
    today = ctx.now.astimezone().date() if ctx.now.tzinfo is None else ctx.now.date()
    first = today - timedelta(days=days - 1)
    since = datetime.combine(first, datetime.min.time(), tzinfo=ctx.now.tzinfo)
    by_day = await repository.consumption_by_day(ctx.db, account.id, since)
    series = [
        ConsumptionDayOut(day=str(d), amount=format_amount(by_day.get(str(d), 0)))
        for d in (first + timedelta(days=i) for i in range(days))
    ]
    return ConsumptionOut(wallet_id=account.id, days=series)


async def charges_of_session(
    db: AsyncSession, session_id: uuid.UUID, width: timedelta
) -> list[tuple[datetime, int]]:
    """A session's captured charges summed per `width`: (when, micro-credits), oldest first.
    The caller has checked that the reader may see the session."""
    return await repository.captures_of_session(db, session_id, width)


async def wallet_tree(ctx: Context, org_id: uuid.UUID) -> WalletTreeOut:
    org_account = await _wallet_of_owner(ctx, "org", org_id)
    require(ctx, Action.WALLET_TREE, Scope(org_id=org_id), target_type="org", target_id=org_id)
    actor = ctx.actor
    sees_org = actor.is_super_admin or org_id in actor.org_admin_of
    groups = [
        g
        for g in await identity.groups_of_org(ctx.db, org_id)
        if sees_org or g.id in actor.group_admin_of
    ]
    members = await identity.members_of_groups(ctx.db, [g.id for g in groups], ctx.now)
    group_wallets = await repository.ensure_accounts(
        ctx.db, "group", [g.id for g in groups], ctx.now
    )
    user_wallets = await repository.ensure_accounts(
        ctx.db, "user", [u for ids in members.values() for u in ids], ctx.now
    )
    tree = [
        views.GroupWallets(
            group_id=g.id,
            group_name=g.name,
            wallet=group_wallets[g.id],
            members=[user_wallets[u] for u in members[g.id]],
        )
        for g in groups
    ]
    return await views.wallet_tree_out(ctx.db, org_account if sees_org else None, tree)


# ---- moving credits ------------------------------------------------------------------------


async def mint(ctx: Context, org_id: uuid.UUID, amount_text: str, memo: str | None) -> TransferOut:
    require(ctx, Action.CREDITS_MINT, Scope(org_id=org_id), target_type="org", target_id=org_id)
    amount = amount_of(amount_text)
    account = await _wallet_of_owner(ctx, "org", org_id)
    transfer_id = await operations.mint(
        ctx.db,
        wallet_id=account.id,
        amount=amount,
        now=ctx.now,
        actor_id=ctx.actor.user_id,
        memo=memo,
    )
    await audit(
        ctx,
        Action.CREDITS_MINT,
        target_type="wallet",
        target_id=account.id,
        org_id=org_id,
        detail={"amount": format_amount(amount)},
    )
    return await views.transfer_out(
        ctx.db,
        transfer_id=transfer_id,
        source=None,
        target=account,
        amount=amount,
        memo=memo,
        at=ctx.now,
    )


async def _relation(
    ctx: Context, source: CreditAccount, target: CreditAccount
) -> tuple[Action, Scope, str]:
    """How two wallets are related: (the permission, its scope, 'allocation' or 'return')."""
    pair = {source.kind: source.owner_id, target.kind: target.owner_id}
    direction = "allocation" if _LEVEL[source.kind] < _LEVEL[target.kind] else "return"
    if set(pair) == {"org", "group"}:
        org_id = await identity.group_org(ctx.db, pair["group"])  # type: ignore[arg-type]
        if org_id == pair["org"]:
            return Action.CREDITS_MOVE_ORG_GROUP, Scope(org_id=org_id), direction
    if set(pair) == {"group", "user"}:
        user_scope = await identity.user_scope_of(ctx.db, pair["user"])  # type: ignore[arg-type]
        group_id = pair["group"]
        if user_scope is not None and group_id in user_scope.groups:
            scope = Scope.of_group(group_id, user_scope.groups[group_id])  # type: ignore[index,arg-type]
            return Action.CREDITS_MOVE_GROUP_USER, scope, direction
    raise BadRequest(
        "Credits move only between a wallet and its direct parent or child "
        "(organization and its group, group and its member).",
        code="not_parent_and_child",
    )


_LEVEL = {"org": 0, "group": 1, "user": 2}


async def transfer(
    ctx: Context, from_id: uuid.UUID, to_id: uuid.UUID, amount_text: str, memo: str | None
) -> TransferOut:
    amount = amount_of(amount_text)
    source = await repository.wallet(ctx.db, from_id)
    target = await repository.wallet(ctx.db, to_id)
    if source is None or target is None or source.owner_id is None or target.owner_id is None:
        raise NotFound("No such wallet.", code="wallet_not_found")
    action, scope, direction = await _relation(ctx, source, target)
    require(ctx, action, scope, target_type="wallet", target_id=target.id)
    moved = await operations.move(
        ctx.db,
        from_id=source.id,
        to_id=target.id,
        amount=amount,
        kind=direction,
        now=ctx.now,
        actor_id=ctx.actor.user_id,
        memo=memo,
    )
    if target.kind == "user":
        await _tell_receiver(ctx, source, target.owner_id, amount, memo)
    for org_id, group_id in await _scopes_moved(ctx.db, scope, moved.drawn):
        await audit(
            ctx,
            f"credits.{direction}",
            target_type="wallet",
            target_id=target.id,
            org_id=org_id,
            group_id=group_id,
            detail={"from": str(source.id), "to": str(target.id), "amount": format_amount(amount)},
        )
    return await views.transfer_out(
        ctx.db,
        transfer_id=moved.transfer_id,
        source=source,
        target=target,
        amount=amount,
        memo=memo,
        at=ctx.now,
    )


async def _tell_receiver(
    ctx: Context, source: CreditAccount, user_id: uuid.UUID, amount: int, memo: str | None
) -> None:
    assert source.owner_id is not None
    names = await identity.names(ctx.db, source.kind, [source.owner_id])
    body = f"From {names.get(source.owner_id, 'your ' + source.kind)}."
    await notify_user(
        ctx.db,
        user_id,
        "credits.received",
        title=f"You received {format_amount(amount)} credits",
        body=f"{body} {memo}" if memo else body,
        now=ctx.now,
        data={"amount": format_amount(amount), "from_kind": source.kind},
    )


async def _scopes_moved(
    db: AsyncSession, acting: Scope, drawn: Sequence[Draw]
) -> list[tuple[uuid.UUID | None, uuid.UUID | None]]:
    """Every scope whose credits a movement touched: the one it was allowed in, and the scope
    of each funder whose lot it drew. An entry naming a group is already seen by that group's
    organization, so a bare organization scope it covers gets no entry of its own."""
    scopes = {(acting.org_id, acting.group_id)}
    funders = await repository.accounts_by_id(db, [d.funder_id for d in drawn])
    for funder in funders.values():
        if funder.kind == "org":
            scopes.add((funder.owner_id, None))
        elif funder.kind == "group" and funder.owner_id is not None:
            scopes.add((await identity.group_org(db, funder.owner_id), funder.owner_id))
    covered = {org for org, group in scopes if group is not None}
    return sorted(
        (s for s in scopes if s[1] is not None or s[0] not in covered),
        key=lambda s: (str(s[0]), str(s[1])),
    )


async def set_monthly_grant(
    ctx: Context, wallet_id: uuid.UUID, amount_text: str, funding_wallet_id: uuid.UUID | None
) -> WalletOut:
    amount = amount_of(amount_text, allow_zero=True)
    account = await repository.wallet(ctx.db, wallet_id)
    if account is None or account.owner_id is None:
        raise NotFound("No such wallet.", code="wallet_not_found")
    if amount == 0 or account.monthly_grant is not None:
        # Replacing a grant removes the one in place, so it needs what clearing needs too: the
        # admin of one group cannot replace a grant that another group sets and pays.
        await _require_grant_clearing(ctx, account)
    funding = await _require_grant_setting(ctx, account, funding_wallet_id) if amount else None
    # Filed with the payer before and the payer after, when they differ.
    scopes = {await _audit_scope(ctx, account, funding or account.grant_funding_account_id)}
    if account.monthly_grant is not None:
        scopes.add(await _audit_scope(ctx, account, account.grant_funding_account_id))
    if len(scopes) > 1:
        scopes.discard((None, None))  # a payer that no longer exists has no scope to file in
    updated = await operations.set_monthly_grant(
        ctx.db, wallet_id=account.id, amount=amount, funding_wallet_id=funding
    )
    for org_id, group_id in sorted(scopes, key=str):
        await audit(
            ctx,
            "credits.monthly_grant",
            target_type="wallet",
            target_id=account.id,
            org_id=org_id,
            group_id=group_id,
            detail={
                "amount": format_amount(amount),
                "funding_wallet_id": str(funding) if funding else None,
            },
        )
    return await views.wallet_out(ctx.db, updated)


async def _require_grant_setting(
    ctx: Context, account: CreditAccount, funding_wallet_id: uuid.UUID | None
) -> uuid.UUID | None:
    """Who may set a grant, by the wallet's level; returns the wallet that will pay it (None:
    minted, for an organization)."""
    assert account.owner_id is not None
    if account.kind == "org":
        require(
            ctx,
            Action.GRANT_SET_ORG,
            Scope(org_id=account.owner_id),
            target_type="wallet",
            target_id=account.id,
        )
        return None
    if account.kind == "group":
        org_id = await identity.group_org(ctx.db, account.owner_id)
        require(
            ctx,
            Action.GRANT_SET_GROUP,
            Scope(org_id=org_id),
            target_type="wallet",
            target_id=account.id,
        )
        return await repository.account_id(ctx.db, "org", org_id, ctx.now)
    return await _user_grant_source(ctx, account, funding_wallet_id)


async def _require_grant_clearing(ctx: Context, account: CreditAccount) -> None:
    """Clearing a grant needs no payer, and works after the owner left the paying group or the
    group was deleted: whoever may set the grant where it stands may clear it, and the super
    admin always may."""
    assert account.owner_id is not None
    scope = Scope()
    action = Action.GRANT_SET_USER
    if account.kind == "org":
        action, scope = Action.GRANT_SET_ORG, Scope(org_id=account.owner_id)
    elif account.kind == "group":
        org_id = await identity.group_org(ctx.db, account.owner_id)
        action, scope = Action.GRANT_SET_GROUP, Scope(org_id=org_id)
    else:
        # The paying group's admins while that group exists; once it is gone, the admins of
        # the groups the user is in now (the super admin always).
        paying: Scope | None = None
        if account.grant_funding_account_id is not None:
            funding = await repository.wallet(ctx.db, account.grant_funding_account_id)
            group_id = funding.owner_id if funding else None
            org_id = await identity.group_org(ctx.db, group_id) if group_id else None
            if group_id is not None and org_id is not None:
                paying = Scope.of_group(group_id, org_id)
        if paying is not None:
            scope = paying
        else:
            user_scope = await identity.user_scope_of(ctx.db, account.owner_id)
            candidates = [
                Scope.of_group(g, o) for g, o in (user_scope.groups if user_scope else {}).items()
            ]
            allowed = [c for c in candidates if is_allowed(ctx.actor, action, c)]
            scope = allowed[0] if allowed else (candidates[0] if candidates else Scope())
    require(ctx, action, scope, target_type="wallet", target_id=account.id)


async def _audit_scope(
    ctx: Context, account: CreditAccount, funding: uuid.UUID | None
) -> tuple[uuid.UUID | None, uuid.UUID | None]:
    """The organization and group an audit entry about a grant belongs to: the wallet's own
    for organizations and groups, the paying group's for a member."""
    if account.kind == "org":
        return account.owner_id, None
    group = account if account.kind == "group" else None
    if group is None and funding is not None:
        group = await repository.wallet(ctx.db, funding)
    if group is None or group.owner_id is None:
        return None, None
    return await identity.group_org(ctx.db, group.owner_id), group.owner_id


async def _user_grant_source(
    ctx: Context, account: CreditAccount, funding_wallet_id: uuid.UUID | None
) -> uuid.UUID:
    """A user's grant is paid by one of their groups, whose admin sets it."""
    assert account.owner_id is not None
    user_scope = await identity.user_scope_of(ctx.db, account.owner_id)
    groups = user_scope.groups if user_scope else {}
    if funding_wallet_id is None:
        if len(groups) != 1:
            raise BadRequest(
                "Name the group wallet that pays this user's grant (funding_wallet_id).",
                code="funding_wallet_required",
            )
        group_id = next(iter(groups))
    else:
        funding = await repository.wallet(ctx.db, funding_wallet_id)
        if funding is None or funding.owner_id is None or funding.owner_id not in groups:
            raise BadRequest(
                "The funding wallet must be one of the user's groups.", code="not_parent_and_child"
            )
        if funding.kind != "group":
            raise BadRequest(
                "The funding wallet must be one of the user's groups.", code="not_parent_and_child"
            )
        group_id = funding.owner_id
    require(
        ctx,
        Action.GRANT_SET_USER,
        Scope.of_group(group_id, groups[group_id]),
        target_type="wallet",
        target_id=account.id,
    )
    return await repository.account_id(ctx.db, "group", group_id, ctx.now)


# Which of these sessions have ended? The sessions domain answers, for the ledger check.
ended_sessions: Hook[[list[uuid.UUID]], set[uuid.UUID]] = Hook("ended sessions")


async def _ended_among(db: AsyncSession, ids: list[uuid.UUID]) -> set[uuid.UUID]:
    return set().union(*await ended_sessions.results(db, ids))


async def check(ctx: Context) -> invariants.Report:
    require(ctx, Action.CREDITS_CHECK, target_type="ledger")
    return await invariants.check(ctx.db, _ended_among if ended_sessions.connected else None)


async def refuse_while_wallet_holds_credits(
    db: AsyncSession, kind: str, owner_id: uuid.UUID
) -> Conflict | None:
    """Deleting an organization or group must not strand its credits. The wallet is locked and
    closed in the deletion's transaction: a movement into it waits, then finds it closed."""
    wallet = await repository.wallet_of(db, kind, owner_id)
    if wallet is None:
        return None
    locked = (await repository.lock_wallets(db, [wallet.id]))[wallet.id]
    if await repository.close_wallet(db, wallet.id):
        return None
    return Conflict(
        f"Its wallet still holds {format_amount(locked.balance)} credits; take them back first.",
        code="wallet_not_empty",
    )


# ---- billing -------------------------------------------------------------------------------


async def hold_for_session(
    ctx: Context,
    *,
    session_id: uuid.UUID,
    rate_per_hour: int,
    window_seconds: int,
    wallet_id: uuid.UUID | None = None,
    for_group_id: uuid.UUID | None = None,
) -> CreditHold:
    """Reserve credits for the caller's own session; billing any other wallet is refused.

    `for_group_id`, the group the session runs for, must be one the caller is in now; its lot
    is spent first."""
    own = await repository.account_id(ctx.db, "user", ctx.actor.user_id, ctx.now)
    if wallet_id is not None and wallet_id != own:
        raise Forbidden("Sessions are billed to your own wallet only.", code="billing_other_wallet")
    group_wallet = None
    if for_group_id is not None:
        if for_group_id not in ctx.actor.member_of and for_group_id not in ctx.actor.guest_of:
            raise Forbidden("You are not in that group.", code="not_in_group")
        group_wallet = await repository.account_id(ctx.db, "group", for_group_id, ctx.now)
    return await operations.place_hold(
        ctx.db,
        wallet_id=own,
        session_id=session_id,
        rate_per_hour=rate_per_hour,
        window_seconds=window_seconds,
        now=ctx.now,
        for_group_wallet_id=group_wallet,
    )


# ---- wallet alerts -------------------------------------------------------------------------


ALERT_CHANGED = "wallet.alert_changed"


def _alert_words(below: int | None, runway_hours: int | None) -> str:
    parts = []
    if below is not None:
        parts.append(f"below {format_amount(below)} credits")
    if runway_hours is not None:
        parts.append(f"under {runway_hours} hours of credits")
    return " or ".join(parts) if parts else "no alert"


async def _alert_out(db: AsyncSession, account: CreditAccount) -> WalletAlertOut:
    alert = await repository.alert_of(db, account.id)
    reading = alerts.Reading(account.balance, await repository.burn_per_hour(db, account.id))
    return WalletAlertOut(
        wallet_id=account.id,
        below=None if alert is None or alert.below is None else format_amount(alert.below),
        runway_hours=None if alert is None else alert.runway_hours,
        set_at=None if alert is None else alert.set_at,
        below_told_at=None if alert is None else alert.below_told_at,
        runway_told_at=None if alert is None else alert.runway_told_at,
        runway_now_hours=alerts.runway_hours(reading),
    )


async def get_alert(ctx: Context, wallet_id: uuid.UUID) -> WalletAlertOut:
    return await _alert_out(ctx.db, await _readable(ctx, wallet_id))


async def set_alert(
    ctx: Context, wallet_id: uuid.UUID, below_text: str | None, runway_hours: int | None
) -> WalletAlertOut:
    """Set, replace or (both None) remove a wallet's alert. A new threshold is armed at once:
    a wallet already below it is told on the next check."""
    account = await repository.wallet(ctx.db, wallet_id)
    if account is None or account.owner_id is None:
        raise NotFound("No such wallet.", code="wallet_not_found")
    if account.kind == "user":
        # A person's own, or their groups' admins': never a group they are only a guest of.
        scope = Scope(user=await identity.member_scope_of(ctx.db, account.owner_id))
    else:
        _, scope = await _read_scope(ctx, account)
    require(ctx, Action.WALLET_ALERT_SET, scope, target_type="wallet", target_id=account.id)
    below = None if below_text is None else amount_of(below_text, allow_zero=True)
    if below is not None and below > alerts.MOST_BELOW:
        raise InvalidAmount("That threshold is beyond any wallet's balance.")
    if runway_hours is not None and account.kind != "user":
        raise BadRequest(
            "A runway applies to personal wallets only: group and organization wallets are not "
            "billed for sessions.",
            code="runway_not_billed",
        )
    if below is None and runway_hours is None:
        await repository.remove_alert(ctx.db, account.id)
    else:
        await repository.put_alert(
            ctx.db, account.id, below, runway_hours, ctx.actor.user_id, ctx.now
        )
    if account.kind == "user" and account.owner_id != ctx.actor.user_id:
        await notify_user(
            ctx.db,
            account.owner_id,
            ALERT_CHANGED,
            title="An admin changed your wallet's low-credit alert",
            body=f"{ctx.actor.email} set it to: {_alert_words(below, runway_hours)}.",
            now=ctx.now,
            data={"wallet_id": str(account.id)},
        )
    org_id, group_id = await _audit_scope(ctx, account, None)
    await audit(
        ctx,
        "credits.wallet_alert",
        target_type="wallet",
        target_id=account.id,
        org_id=org_id,
        group_id=group_id,
        detail={
            "below": None if below is None else format_amount(below),
            "runway_hours": runway_hours,
        },
    )
    return await _alert_out(ctx.db, account)


async def near_budget(db: AsyncSession, user_ids: Sequence[uuid.UUID]) -> list[uuid.UUID]:
    """Which of these users are near the end of their credits: their wallet's alert has been
    told and not armed again, or it holds less than a tenth of its monthly grant."""
    return await repository.near_budget(db, user_ids)
