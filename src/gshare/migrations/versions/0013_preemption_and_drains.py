"""capacity: drains and the notices that pause sessions for preemption or a drain

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import UUID

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_ts = sa.DateTime(timezone=True)


def upgrade() -> None:
    # Requests written before this revision did not record the session they are for: the
    # session that names a request as its current one is it.
    op.execute(
        "UPDATE admission_requests r SET session_id = s.id FROM sessions s "
        "WHERE s.request_id = r.id AND r.session_id IS NULL"
    )
    op.create_table(
        "capacity_drains",
        sa.Column("id", UUID(as_uuid=True), nullable=False),
        sa.Column("scope", sa.String(10), nullable=False),
        sa.Column("cluster_id", UUID(as_uuid=True), nullable=False),
        sa.Column("node", sa.String(253)),
        sa.Column("card_id", UUID(as_uuid=True)),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("source", sa.String(10), nullable=False),
        sa.Column("deadline", _ts, nullable=False),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("created_by", UUID(as_uuid=True)),
        sa.Column("created_at", _ts, nullable=False),
        sa.Column("ended_at", _ts),
        sa.Column("ended_by", UUID(as_uuid=True)),
        sa.CheckConstraint(
            "scope IN ('card', 'node', 'cluster')", name=op.f("ck_capacity_drains_scope_known")
        ),
        sa.CheckConstraint(
            "(scope = 'card') = (card_id IS NOT NULL) AND (scope = 'node') = (node IS NOT NULL)",
            name=op.f("ck_capacity_drains_scope_names_its_target"),
        ),
        sa.CheckConstraint(
            "source IN ('admin', 'xid')", name=op.f("ck_capacity_drains_source_known")
        ),
        sa.CheckConstraint(
            "status IN ('active', 'ended', 'cancelled')",
            name=op.f("ck_capacity_drains_status_known"),
        ),
        sa.CheckConstraint(
            "(status = 'active') = (ended_at IS NULL)", name=op.f("ck_capacity_drains_ended_when")
        ),
        sa.ForeignKeyConstraint(
            ["cluster_id"],
            ["clusters.id"],
            name=op.f("fk_capacity_drains_cluster_id_clusters"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["card_id"],
            ["gpu_cards.id"],
            name=op.f("fk_capacity_drains_card_id_gpu_cards"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_capacity_drains")),
    )
    op.create_index(
        "ix_capacity_drains_active",
        "capacity_drains",
        ["cluster_id"],
        postgresql_where=sa.text("status = 'active'"),
    )
    op.create_table(
        "capacity_notices",
        sa.Column("id", UUID(as_uuid=True), nullable=False),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("reason", sa.String(20), nullable=False),
        sa.Column("allocation_id", UUID(as_uuid=True), nullable=False),
        sa.Column("session_id", UUID(as_uuid=True)),
        sa.Column("user_id", UUID(as_uuid=True), nullable=False),
        sa.Column("group_id", UUID(as_uuid=True), nullable=False),
        sa.Column("card_id", UUID(as_uuid=True)),
        sa.Column("request_id", UUID(as_uuid=True)),
        sa.Column("for_group_id", UUID(as_uuid=True)),
        sa.Column("drain_id", UUID(as_uuid=True)),
        sa.Column("noticed_at", _ts, nullable=False),
        sa.Column("deadline", _ts, nullable=False),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("ended_at", _ts),
        sa.CheckConstraint(
            "kind IN ('preemption', 'drain')", name=op.f("ck_capacity_notices_kind_known")
        ),
        sa.CheckConstraint(
            "(kind = 'preemption') = (request_id IS NOT NULL) AND "
            "(kind = 'drain') = (drain_id IS NOT NULL)",
            name=op.f("ck_capacity_notices_kind_names_its_cause"),
        ),
        sa.CheckConstraint(
            "status IN ('pending', 'paused', 'freed', 'withdrawn')",
            name=op.f("ck_capacity_notices_status_known"),
        ),
        sa.CheckConstraint(
            "(status = 'pending') = (ended_at IS NULL)",
            name=op.f("ck_capacity_notices_ended_when"),
        ),
        sa.ForeignKeyConstraint(
            ["allocation_id"],
            ["gpu_allocations.id"],
            name=op.f("fk_capacity_notices_allocation_id_gpu_allocations"),
        ),
        sa.ForeignKeyConstraint(
            ["request_id"],
            ["admission_requests.id"],
            name=op.f("fk_capacity_notices_request_id_admission_requests"),
        ),
        sa.ForeignKeyConstraint(
            ["drain_id"],
            ["capacity_drains.id"],
            name=op.f("fk_capacity_notices_drain_id_capacity_drains"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_capacity_notices")),
    )
    op.create_index(
        "uq_capacity_notices_pending",
        "capacity_notices",
        ["allocation_id"],
        unique=True,
        postgresql_where=sa.text("status = 'pending'"),
    )
    op.create_index(
        "ix_capacity_notices_deadline",
        "capacity_notices",
        ["deadline"],
        postgresql_where=sa.text("status = 'pending'"),
    )
    op.create_index("ix_capacity_notices_group", "capacity_notices", ["group_id", "noticed_at"])
    op.create_index(
        "ix_capacity_notices_for_group", "capacity_notices", ["for_group_id", "noticed_at"]
    )


def downgrade() -> None:
    op.drop_table("capacity_notices")
    op.drop_table("capacity_drains")
