"""The credits API: wallets, history, minting, transfers, monthly grants and the ledger check."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response

from gshare.credits import service, views
from gshare.credits.schemas import (
    ConsumptionOut,
    EntryKind,
    EntryPage,
    InvariantReportOut,
    MintRequest,
    MonthlyGrantPut,
    TransferOut,
    TransferRequest,
    WalletAlertOut,
    WalletAlertRequest,
    WalletOut,
    WalletTreeOut,
)
from gshare.identity.dependencies import Ctx
from gshare.identity.permissions import Action
from gshare.kit.idempotency import IdempotencyKey, respond_once
from gshare.kit.pagination import page_request
from gshare.kit.schemas import UtcDatetime
from gshare.kit.web import Cursor, declare

router = APIRouter(prefix="/api/v1")


@router.get("/wallets/me", response_model=WalletOut, **declare(Action.WALLET_READ_OWN))
async def my_wallet(ctx: Ctx) -> WalletOut:
    return await service.my_wallet(ctx)


@router.get(
    "/wallets/{wallet_id}", response_model=WalletOut, **declare(Action.WALLET_READ_USER, 404)
)
async def get_wallet(wallet_id: uuid.UUID, ctx: Ctx) -> WalletOut:
    """A wallet: its owner, the admins above the owner, or the super admin may read it."""
    return await service.get_wallet(ctx, wallet_id)


@router.get(
    "/wallets/{wallet_id}/entries",
    response_model=EntryPage,
    **declare(Action.WALLET_READ_USER, 400, 404),
)
async def list_entries(
    wallet_id: uuid.UUID,
    ctx: Ctx,
    kind: EntryKind | None = None,
    since: UtcDatetime | None = None,
    until: UtcDatetime | None = None,
    limit: Annotated[int | None, Query(ge=1, le=200)] = None,
    cursor: Cursor = None,
) -> EntryPage:
    """The wallet's history, newest first, each entry with the balance after it."""
    items, nxt = await service.list_entries(
        ctx, wallet_id, page_request(limit, cursor), kind=kind, since=since, until=until
    )
    return EntryPage(items=items, next_cursor=nxt)


@router.get(
    "/wallets/{wallet_id}/consumption",
    response_model=ConsumptionOut,
    **declare(Action.WALLET_READ_USER, 404),
)
async def consumption(
    wallet_id: uuid.UUID, ctx: Ctx, days: Annotated[int, Query(ge=1, le=366)] = 30
) -> ConsumptionOut:
    """Credits consumed per day (UTC), oldest first, days without use included."""
    return await service.consumption(ctx, wallet_id, days)


@router.get(
    "/wallets/{wallet_id}/alert",
    response_model=WalletAlertOut,
    **declare(Action.WALLET_READ_USER, 404),
)
async def get_wallet_alert(wallet_id: uuid.UUID, ctx: Ctx) -> WalletAlertOut:
    """The wallet's low-credit alert (its thresholds are None when none is set), and how long
    its balance lasts at the rate billed now: for whoever may read the wallet."""
    return await service.get_alert(ctx, wallet_id)


@router.put(
    "/wallets/{wallet_id}/alert",
    response_model=WalletAlertOut,
    **declare(Action.WALLET_ALERT_SET, 400, 404),
)
async def put_wallet_alert(
    wallet_id: uuid.UUID, body: WalletAlertRequest, ctx: Ctx
) -> WalletAlertOut:
    """Tell the wallet's owner (for a group's or organization's wallet, its admins) once when
    its balance falls below `below`, or lasts fewer than `runway_hours` hours at the rate its
    sessions are billed now; told again only after it was back above. Both None removes the
    alert. Its owner, and the admins over the wallet, may set it."""
    return await service.set_alert(ctx, wallet_id, body.below, body.runway_hours)


@router.get(
    "/orgs/{org_id}/wallet", response_model=WalletOut, **declare(Action.WALLET_READ_ORG, 404)
)
async def org_wallet(org_id: uuid.UUID, ctx: Ctx) -> WalletOut:
    return await service.owner_wallet(ctx, "org", org_id)


@router.get(
    "/groups/{group_id}/wallet",
    response_model=WalletOut,
    **declare(Action.WALLET_READ_GROUP, 404),
)
async def group_wallet(group_id: uuid.UUID, ctx: Ctx) -> WalletOut:
    return await service.owner_wallet(ctx, "group", group_id)


@router.get(
    "/users/{user_id}/wallet", response_model=WalletOut, **declare(Action.WALLET_READ_USER, 404)
)
async def user_wallet(user_id: uuid.UUID, ctx: Ctx) -> WalletOut:
    return await service.owner_wallet(ctx, "user", user_id)


@router.get(
    "/orgs/{org_id}/wallet-tree",
    response_model=WalletTreeOut,
    **declare(Action.WALLET_TREE, 404),
)
async def wallet_tree(org_id: uuid.UUID, ctx: Ctx) -> WalletTreeOut:
    """The organization's wallet, its groups' and their members', as far as the caller may see."""
    return await service.wallet_tree(ctx, org_id)


@router.post(
    "/credits/mint",
    status_code=201,
    response_model=TransferOut,
    **declare(Action.CREDITS_MINT, 400, 404, 409),
)
async def mint(body: MintRequest, ctx: Ctx, idempotency_key: IdempotencyKey = None) -> Response:
    """New credits into an organization's wallet."""
    return await respond_once(
        ctx.db,
        actor_id=ctx.actor.user_id,
        key=idempotency_key,
        operation="mint",
        params=body.model_dump(mode="json"),
        now=ctx.now,
        status_code=201,
        produce=lambda: service.mint(ctx, body.org_id, body.amount, body.memo),
    )


@router.post(
    "/credits/transfers",
    status_code=201,
    response_model=TransferOut,
    **declare(Action.CREDITS_MOVE_GROUP_USER, 400, 404, 409),
)
async def transfer(
    body: TransferRequest, ctx: Ctx, idempotency_key: IdempotencyKey = None
) -> Response:
    """Move credits between a wallet and its direct parent or child.

    Organization and group: an admin of the organization. Group and member: an admin of the
    group (or of its organization). Only what the source has available can move.
    """
    return await respond_once(
        ctx.db,
        actor_id=ctx.actor.user_id,
        key=idempotency_key,
        operation="transfer",
        params=body.model_dump(mode="json"),
        now=ctx.now,
        status_code=201,
        produce=lambda: service.transfer(
            ctx, body.from_wallet_id, body.to_wallet_id, body.amount, body.memo
        ),
    )


@router.put(
    "/wallets/{wallet_id}/monthly-grant",
    response_model=WalletOut,
    **declare(Action.GRANT_SET_USER, 400, 404, 409),
)
async def set_monthly_grant(
    wallet_id: uuid.UUID, body: MonthlyGrantPut, ctx: Ctx, idempotency_key: IdempotencyKey = None
) -> Response:
    """Set a wallet's monthly grant ("0" removes it). Set by an admin of the parent scope."""
    return await respond_once(
        ctx.db,
        actor_id=ctx.actor.user_id,
        key=idempotency_key,
        operation="monthly-grant",
        params={"wallet_id": str(wallet_id), **body.model_dump(mode="json")},
        now=ctx.now,
        status_code=200,
        produce=lambda: service.set_monthly_grant(
            ctx, wallet_id, body.amount, body.funding_wallet_id
        ),
    )


@router.get("/credits/check", response_model=InvariantReportOut, **declare(Action.CREDITS_CHECK))
async def check(ctx: Ctx) -> InvariantReportOut:
    """Check every ledger invariant now and report what, if anything, is wrong."""
    return views.report_out(await service.check(ctx), ctx.now)
