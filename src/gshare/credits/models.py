"""Ledger tables: accounts (wallets, system accounts), lots, transfers, entries, holds, refills."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Identity,
    Index,
    Integer,
    String,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from gshare.kit.db import Base

WALLET_KINDS = ("org", "group", "user")
SYSTEM_KINDS = ("mint", "consumption")


class CreditAccount(Base):
    """A wallet (org, group, user) or a system account (mint: where credits come from;
    consumption: where used credits go). System accounts keep no cached balance: their figure
    is the sum of their entries, so no transfer has to lock them."""

    __tablename__ = "credit_accounts"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    owner_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    balance: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    held: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    monthly_grant: Mapped[int | None] = mapped_column(BigInteger)
    grant_funding_account_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("credit_accounts.id", ondelete="SET NULL")
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    # Set when its organization or group is deleted; a closed wallet never holds credits again.
    closed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (
        CheckConstraint(
            "kind IN ('org', 'group', 'user', 'mint', 'consumption')", name="kind_known"
        ),
        CheckConstraint(
            "kind IN ('mint', 'consumption') OR (balance >= 0 AND held >= 0 AND held <= balance)",
            name="wallet_never_negative",
        ),
        CheckConstraint(
            "(kind IN ('mint', 'consumption')) = (owner_id IS NULL)", name="owner_matches_kind"
        ),
        CheckConstraint("monthly_grant IS NULL OR monthly_grant > 0", name="grant_positive"),
        CheckConstraint(
            "closed_at IS NULL OR (balance = 0 AND held = 0)", name="closed_wallet_empty"
        ),
        Index("uq_credit_accounts_owner", "kind", "owner_id", unique=True),
        Index(
            "uq_credit_accounts_system",
            "kind",
            unique=True,
            postgresql_where=text("owner_id IS NULL"),
        ),
    )


class CreditLot(Base):
    """The part of a wallet's balance that one funder gave (the mint for an organization).

    A wallet's lots add up to its balance. Rows stay at zero once drained, so `seq` (the order
    lots were first funded in) stays stable. Changed only under the wallet's row lock."""

    __tablename__ = "credit_lots"

    account_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("credit_accounts.id"), primary_key=True
    )
    funder_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("credit_accounts.id"), primary_key=True
    )
    amount: Mapped[int] = mapped_column(BigInteger, nullable=False)
    seq: Mapped[int] = mapped_column(BigInteger, Identity(), nullable=False)

    __table_args__ = (
        CheckConstraint("amount >= 0", name="amount_not_negative"),
        CheckConstraint("account_id <> funder_id", name="two_accounts"),
    )


class CreditTransfer(Base):
    """One movement of credits from a debit account to a credit account."""

    __tablename__ = "credit_transfers"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    debit_account_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("credit_accounts.id"), nullable=False
    )
    credit_account_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("credit_accounts.id"), nullable=False
    )
    amount: Mapped[int] = mapped_column(BigInteger, nullable=False)
    memo: Mapped[str | None] = mapped_column(Text)
    actor_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    hold_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("credit_holds.id")
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)

    __table_args__ = (
        CheckConstraint("amount > 0", name="amount_positive"),
        CheckConstraint("debit_account_id <> credit_account_id", name="two_accounts"),
        CheckConstraint(
            "kind IN ('mint', 'allocation', 'return', 'refill', 'capture')", name="kind_known"
        ),
        # A session's charges over time are its holds' captures.
        Index("ix_credit_transfers_hold", "hold_id", postgresql_where=text("hold_id IS NOT NULL")),
    )


class CreditEntry(Base):
    """One side of a transfer on one account: negative for the debit, positive for the credit."""

    __tablename__ = "credit_entries"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    transfer_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("credit_transfers.id"), nullable=False
    )
    account_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("credit_accounts.id"), nullable=False
    )
    amount: Mapped[int] = mapped_column(BigInteger, nullable=False)
    balance_after: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)

    __table_args__ = (
        CheckConstraint("amount <> 0", name="amount_nonzero"),
        Index("ix_credit_entries_account", "account_id", "id"),
        Index("ix_credit_entries_transfer", "transfer_id"),
    )


class CreditHold(Base):
    """Credits reserved for a running session: captured as it is used, released at the end."""

    __tablename__ = "credit_holds"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    account_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("credit_accounts.id"), nullable=False
    )
    session_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), nullable=False)
    rate_per_hour: Mapped[int] = mapped_column(BigInteger, nullable=False)
    window_seconds: Mapped[int] = mapped_column(Integer, nullable=False)
    # The wallet of the group the session runs for: its lot is spent first. Optional.
    for_group_wallet_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("credit_accounts.id")
    )
    reserved: Mapped[int] = mapped_column(BigInteger, nullable=False)
    captured: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    resolved_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (
        CheckConstraint("status IN ('open', 'settled', 'released')", name="status_known"),
        CheckConstraint("rate_per_hour > 0 AND window_seconds > 0", name="terms_positive"),
        CheckConstraint("reserved >= 0 AND captured >= 0", name="amounts_not_negative"),
        CheckConstraint(
            "(status = 'open') = (resolved_at IS NULL) AND (status = 'open' OR reserved = 0)",
            name="resolved_holds_reserve_nothing",
        ),
        Index(
            "uq_credit_holds_open_session",
            "session_id",
            unique=True,
            postgresql_where=text("status = 'open'"),
        ),
        Index("ix_credit_holds_account", "account_id"),
        Index("ix_credit_holds_session", "session_id"),
    )


class CreditHoldResolution(Base):
    """The one resolution of a hold; the primary key makes a second one impossible."""

    __tablename__ = "credit_hold_resolutions"

    hold_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("credit_holds.id"), primary_key=True
    )
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    captured: Mapped[int] = mapped_column(BigInteger, nullable=False)
    released: Mapped[int] = mapped_column(BigInteger, nullable=False)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)

    __table_args__ = (
        CheckConstraint("kind IN ('settled', 'released')", name="kind_known"),
        CheckConstraint("captured >= 0 AND released >= 0", name="amounts_not_negative"),
    )


class CreditRefill(Base):
    """A wallet's monthly top-up for one period; the primary key makes it happen once."""

    __tablename__ = "credit_refills"

    account_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("credit_accounts.id"), primary_key=True
    )
    period: Mapped[str] = mapped_column(String(7), primary_key=True)
    grant: Mapped[int] = mapped_column(BigInteger, nullable=False)
    amount: Mapped[int] = mapped_column(BigInteger, nullable=False)
    shortfall: Mapped[int] = mapped_column(BigInteger, nullable=False)
    transfer_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("credit_transfers.id")
    )
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)

    __table_args__ = (
        CheckConstraint("amount >= 0 AND shortfall >= 0", name="amounts_not_negative"),
        CheckConstraint("period ~ '^[0-9]{4}-[0-9]{2}$'", name="period_format"),
    )


class WalletAlert(Base):
    """When a wallet's owner (or its admins) is told that its credits run low (alerts.py): below
    a balance, or under a runway in hours; and when each was last told, until it is armed again."""

    __tablename__ = "wallet_alerts"

    account_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("credit_accounts.id", ondelete="CASCADE"), primary_key=True
    )
    below: Mapped[int | None] = mapped_column(BigInteger)
    runway_hours: Mapped[int | None] = mapped_column(Integer)
    set_by: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), nullable=False)
    set_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    below_told_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    runway_told_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (
        CheckConstraint("below IS NOT NULL OR runway_hours IS NOT NULL", name="something_to_watch"),
        CheckConstraint(
            "(below IS NULL OR below >= 0) AND (runway_hours IS NULL OR runway_hours > 0)",
            name="thresholds_in_range",
        ),
    )
