"""capacity: bookings of GPU capacity for a group over a window, once or weekly

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import UUID

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_ts = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "capacity_bookings",
        sa.Column("id", UUID(as_uuid=True), nullable=False),
        sa.Column("group_id", UUID(as_uuid=True), nullable=False),
        sa.Column("org_id", UUID(as_uuid=True), nullable=False),
        sa.Column("tier_id", UUID(as_uuid=True), nullable=False),
        sa.Column("model", sa.String(120), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("starts_at", _ts, nullable=False),
        sa.Column("ends_at", _ts, nullable=False),
        sa.Column("weekly_until", _ts),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("notice_minutes", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("created_by", UUID(as_uuid=True)),
        sa.Column("created_at", _ts, nullable=False),
        sa.Column("updated_at", _ts, nullable=False),
        sa.Column("cancelled_at", _ts),
        sa.Column("cancelled_by", UUID(as_uuid=True)),
        sa.CheckConstraint(
            "count BETWEEN 1 AND 10000", name=op.f("ck_capacity_bookings_count_in_range")
        ),
        sa.CheckConstraint("ends_at > starts_at", name=op.f("ck_capacity_bookings_window_order")),
        sa.CheckConstraint(
            "weekly_until IS NULL OR (weekly_until > starts_at "
            "AND ends_at - starts_at <= interval '7 days')",
            name=op.f("ck_capacity_bookings_weekly_after_start"),
        ),
        sa.CheckConstraint(
            "notice_minutes BETWEEN 0 AND 1440",
            name=op.f("ck_capacity_bookings_notice_in_range"),
        ),
        sa.CheckConstraint(
            "status IN ('active', 'cancelled')", name=op.f("ck_capacity_bookings_status_known")
        ),
        sa.CheckConstraint(
            "(status = 'cancelled') = (cancelled_at IS NOT NULL)",
            name=op.f("ck_capacity_bookings_cancelled_when"),
        ),
        sa.ForeignKeyConstraint(
            ["group_id"],
            ["groups.id"],
            name=op.f("fk_capacity_bookings_group_id_groups"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tier_id"],
            ["gpu_tiers.id"],
            name=op.f("fk_capacity_bookings_tier_id_gpu_tiers"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_capacity_bookings")),
    )
    op.create_index(
        "ix_capacity_bookings_model_active",
        "capacity_bookings",
        ["model"],
        postgresql_where=sa.text("status = 'active'"),
    )
    op.create_index("ix_capacity_bookings_group", "capacity_bookings", ["group_id"])


def downgrade() -> None:
    op.drop_table("capacity_bookings")
