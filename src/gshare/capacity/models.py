"""Capacity's tables: the GPU inventory, models and tiers, resource policies, allocations, the
admission queue and the fair-share usage it is ordered by.

The database itself refuses an over-allocated card, whatever the Python above it does:
- a live allocation on a card names the card's carved tier and slot count, through a foreign
  key to `(gpu_cards.id, carved_tier_id, carved_slots)`, so a card holds one tier at a time and
  its carving cannot change while an allocation of it is live (`ON UPDATE RESTRICT`);
- its slot lies in `[0, carved_slots)` and is unique among the card's live allocations, so a
  card never holds more allocations than it was carved for (at most its `split_count`);
- a MIG allocation's slot is its instance's start, unique on the card in the same way.
"""

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
    ForeignKeyConstraint,
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

_Id = uuid.UUID  # GpuCard has a column named `uuid`, which hides the module in its body


class GpuCard(Base):
    """A card an operator reported. Cards that stop being reported become 'missing', not gone."""

    __tablename__ = "gpu_cards"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    cluster_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("clusters.id", ondelete="CASCADE"), nullable=False
    )
    node: Mapped[str] = mapped_column(String(253), nullable=False)
    uuid: Mapped[str] = mapped_column(String(128), nullable=False)
    model: Mapped[str] = mapped_column(String(120), nullable=False)
    memory_mib: Mapped[int] = mapped_column(Integer, nullable=False)
    cores: Mapped[int] = mapped_column(Integer, nullable=False)
    split_count: Mapped[int] = mapped_column(Integer, nullable=False)
    numa: Mapped[int] = mapped_column(Integer, nullable=False)
    healthy: Mapped[bool] = mapped_column(Boolean, nullable=False)
    missing: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    last_seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    pool: Mapped[str] = mapped_column(String(10), nullable=False, server_default="hami-core")
    # The tier a hami-core card is carved to while it holds fractional or exclusive sessions,
    # and how many slots that carving has; set and cleared with the card's row locked.
    carved_tier_id: Mapped[_Id | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("gpu_tiers.id")
    )
    carved_slots: Mapped[int | None] = mapped_column(Integer)
    # A mig-pool card's instances: [{"profile": "3g.40gb", "start": 4}, ...]
    mig_layout: Mapped[list[dict[str, Any]]] = mapped_column(
        JSONB, nullable=False, server_default=text("'[]'::jsonb")
    )

    __table_args__ = (
        Index("uq_gpu_cards_cluster_uuid", "cluster_id", "uuid", unique=True),
        CheckConstraint("memory_mib > 0 AND split_count > 0", name="sizes_positive"),
        CheckConstraint("pool IN ('hami-core', 'mig')", name="pool_known"),
        CheckConstraint(
            "(carved_tier_id IS NULL) = (carved_slots IS NULL) AND "
            "(carved_slots IS NULL OR carved_slots >= 1)",
            name="carving_whole",
        ),
        CheckConstraint("pool = 'hami-core' OR carved_tier_id IS NULL", name="mig_not_carved"),
        UniqueConstraint("id", "carved_tier_id", "carved_slots", name="uq_gpu_cards_carving"),
    )


class GpuModel(Base):
    """A GPU model the admin prices: the exclusive price and the card it describes."""

    __tablename__ = "gpu_models"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    name: Mapped[str] = mapped_column(String(120), nullable=False, unique=True)
    memory_mib: Mapped[int] = mapped_column(Integer, nullable=False)
    split_count: Mapped[int] = mapped_column(Integer, nullable=False)
    exclusive_price: Mapped[int] = mapped_column(BigInteger, nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)

    __table_args__ = (
        CheckConstraint(
            "memory_mib > 0 AND split_count > 0 AND exclusive_price >= 0", name="values_valid"
        ),
    )


class GpuTier(Base):
    """What a session of one tier of one model gets and costs. Retired tiers stay on record."""

    __tablename__ = "gpu_tiers"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    model_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("gpu_models.id"), nullable=False
    )
    name: Mapped[str] = mapped_column(String(40), nullable=False)
    kind: Mapped[str] = mapped_column(String(10), nullable=False)
    denominator: Mapped[int | None] = mapped_column(Integer)
    mig_profile: Mapped[str | None] = mapped_column(String(40))
    vram_mib: Mapped[int] = mapped_column(Integer, nullable=False)
    compute_percent: Mapped[int] = mapped_column(Integer, nullable=False)
    price: Mapped[int] = mapped_column(BigInteger, nullable=False)
    price_is_default: Mapped[bool] = mapped_column(Boolean, nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    retired_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (
        CheckConstraint("kind IN ('fraction', 'exclusive', 'mig')", name="kind_known"),
        CheckConstraint(
            "price >= 0 AND vram_mib > 0 AND compute_percent BETWEEN 1 AND 100",
            name="values_valid",
        ),
        Index(
            "uq_gpu_tiers_active_name",
            "model_id",
            "name",
            unique=True,
            postgresql_where=text("retired_at IS NULL"),
        ),
    )


class ResourcePolicy(Base):
    """The keys one scope sets (global, an organization, a group or a user)."""

    __tablename__ = "resource_policies"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    scope_kind: Mapped[str] = mapped_column(String(12), nullable=False)
    scope_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    values: Mapped[dict[str, Any]] = mapped_column(JSONB, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    updated_by: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))

    __table_args__ = (
        CheckConstraint(
            "scope_kind IN ('global', 'organization', 'group', 'user')", name="scope_known"
        ),
        CheckConstraint("(scope_kind = 'global') = (scope_id IS NULL)", name="scope_id_given"),
        Index(
            "uq_resource_policies_scope",
            "scope_kind",
            "scope_id",
            unique=True,
            postgresql_where=text("scope_id IS NOT NULL"),
        ),
        Index(
            "uq_resource_policies_global",
            "scope_kind",
            unique=True,
            postgresql_where=text("scope_id IS NULL"),
        ),
    )


class AdmissionRequest(Base):
    """One request to run a session: admitted at once, queued, or refused later at dequeue.

    Its id is the session's id, so the credit hold placed for it names the session."""

    __tablename__ = "admission_requests"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    user_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("users.id"), nullable=False
    )
    group_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), nullable=False)
    tier_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("gpu_tiers.id")
    )
    model: Mapped[str | None] = mapped_column(String(120))
    tier_name: Mapped[str | None] = mapped_column(String(40))
    cpu_millicores: Mapped[int] = mapped_column(Integer, nullable=False)
    memory_mib: Mapped[int] = mapped_column(Integer, nullable=False)
    # Only a card of this cluster will do; None: any.
    cluster_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    # The session it is for, which its hold bills; None: the request stands alone.
    session_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    status: Mapped[str] = mapped_column(String(24), nullable=False)
    reason: Mapped[str] = mapped_column(Text, nullable=False, default="")
    enqueued_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    decided_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # A request that waited past the starvation limit holds this card until it is admitted.
    reserved_card_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("gpu_cards.id", ondelete="SET NULL")
    )
    # While queued: the forecast's likely start (p50) and the time it has almost surely
    # started by (p90), recomputed as the queue changes (see forecast.py); the first likely
    # start shown, and the one last told (a slip of more than half an hour is told once).
    likely_start_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    surely_start_by: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    first_likely_start_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    told_likely_start_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    forecast_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # The simulation's own waits, in seconds, at the first forecast (before its correction).
    first_likely_seconds: Mapped[float | None] = mapped_column(Float)
    first_surely_seconds: Mapped[float | None] = mapped_column(Float)

    __table_args__ = (
        CheckConstraint(
            "likely_start_at IS NULL OR surely_start_by IS NULL "
            "OR likely_start_at <= surely_start_by",
            name="likely_before_surely",
        ),
        CheckConstraint(
            "status IN ('queued', 'admitted', 'cancelled', 'insufficient_credits', "
            "'dropped', 'refused')",
            name="status_known",
        ),
        CheckConstraint("cpu_millicores >= 0 AND memory_mib >= 0", name="sizes_not_negative"),
        CheckConstraint("(status = 'queued') = (decided_at IS NULL)", name="decided_when_done"),
        Index("ix_admission_requests_queued", "enqueued_at", postgresql_where="status = 'queued'"),
        Index("ix_admission_requests_user", "user_id", "enqueued_at"),
        Index(
            "ix_admission_requests_forecast_outcomes",
            "decided_at",
            postgresql_where=text("status = 'admitted' AND first_likely_seconds IS NOT NULL"),
        ),
    )


# GPU allocations the usage rollup has not counted to their end.
UNROLLED = (
    "model IS NOT NULL AND (released_at IS NULL OR rolled_until IS NULL "
    "OR rolled_until < released_at)"
)


class Allocation(Base):
    """What one admitted request holds: a slot or MIG instance of a card (none for CPU only),
    the CPU and memory it asked for, the price it was admitted at and its credit hold.

    `live_*` mirror the card's carving while the allocation holds its slot (live, or lost until
    the sessions domain settles it) and are cleared when it is released."""

    __tablename__ = "gpu_allocations"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    request_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("admission_requests.id"), nullable=False
    )
    user_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), nullable=False)
    group_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), nullable=False)
    cluster_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    card_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("gpu_cards.id", ondelete="SET NULL")
    )
    tier_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("gpu_tiers.id")
    )
    model: Mapped[str | None] = mapped_column(String(120))
    tier_name: Mapped[str | None] = mapped_column(String(40))
    slot: Mapped[int | None] = mapped_column(Integer)
    mig_profile: Mapped[str | None] = mapped_column(String(40))
    vram_mib: Mapped[int] = mapped_column(Integer, nullable=False)
    compute_percent: Mapped[int] = mapped_column(Integer, nullable=False)
    cpu_millicores: Mapped[int] = mapped_column(Integer, nullable=False)
    memory_mib: Mapped[int] = mapped_column(Integer, nullable=False)
    price_per_hour: Mapped[int] = mapped_column(BigInteger, nullable=False)
    hold_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    status: Mapped[str] = mapped_column(String(10), nullable=False)
    live_card_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    live_tier_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    live_slots: Mapped[int | None] = mapped_column(Integer)
    admitted_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    released_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    release_reason: Mapped[str | None] = mapped_column(String(20))
    # How far the usage rollup has counted it (usage/rollup.py's Mark); NULL: from its start.
    rolled_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    rolled_credits: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    rolled_sample_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # The trust boundary it was placed at, as its session's resource carries it:
    # {"isolation": {"level", "userNamespaces", "runtimeClassName"?, "dedicatedTo"?},
    #  "network": {"egress", "cidrs"}}; NULL: placed before isolation levels (shared, open).
    boundary: Mapped[dict[str, Any] | None] = mapped_column(JSONB)

    __table_args__ = (
        CheckConstraint("status IN ('live', 'lost', 'released')", name="status_known"),
        CheckConstraint("(status = 'released') = (released_at IS NOT NULL)", name="released_when"),
        CheckConstraint(
            "live_card_id IS NULL OR (live_card_id = card_id AND status <> 'released')",
            name="live_card_is_card",
        ),
        CheckConstraint(
            "card_id IS NULL OR status = 'released' OR live_card_id IS NOT NULL",
            name="held_card_is_live",
        ),
        CheckConstraint(
            "slot IS NULL OR (slot >= 0 AND (live_slots IS NULL OR slot < live_slots))",
            name="slot_in_carving",
        ),
        CheckConstraint("price_per_hour >= 0", name="price_not_negative"),
        ForeignKeyConstraint(
            ["live_card_id", "live_tier_id", "live_slots"],
            ["gpu_cards.id", "gpu_cards.carved_tier_id", "gpu_cards.carved_slots"],
            name="fk_gpu_allocations_carving",
            onupdate="RESTRICT",
            ondelete="RESTRICT",
        ),
        Index(
            "uq_gpu_allocations_slot",
            "live_card_id",
            "slot",
            unique=True,
            postgresql_where=text("live_card_id IS NOT NULL"),
        ),
        Index(
            "uq_gpu_allocations_request_held",
            "request_id",
            unique=True,
            postgresql_where=text("status <> 'released'"),
        ),
        Index("ix_gpu_allocations_held", "user_id", postgresql_where=text("status <> 'released'")),
        Index("ix_gpu_allocations_tier_released", "tier_id", "released_at"),
        Index(
            "ix_gpu_allocations_unrolled",
            "id",
            postgresql_where=text(UNROLLED),
        ),
    )


class FairShareUsage(Base):
    """A user's, group's or organization's recent GPU usage in cards, decayed with the
    configured half-life. An organization's is kept in a row of its own, not summed from its
    groups', so that it outlives a group that is deleted."""

    __tablename__ = "fair_share_usage"

    subject_kind: Mapped[str] = mapped_column(String(6), primary_key=True)
    subject_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    usage: Mapped[float] = mapped_column(Float, nullable=False)
    sampled_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)

    __table_args__ = (
        CheckConstraint("subject_kind IN ('user', 'group', 'org')", name="subject_known"),
        CheckConstraint("usage >= 0", name="usage_not_negative"),
    )


class Drain(Base):
    """Capacity taken out of service: a card, a node or a whole cluster takes no new session
    while the drain is active, and the sessions on it are paused at `deadline` after notice.

    `source` is `admin` (a super admin's maintenance) or `xid` (a card reported a fatal XID
    error and drained itself)."""

    __tablename__ = "capacity_drains"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    scope: Mapped[str] = mapped_column(String(10), nullable=False)
    cluster_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("clusters.id", ondelete="CASCADE"), nullable=False
    )
    node: Mapped[str | None] = mapped_column(String(253))
    card_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("gpu_cards.id", ondelete="CASCADE")
    )
    reason: Mapped[str] = mapped_column(Text, nullable=False)
    source: Mapped[str] = mapped_column(String(10), nullable=False)
    deadline: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    status: Mapped[str] = mapped_column(String(10), nullable=False)
    created_by: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    ended_by: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))

    __table_args__ = (
        CheckConstraint("scope IN ('card', 'node', 'cluster')", name="scope_known"),
        CheckConstraint(
            "(scope = 'card') = (card_id IS NOT NULL) AND (scope = 'node') = (node IS NOT NULL)",
            name="scope_names_its_target",
        ),
        CheckConstraint("source IN ('admin', 'xid')", name="source_known"),
        CheckConstraint("status IN ('active', 'ended', 'cancelled')", name="status_known"),
        CheckConstraint("(status = 'active') = (ended_at IS NULL)", name="ended_when"),
        Index("ix_capacity_drains_active", "cluster_id", postgresql_where="status = 'active'"),
    )


class Notice(Base):
    """A running session told it will be paused at `deadline`: to free its card for a queued
    request or for a booking whose window starts at the deadline (`preemption`), or because
    its capacity is draining (`drain`).

    `pending` until the deadline pauses it (`paused`), it leaves the card first (`freed`), or
    the notice is no longer needed (`withdrawn`: the request started elsewhere or left the
    queue, the drain ended, the booking was cancelled or edited)."""

    __tablename__ = "capacity_notices"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    kind: Mapped[str] = mapped_column(String(10), nullable=False)
    reason: Mapped[str] = mapped_column(String(20), nullable=False)
    allocation_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("gpu_allocations.id"), nullable=False
    )
    session_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    user_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), nullable=False)
    group_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), nullable=False)
    card_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    # The queued request the card is promised to (preemption only).
    request_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("admission_requests.id")
    )
    for_group_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    drain_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("capacity_drains.id", ondelete="CASCADE")
    )
    # The booking whose window starts at the deadline (a preemption ahead of the window).
    booking_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("capacity_bookings.id")
    )
    noticed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    deadline: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    status: Mapped[str] = mapped_column(String(10), nullable=False)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    __table_args__ = (
        CheckConstraint("kind IN ('preemption', 'drain')", name="kind_known"),
        CheckConstraint(
            "(kind = 'preemption') = ((request_id IS NOT NULL) <> (booking_id IS NOT NULL)) "
            "AND (kind = 'drain') = (drain_id IS NOT NULL)",
            name="kind_names_its_cause",
        ),
        CheckConstraint(
            "status IN ('pending', 'paused', 'freed', 'withdrawn')", name="status_known"
        ),
        CheckConstraint("(status = 'pending') = (ended_at IS NULL)", name="ended_when"),
        # One notice at a time for a session's allocation.
        Index(
            "uq_capacity_notices_pending",
            "allocation_id",
            unique=True,
            postgresql_where=text("status = 'pending'"),
        ),
        Index("ix_capacity_notices_deadline", "deadline", postgresql_where="status = 'pending'"),
        Index("ix_capacity_notices_group", "group_id", "noticed_at"),
        Index("ix_capacity_notices_for_group", "for_group_id", "noticed_at"),
        Index(
            "ix_capacity_notices_booking",
            "booking_id",
            postgresql_where=text("status = 'pending'"),
        ),
    )


class Booking(Base):
    """Capacity booked for a group: `count` sessions of a tier (slots, whole cards or MIG
    instances) over `[starts_at, ends_at)` and, with `weekly_until`, over the same window every
    7 days after it that starts before `weekly_until`.

    Members of the group are admitted onto it ahead of the queue; what they leave unused is
    lent to everyone and reclaimed with `notice_minutes` of notice. A booking is edited only
    before it starts, and cancelled rather than deleted."""

    __tablename__ = "capacity_bookings"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    group_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("groups.id", ondelete="CASCADE"), nullable=False
    )
    org_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), nullable=False)
    tier_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("gpu_tiers.id"), nullable=False
    )
    model: Mapped[str] = mapped_column(String(120), nullable=False)
    count: Mapped[int] = mapped_column(Integer, nullable=False)
    starts_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    ends_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    weekly_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    title: Mapped[str] = mapped_column(String(200), nullable=False)
    notice_minutes: Mapped[int] = mapped_column(Integer, nullable=False)
    status: Mapped[str] = mapped_column(String(10), nullable=False)
    created_by: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    cancelled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    cancelled_by: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))

    __table_args__ = (
        CheckConstraint("count BETWEEN 1 AND 10000", name="count_in_range"),
        CheckConstraint("ends_at > starts_at", name="window_order"),
        CheckConstraint(
            "weekly_until IS NULL OR (weekly_until > starts_at "
            "AND ends_at - starts_at <= interval '7 days')",
            name="weekly_after_start",
        ),
        CheckConstraint("notice_minutes BETWEEN 0 AND 1440", name="notice_in_range"),
        CheckConstraint("status IN ('active', 'cancelled')", name="status_known"),
        CheckConstraint(
            "(status = 'cancelled') = (cancelled_at IS NOT NULL)", name="cancelled_when"
        ),
        Index("ix_capacity_bookings_model_active", "model", postgresql_where="status = 'active'"),
        Index("ix_capacity_bookings_group", "group_id"),
    )


class GpuNode(Base):
    """What an operator reports of a node with cards: whether it runs pods in user namespaces,
    the runtime classes whose scheduling constraints it meets, and its dedication label and
    taint (what the admin put on it; which tenant it is dedicated to is `NodeDedication`'s)."""

    __tablename__ = "gpu_nodes"

    cluster_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("clusters.id", ondelete="CASCADE"), primary_key=True
    )
    name: Mapped[str] = mapped_column(String(253), primary_key=True)
    user_namespaces: Mapped[bool] = mapped_column(Boolean, nullable=False)
    runtime_classes: Mapped[list[str]] = mapped_column(JSONB, nullable=False)
    dedicated_label: Mapped[str | None] = mapped_column(String(63))
    dedicated_tainted: Mapped[bool] = mapped_column(Boolean, nullable=False)
    reported_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class NodeDedication(Base):
    """A node (or, with no node, every node of a cluster) dedicated to one organization or one
    group: its cards take only that tenant's sessions."""

    __tablename__ = "node_dedications"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    cluster_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("clusters.id", ondelete="CASCADE"), nullable=False
    )
    node: Mapped[str | None] = mapped_column(String(253))
    organization_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("organizations.id", ondelete="CASCADE")
    )
    group_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("groups.id", ondelete="CASCADE")
    )
    created_by: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)

    __table_args__ = (
        CheckConstraint("(organization_id IS NULL) <> (group_id IS NULL)", name="one_tenant"),
        Index("uq_node_dedications_node", "cluster_id", text("coalesce(node, '')"), unique=True),
    )

    @property
    def tenant_id(self) -> uuid.UUID:
        tenant = self.group_id or self.organization_id
        assert tenant is not None
        return tenant


class IsolationIncident(Base):
    """A session's pod its operator found outside the session's isolation level (and removed,
    to be made again at its level): one row per pod and finding, whenever it is reported."""

    __tablename__ = "isolation_incidents"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    session_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), nullable=False)
    cluster_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("clusters.id", ondelete="CASCADE"), nullable=False
    )
    organization_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    group_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    level: Mapped[str] = mapped_column(String(40), nullable=False)
    reason: Mapped[str] = mapped_column(String(500), nullable=False)
    node: Mapped[str] = mapped_column(String(253), nullable=False)
    pod: Mapped[str] = mapped_column(String(64), nullable=False)
    found_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    reported_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)

    __table_args__ = (
        UniqueConstraint("session_id", "pod", "reason", name="uq_isolation_incidents_once"),
        Index("ix_isolation_incidents_org", "organization_id", "found_at"),
    )
