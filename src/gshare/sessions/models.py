"""The sessions table: what the API decided about each session, and what its cluster's operator
last reported back."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import BigInteger, CheckConstraint, DateTime, ForeignKey, Index, String, Text
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from gshare.kit.db import Base


class InteractiveSession(Base):
    """One interactive session (VS Code, JupyterLab or a terminal) of one user.

    A session is live until `ended_at` is set. While it is placed on a cluster, `cluster_id`
    names it, and only that cluster's operator may report its status; placing a session takes a
    share lock on the cluster's row, so a cluster cannot be removed under a session landing on it.
    Placing a session anew (a new resource, whose generations start again at 1) must reset
    `observed_generation` and `status_sequence` to 0. Its page is served at
    `https://<id>.<the cluster's sessions domain>/`.
    """

    __tablename__ = "sessions"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    owner_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("users.id", ondelete="RESTRICT"), nullable=False
    )
    session_type: Mapped[str] = mapped_column(String(20), nullable=False)
    cluster_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("clusters.id", ondelete="SET NULL")
    )
    desired_state: Mapped[str] = mapped_column(String(10), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    # As the operator last reported it (see status.py for which reports count).
    phase: Mapped[str] = mapped_column(String(20), nullable=False, default="Pending")
    phase_message: Mapped[str] = mapped_column(Text, nullable=False, default="")
    observed_generation: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    status_sequence: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    status_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (
        CheckConstraint(
            "session_type IN ('vscode', 'jupyterlab', 'terminal')", name="session_type_known"
        ),
        CheckConstraint("desired_state IN ('Running', 'Paused')", name="desired_state_known"),
        CheckConstraint("phase IN ('Pending', 'Running', 'Paused', 'Failed')", name="phase_known"),
        Index("ix_sessions_owner", "owner_id"),
        Index(
            "ix_sessions_live_on_cluster",
            "cluster_id",
            postgresql_where="ended_at IS NULL",
        ),
    )


class UsedTicket(Base):
    """An entry ticket already exchanged for an access cookie: each ticket works once. Rows are
    forgotten once the ticket would have expired anyway."""

    __tablename__ = "session_tickets_used"

    jti: Mapped[str] = mapped_column(String(64), primary_key=True)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
