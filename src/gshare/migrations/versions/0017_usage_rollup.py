"""usage: GPU time, credits and idle time rolled up per allocation-hour and per day; digests

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import UUID

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

_TIME = sa.DateTime(timezone=True)
_UNROLLED = (
    "model IS NOT NULL AND (released_at IS NULL OR rolled_until IS NULL "
    "OR rolled_until < released_at)"
)


def _figures() -> list[sa.Column[object]]:
    return [
        sa.Column("held_seconds", sa.Float(), nullable=False),
        sa.Column("gpu_seconds", sa.Float(), nullable=False),
        sa.Column("idle_gpu_seconds", sa.Float(), nullable=False),
        sa.Column("measured_seconds", sa.Float(), nullable=False),
        sa.Column("credits", sa.BigInteger(), nullable=False),
        sa.Column("vram_peak_mib", sa.Integer()),
    ]


def upgrade() -> None:
    # Allocations made before this revision are rolled up from their start: history counts.
    op.add_column("gpu_allocations", sa.Column("rolled_until", _TIME))
    op.add_column(
        "gpu_allocations",
        sa.Column("rolled_credits", sa.BigInteger(), nullable=False, server_default="0"),
    )
    op.add_column("gpu_allocations", sa.Column("rolled_sample_at", _TIME))
    op.create_index(
        "ix_gpu_allocations_unrolled",
        "gpu_allocations",
        ["id"],
        postgresql_where=sa.text(_UNROLLED),
    )
    op.create_table(
        "usage_hours",
        sa.Column("allocation_id", UUID(as_uuid=True), primary_key=True),
        sa.Column("hour", _TIME, primary_key=True),
        sa.Column("session_id", UUID(as_uuid=True), nullable=False),
        sa.Column("user_id", UUID(as_uuid=True), nullable=False),
        sa.Column("group_id", UUID(as_uuid=True), nullable=False),
        sa.Column("org_id", UUID(as_uuid=True), nullable=False),
        sa.Column("cluster_id", UUID(as_uuid=True)),
        sa.Column("model", sa.String(120), nullable=False),
        sa.Column("tier", sa.String(40), nullable=False),
        sa.Column("vram_limit_mib", sa.Integer(), nullable=False),
        *_figures(),
        sa.Column("vram_mib_seconds", sa.Float(), nullable=False),
    )
    op.create_index("ix_usage_hours_session", "usage_hours", ["session_id"])
    op.create_index("ix_usage_hours_user_hour", "usage_hours", ["user_id", "hour"])
    op.create_index("ix_usage_hours_group_hour", "usage_hours", ["group_id", "hour"])
    op.create_index("ix_usage_hours_org_hour", "usage_hours", ["org_id", "hour"])
    op.create_index("ix_usage_hours_hour", "usage_hours", ["hour"])
    for table, when in (("usage_days", "day"), ("usage_months", "month")):
        op.create_table(
            table,
            sa.Column(when, sa.Date(), primary_key=True),
            sa.Column("user_id", UUID(as_uuid=True), primary_key=True),
            sa.Column("group_id", UUID(as_uuid=True), primary_key=True),
            sa.Column("model", sa.String(120), primary_key=True),
            sa.Column("tier", sa.String(40), primary_key=True),
            sa.Column("cluster_id", UUID(as_uuid=True), primary_key=True),
            sa.Column("org_id", UUID(as_uuid=True), nullable=False),
            *_figures(),
        )
        for name, column in (("user", "user_id"), ("group", "group_id"), ("org", "org_id")):
            op.create_index(f"ix_{table}_{name}", table, [column, when])
    # The rollup adds to rows already there; room left on each page lets those updates stay
    # in place (no figure is indexed), so the tick's cost does not grow with the tables.
    for table in ("usage_hours", "usage_days", "usage_months"):
        op.execute(f"ALTER TABLE {table} SET (fillfactor = 90)")
    # Which group's weekly digest went out: one per group and week, however many workers.
    op.create_table(
        "usage_digests",
        sa.Column("group_id", UUID(as_uuid=True), primary_key=True),
        sa.Column("week_start", sa.Date(), primary_key=True),
        sa.Column("sent_at", _TIME, nullable=False),
        sa.Column("told", sa.Integer(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("usage_digests")
    op.drop_table("usage_months")
    op.drop_table("usage_days")
    op.drop_table("usage_hours")
    op.drop_index("ix_gpu_allocations_unrolled", table_name="gpu_allocations")
    for name in ("rolled_sample_at", "rolled_credits", "rolled_until"):
        op.drop_column("gpu_allocations", name)
