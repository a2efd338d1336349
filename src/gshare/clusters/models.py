"""Tables of registered clusters and the count of refused internal calls. The GPU inventory
their operators report is capacity's (`capacity/models.py`)."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Index,
    String,
    Text,
    false,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, UUID
from sqlalchemy.orm import Mapped, mapped_column

from gshare.kit.db import Base


class Cluster(Base):
    """A registered cluster. Its kubeconfig is never stored here (see kubeconfigs.py)."""

    __tablename__ = "clusters"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    name: Mapped[str] = mapped_column(String(63), nullable=False, unique=True)
    api_server: Mapped[str] = mapped_column(String(500), nullable=False)
    # Session pages are served at https://<session id>.<sessions_domain>/ by this cluster's
    # ingress; the API builds the links itself and never takes a URL from the operator.
    sessions_domain: Mapped[str] = mapped_column(
        String(253), nullable=False, server_default="sessions.gshare.local"
    )
    status: Mapped[str] = mapped_column(String(20), nullable=False)
    status_message: Mapped[str] = mapped_column(Text, nullable=False, default="")
    last_contact_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    inventory_sequence: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    # The GPU metrics source its operator reads: when it last reported, and what was wrong.
    metrics_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    metrics_error: Mapped[str] = mapped_column(Text, nullable=False, server_default="")
    metrics_sequence: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    # Session resources found in the cluster that no live session of this cluster stands for.
    orphans: Mapped[list[str]] = mapped_column(
        JSONB, nullable=False, server_default=text("'[]'::jsonb")
    )
    orphans_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    # The RuntimeClass sandboxed sessions run with here (gVisor's, Kata's); None: none.
    sandbox_runtime_class: Mapped[str | None] = mapped_column(String(253))
    # The admin vouches that every node here runs pods in user namespaces, whatever the nodes
    # report.
    user_namespaces: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default=false())

    __table_args__ = (
        CheckConstraint(
            "status IN ('connected', 'unreachable', 'missing_crd')", name="status_known"
        ),
    )


class CallbackRefusal(Base):
    """Refused calls to the internal routes from one source, for one reason, in one window.

    The first refusal of a window is audited (its entry names the window); the others only
    count, so callers who need no account cannot grow the append-only audit log. Nothing here is
    text the caller chose: `source` is the client address (an IPv6 one reduced to its /64),
    `reason` one word from a fixed set and `route` the route's template."""

    __tablename__ = "callback_refusals"

    source: Mapped[str] = mapped_column(String(64), primary_key=True)
    reason: Mapped[str] = mapped_column(String(40), primary_key=True)
    window_start: Mapped[datetime] = mapped_column(DateTime(timezone=True), primary_key=True)
    route: Mapped[str] = mapped_column(String(100), nullable=False)
    first_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    last_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    refusals: Mapped[int] = mapped_column(BigInteger, nullable=False)

    __table_args__ = (
        CheckConstraint("refusals > 0", name="refusals_positive"),
        Index("ix_callback_refusals_window", "window_start"),
    )
