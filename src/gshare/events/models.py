"""The outbox of events and the users' stored notifications."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Identity,
    Index,
    String,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, UUID
from sqlalchemy.orm import Mapped, mapped_column

from gshare.kit.db import Base


class Event(Base):
    """Something that changed, recorded in the transaction that changed it.

    `id` orders the rows of one transaction; `seq` is given by the relay once the row is
    committed, in the order rows became visible, so a reader that has seen `seq` n has seen
    every event numbered below it. The audience says who may see the event: the user it is
    about, and the admins of the group or organization it belongs to (super admins see all).
    """

    __tablename__ = "events"

    id: Mapped[int] = mapped_column(BigInteger, Identity(always=True), primary_key=True)
    seq: Mapped[int | None] = mapped_column(BigInteger, unique=True)
    kind: Mapped[str] = mapped_column(String(40), nullable=False)
    user_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    group_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    org_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    # Seen by its user alone: not by their admins, not by super admins.
    private: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default=text("false"))
    # Seen by every signed-in user: it names nothing private.
    everyone: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default=text("false"))
    data: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    created_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), nullable=False, server_default=text("now()")
    )

    __table_args__ = (
        CheckConstraint("NOT private OR user_id IS NOT NULL", name="private_has_user"),
        CheckConstraint("NOT (everyone AND private)", name="everyone_not_private"),
        Index("ix_events_unsequenced", "id", postgresql_where=text("seq IS NULL")),
    )


class EventRelay(Base):
    """One row: the last sequence number the relay gave. Its row lock serializes relays."""

    __tablename__ = "event_relay"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    last_seq: Mapped[int] = mapped_column(BigInteger, nullable=False)


class Notification(Base):
    """A message for one user, kept until it is read and beyond."""

    __tablename__ = "notifications"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    user_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("users.id", ondelete="CASCADE"), nullable=False
    )
    kind: Mapped[str] = mapped_column(String(40), nullable=False)
    title: Mapped[str] = mapped_column(String(200), nullable=False)
    body: Mapped[str] = mapped_column(Text, nullable=False)
    data: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    read_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (
        Index("ix_notifications_user_id_created_at", "user_id", "created_at", "id"),
        Index(
            "ix_notifications_unread",
            "user_id",
            postgresql_where=text("read_at IS NULL"),
        ),
    )
