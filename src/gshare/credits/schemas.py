"""Shapes of the credits API. Amounts travel as decimal strings."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, StrictInt, StringConstraints

from gshare.kit.schemas import RequestModel, ResponseModel

AmountText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=40)]
Memo = Annotated[str, StringConstraints(strip_whitespace=True, max_length=500)]
OwnerKind = Literal["org", "group", "user"]
EntryKind = Literal["mint", "allocation", "return", "refill", "capture"]


class RefillOut(ResponseModel):
    period: str
    amount: str
    shortfall: str
    at: datetime


class MonthlyGrantOut(ResponseModel):
    amount: str
    funding_wallet_id: uuid.UUID | None
    last_refill: RefillOut | None


class WalletOut(ResponseModel):
    id: uuid.UUID
    owner_kind: OwnerKind
    owner_id: uuid.UUID
    owner_name: str
    balance: str
    held: str
    available: str
    monthly_grant: MonthlyGrantOut | None
    created_at: datetime


class WalletPage(ResponseModel):
    items: list[WalletOut]
    next_cursor: str | None


class EntryOut(ResponseModel):
    id: int
    transfer_id: uuid.UUID
    at: datetime
    kind: EntryKind
    amount: str
    balance_after: str
    counterparty_wallet_id: uuid.UUID | None
    counterparty_name: str | None
    memo: str | None
    actor_email: str | None
    hold_id: uuid.UUID | None
    session_id: uuid.UUID | None = Field(
        default=None, description="The session a capture or hold entry was for."
    )
    session_name: str | None = None


class EntryPage(ResponseModel):
    items: list[EntryOut]
    next_cursor: str | None


class ConsumptionDayOut(ResponseModel):
    day: str
    amount: str


class ConsumptionOut(ResponseModel):
    wallet_id: uuid.UUID
    days: list[ConsumptionDayOut]


class MintRequest(RequestModel):
    org_id: uuid.UUID
    amount: AmountText
    memo: Memo | None = None


class TransferRequest(RequestModel):
    from_wallet_id: uuid.UUID
    to_wallet_id: uuid.UUID
    amount: AmountText
    memo: Memo | None = None


class TransferOut(ResponseModel):
    transfer_id: uuid.UUID
    from_wallet: WalletOut | None  # None when credits were minted
    to_wallet: WalletOut
    amount: str
    memo: str | None
    at: datetime


class MonthlyGrantPut(RequestModel):
    amount: AmountText
    funding_wallet_id: uuid.UUID | None = None


class GroupWalletsOut(ResponseModel):
    group_id: uuid.UUID
    group_name: str
    wallet: WalletOut
    members: list[WalletOut]


class WalletTreeOut(ResponseModel):
    org: WalletOut | None
    groups: list[GroupWalletsOut]


class InvariantViolationOut(ResponseModel):
    invariant: str
    detail: str


class InvariantReportOut(ResponseModel):
    ok: bool
    checked_at: datetime
    violations: list[InvariantViolationOut]
    not_checked: list[str]
    minted: str
    in_wallets: str
    held: str
    consumed: str


class WalletAlertRequest(RequestModel):
    """Both None: no alert."""

    below: AmountText | None = Field(
        default=None, description="Tell when the balance falls below this many credits."
    )
    runway_hours: StrictInt | None = Field(
        default=None,
        ge=1,
        le=24 * 366,
        description="Tell when the balance lasts fewer hours than this at the rate the wallet's "
        "running sessions are billed now (personal wallets only).",
    )


class WalletAlertOut(ResponseModel):
    wallet_id: uuid.UUID
    below: str | None
    runway_hours: int | None
    set_at: datetime | None = Field(description="None: no alert is set.")
    below_told_at: datetime | None = Field(description="Told, and not armed again yet.")
    runway_told_at: datetime | None
    runway_now_hours: float | None = Field(
        description="Hours the balance lasts at the rate billed now; None when nothing is billed."
    )
