"""The usage rollup's tables: per GPU allocation and hour, and per day and who used what where.

Rows only grow (the rollup adds to them), are kept for good, and hold no text a tenant typed."""

from __future__ import annotations

import uuid
from datetime import date, datetime

from sqlalchemy import BigInteger, Date, DateTime, Float, Index, Integer, String
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from gshare.kit.db import Base

# The cluster of a day row whose allocation named none: a key column cannot be NULL.
NO_CLUSTER = uuid.UUID(int=0)


class _Figures:
    """What the rollup adds up (see rollup.py for each): the same in hours and days."""

    held_seconds: Mapped[float] = mapped_column(Float, nullable=False)
    gpu_seconds: Mapped[float] = mapped_column(Float, nullable=False)
    idle_gpu_seconds: Mapped[float] = mapped_column(Float, nullable=False)
    measured_seconds: Mapped[float] = mapped_column(Float, nullable=False)
    credits: Mapped[int] = mapped_column(BigInteger, nullable=False)
    vram_peak_mib: Mapped[int | None] = mapped_column(Integer)


class UsageHour(_Figures, Base):
    """What one GPU allocation (a session's run between a start and a pause or stop) used in
    one UTC hour (see rollup.py for each figure)."""

    __tablename__ = "usage_hours"

    allocation_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    hour: Mapped[datetime] = mapped_column(DateTime(timezone=True), primary_key=True)
    session_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), nullable=False)
    user_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), nullable=False)
    group_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), nullable=False)
    org_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), nullable=False)
    cluster_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    model: Mapped[str] = mapped_column(String(120), nullable=False)
    tier: Mapped[str] = mapped_column(String(40), nullable=False)
    vram_limit_mib: Mapped[int] = mapped_column(Integer, nullable=False)
    vram_mib_seconds: Mapped[float] = mapped_column(Float, nullable=False)

    __table_args__ = (
        Index("ix_usage_hours_session", "session_id"),
        # Each reach a caller may have (their own, their groups', their organizations'): the
        # sessions that idled most are found without reading anyone else's hours.
        Index("ix_usage_hours_user_hour", "user_id", "hour"),
        Index("ix_usage_hours_group_hour", "group_id", "hour"),
        Index("ix_usage_hours_org_hour", "org_id", "hour"),
        # No figure is in any index, so that the rollup's updates stay in place (HOT).
        Index("ix_usage_hours_hour", "hour"),
    )


class _Summed(_Figures):
    """A summed row's key past its date: who, in which group, on what, where."""

    user_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    group_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    model: Mapped[str] = mapped_column(String(120), primary_key=True)
    tier: Mapped[str] = mapped_column(String(40), primary_key=True)
    cluster_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    org_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), nullable=False)


def _reach_indexes(table: str, when: str) -> tuple[Index, ...]:
    """An index for each reach a caller may have: their own rows, their groups', their
    organizations'."""
    return tuple(
        Index(f"ix_{table}_{name}", column, when)
        for name, column in (("user", "user_id"), ("group", "group_id"), ("org", "org_id"))
    )


class UsageDay(_Summed, Base):
    """The hours of one UTC day summed per user, group, model, tier and cluster: what reports
    read."""

    __tablename__ = "usage_days"

    day: Mapped[date] = mapped_column(Date, primary_key=True, sort_order=-1)

    __table_args__ = _reach_indexes("usage_days", "day")


class UsageMonth(_Summed, Base):
    """The days of one UTC month summed the same way: what reports over whole months read (a
    year is a twelfth of the day rows)."""

    __tablename__ = "usage_months"

    month: Mapped[date] = mapped_column(Date, primary_key=True, sort_order=-1)  # its first day

    __table_args__ = _reach_indexes("usage_months", "month")


class UsageDigest(Base):
    """A group's weekly digest, sent to its admins: one per group and week (Monday, UTC)."""

    __tablename__ = "usage_digests"

    group_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    week_start: Mapped[date] = mapped_column(Date, primary_key=True)
    sent_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    told: Mapped[int] = mapped_column(Integer, nullable=False)
