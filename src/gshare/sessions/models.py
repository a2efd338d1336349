"""The sessions domain's tables: sessions and their state history, the image catalog, volumes
and which sessions mount them, and used entry tickets."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Identity,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, UUID
from sqlalchemy.orm import Mapped, mapped_column

from gshare.kit.db import Base

TS = DateTime(timezone=True)
STATE_NAMES = (
    "'queued', 'starting', 'running', 'pausing', 'paused', 'resuming', "
    "'stopping', 'stopped', 'failed', 'lost'"
)


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
    status_at: Mapped[datetime | None] = mapped_column(TS)

    # What the owner asked for.
    name: Mapped[str] = mapped_column(String(80), nullable=False, server_default="")
    group_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    image: Mapped[str] = mapped_column(String(512), nullable=False, server_default="")
    tier_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    cpu_millicores: Mapped[int] = mapped_column(Integer, nullable=False, server_default="1000")
    memory_mib: Mapped[int] = mapped_column(Integer, nullable=False, server_default="2048")
    home_volume_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("volumes.id", ondelete="SET NULL")
    )

    # Where it is in its life (lifecycle.py) and why.
    state: Mapped[str] = mapped_column(String(12), nullable=False, server_default="starting")
    state_reason: Mapped[str] = mapped_column(Text, nullable=False, server_default="")
    state_changed_at: Mapped[datetime | None] = mapped_column(TS)
    running_since: Mapped[datetime | None] = mapped_column(TS)
    deleted_at: Mapped[datetime | None] = mapped_column(TS)

    # The current admission (a new one at each resume) and its billing: billed from
    # `billed_from` at `price_per_hour`, captured through `metered_until` (metering.py).
    request_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    hold_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    price_per_hour: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    billed_from: Mapped[datetime | None] = mapped_column(TS)
    metered_until: Mapped[datetime | None] = mapped_column(TS)
    cost: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")

    # The resource in the cluster: the spec version wanted, and the one applied there.
    spec_generation: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    applied_generation: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    apply_error: Mapped[str] = mapped_column(Text, nullable=False, server_default="")

    # How the latest start is going, as the operator reports it (startup.py): the spec revision
    # that start runs under, when it was asked for, and its steps.
    startup_revision: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    startup_requested_at: Mapped[datetime | None] = mapped_column(TS)
    startup_steps: Mapped[list[dict[str, Any]]] = mapped_column(
        JSONB, nullable=False, server_default=text("'[]'::jsonb")
    )

    # GPU use as the cluster's metrics report it, and idle reaping.
    gpu_util_percent: Mapped[float | None] = mapped_column(Float)
    vram_used_mib: Mapped[int | None] = mapped_column(Integer)
    peak_vram_mib: Mapped[int | None] = mapped_column(Integer)
    utilization_at: Mapped[datetime | None] = mapped_column(TS)
    idle_since: Mapped[datetime | None] = mapped_column(TS)
    idle_warned_at: Mapped[datetime | None] = mapped_column(TS)
    keep_running_until: Mapped[datetime | None] = mapped_column(TS)
    kept_running_minutes: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")

    __table_args__ = (
        CheckConstraint(
            "session_type IN ('vscode', 'jupyterlab', 'terminal')", name="session_type_known"
        ),
        CheckConstraint("desired_state IN ('Running', 'Paused')", name="desired_state_known"),
        CheckConstraint("phase IN ('Pending', 'Running', 'Paused', 'Failed')", name="phase_known"),
        CheckConstraint(f"state IN ({STATE_NAMES})", name="state_known"),
        CheckConstraint("cost >= 0 AND price_per_hour >= 0", name="amounts_not_negative"),
        CheckConstraint(
            "jsonb_typeof(startup_steps) = 'array' AND jsonb_array_length(startup_steps) <= 20",
            name="startup_steps_bounded",
        ),
        CheckConstraint(
            "hold_id IS NULL OR (billed_from IS NOT NULL AND metered_until >= billed_from)",
            name="metered_within_allocation",
        ),
        Index("ix_sessions_owner", "owner_id"),
        Index(
            "ix_sessions_live_on_cluster",
            "cluster_id",
            postgresql_where="ended_at IS NULL",
        ),
        Index("ix_sessions_metered", "metered_until", postgresql_where="hold_id IS NOT NULL"),
        Index(
            "ix_sessions_unapplied",
            "id",
            postgresql_where="applied_generation < spec_generation",
        ),
        Index("uq_sessions_request", "request_id", unique=True),
    )


class SessionTransition(Base):
    """One change of a session's state: from what, to what, why, when and by whom (none: the
    system)."""

    __tablename__ = "session_transitions"

    id: Mapped[int] = mapped_column(BigInteger, Identity(always=True), primary_key=True)
    session_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False
    )
    from_state: Mapped[str | None] = mapped_column(String(12))
    to_state: Mapped[str] = mapped_column(String(12), nullable=False)
    reason: Mapped[str] = mapped_column(Text, nullable=False)
    actor_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    at: Mapped[datetime] = mapped_column(TS, nullable=False)

    __table_args__ = (Index("ix_session_transitions_session", "session_id", "id"),)


class CatalogImage(Base):
    """An image users may start sessions of one type from."""

    __tablename__ = "session_images"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    session_type: Mapped[str] = mapped_column(String(20), nullable=False)
    name: Mapped[str] = mapped_column(String(80), nullable=False)
    reference: Mapped[str] = mapped_column(String(512), nullable=False)
    description: Mapped[str] = mapped_column(Text, nullable=False, server_default="")
    enabled: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default=text("true"))
    created_at: Mapped[datetime] = mapped_column(TS, nullable=False)

    __table_args__ = (
        CheckConstraint(
            "session_type IN ('vscode', 'jupyterlab', 'terminal')", name="session_type_known"
        ),
        UniqueConstraint("session_type", "name", name="uq_session_images_type_name"),
    )


class Volume(Base):
    """A persistent volume: a user's home (ReadWriteOnce), or a group's shared volume that its
    members mount (ReadWriteMany or ReadOnlyMany). It lives in the cluster that first mounted it
    (`cluster_id`), as the claim `vol-<id>`; deleting it is recorded, the row stays."""

    __tablename__ = "volumes"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    kind: Mapped[str] = mapped_column(String(10), nullable=False)
    owner_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("users.id", ondelete="RESTRICT")
    )
    group_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    name: Mapped[str] = mapped_column(String(63), nullable=False)
    size_gib: Mapped[int] = mapped_column(Integer, nullable=False)
    access_mode: Mapped[str] = mapped_column(String(16), nullable=False)
    cluster_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("clusters.id", ondelete="SET NULL")
    )
    created_by: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    created_at: Mapped[datetime] = mapped_column(TS, nullable=False)
    deleted_at: Mapped[datetime | None] = mapped_column(TS)

    __table_args__ = (
        CheckConstraint("kind IN ('home', 'shared')", name="kind_known"),
        CheckConstraint(
            "(kind = 'home' AND owner_id IS NOT NULL AND group_id IS NULL "
            "AND access_mode = 'ReadWriteOnce') OR (kind = 'shared' AND group_id IS NOT NULL "
            "AND access_mode IN ('ReadWriteMany', 'ReadOnlyMany'))",
            name="kind_shape",
        ),
        CheckConstraint("size_gib BETWEEN 1 AND 16384", name="size_in_range"),
        Index(
            "uq_volumes_home_name",
            "owner_id",
            "name",
            unique=True,
            postgresql_where="kind = 'home' AND deleted_at IS NULL",
        ),
        Index(
            "uq_volumes_shared_name",
            "group_id",
            "name",
            unique=True,
            postgresql_where="kind = 'shared' AND deleted_at IS NULL",
        ),
    )


class SessionVolume(Base):
    """A volume a session mounts, and where."""

    __tablename__ = "session_volumes"

    session_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("sessions.id", ondelete="CASCADE"), primary_key=True
    )
    volume_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("volumes.id", ondelete="CASCADE"), primary_key=True
    )
    mount_path: Mapped[str] = mapped_column(String(200), nullable=False)
    read_only: Mapped[bool] = mapped_column(Boolean, nullable=False)

    __table_args__ = (Index("ix_session_volumes_volume", "volume_id"),)


class UsedTicket(Base):
    """An entry ticket already exchanged for an access cookie: each ticket works once. Rows are
    forgotten once the ticket would have expired anyway."""

    __tablename__ = "session_tickets_used"

    jti: Mapped[str] = mapped_column(String(64), primary_key=True)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class SessionSample(Base):
    """A session's GPU use at one time, as its cluster reported it; once thinned with age
    (thinning.py), one row stands for several reports (`samples`). One row per session and
    time: a report seen twice adds nothing."""

    __tablename__ = "session_samples"

    session_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("sessions.id", ondelete="CASCADE"), primary_key=True
    )
    at: Mapped[datetime] = mapped_column(TS, primary_key=True)
    gpu_util_percent: Mapped[float | None] = mapped_column(Float)
    vram_used_mib: Mapped[int | None] = mapped_column(Integer)
    samples: Mapped[int] = mapped_column(Integer, nullable=False, server_default="1")

    __table_args__ = (CheckConstraint("samples >= 1", name="samples_positive"),)
