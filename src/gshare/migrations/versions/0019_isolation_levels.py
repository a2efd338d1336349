"""capacity: isolation levels: nodes' reported traits, nodes dedicated to a tenant, each
cluster's sandbox runtime class, the boundary each allocation was placed at, and incidents of
pods found outside their level

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-05
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB, UUID

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

_TIME = sa.DateTime(timezone=True)


def _cluster(ondelete: str = "CASCADE") -> sa.Column[uuid.UUID]:
    return sa.Column(
        "cluster_id",
        UUID(as_uuid=True),
        sa.ForeignKey("clusters.id", ondelete=ondelete),
        nullable=False,
    )


def upgrade() -> None:
    op.add_column("clusters", sa.Column("sandbox_runtime_class", sa.String(253)))
    op.add_column(
        "clusters",
        sa.Column("user_namespaces", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.create_table(
        "gpu_nodes",
        _cluster(),
        sa.Column("name", sa.String(253), nullable=False),
        sa.Column("user_namespaces", sa.Boolean(), nullable=False),
        sa.Column("runtime_classes", JSONB(), nullable=False),
        sa.Column("dedicated_label", sa.String(63)),
        sa.Column("dedicated_tainted", sa.Boolean(), nullable=False),
        sa.Column("reported_at", _TIME, nullable=False),
        sa.PrimaryKeyConstraint("cluster_id", "name", name=op.f("pk_gpu_nodes")),
    )
    op.create_table(
        "node_dedications",
        sa.Column("id", UUID(as_uuid=True), primary_key=True),
        _cluster(),
        sa.Column("node", sa.String(253)),
        sa.Column(
            "organization_id",
            UUID(as_uuid=True),
            sa.ForeignKey("organizations.id", ondelete="CASCADE"),
        ),
        sa.Column("group_id", UUID(as_uuid=True), sa.ForeignKey("groups.id", ondelete="CASCADE")),
        sa.Column("created_by", UUID(as_uuid=True), nullable=False),
        sa.Column("created_at", _TIME, nullable=False),
        sa.CheckConstraint(
            "(organization_id IS NULL) <> (group_id IS NULL)",
            name=op.f("ck_node_dedications_one_tenant"),
        ),
    )
    op.create_index(
        "uq_node_dedications_node",
        "node_dedications",
        ["cluster_id", sa.text("coalesce(node, '')")],
        unique=True,
    )
    op.add_column("gpu_allocations", sa.Column("boundary", JSONB()))
    op.create_table(
        "isolation_incidents",
        sa.Column("id", UUID(as_uuid=True), primary_key=True),
        sa.Column("session_id", UUID(as_uuid=True), nullable=False),
        _cluster(),
        sa.Column("organization_id", UUID(as_uuid=True)),
        sa.Column("group_id", UUID(as_uuid=True)),
        sa.Column("level", sa.String(40), nullable=False),
        sa.Column("reason", sa.String(500), nullable=False),
        sa.Column("node", sa.String(253), nullable=False),
        sa.Column("pod", sa.String(64), nullable=False),
        sa.Column("found_at", _TIME, nullable=False),
        sa.Column("reported_at", _TIME, nullable=False),
        sa.UniqueConstraint(
            "session_id", "pod", "reason", name=op.f("uq_isolation_incidents_once")
        ),
    )
    op.create_index(
        "ix_isolation_incidents_org", "isolation_incidents", ["organization_id", "found_at"]
    )


def downgrade() -> None:
    op.drop_table("isolation_incidents")
    op.drop_column("gpu_allocations", "boundary")
    op.drop_table("node_dedications")
    op.drop_table("gpu_nodes")
    op.drop_column("clusters", "user_namespaces")
    op.drop_column("clusters", "sandbox_runtime_class")
