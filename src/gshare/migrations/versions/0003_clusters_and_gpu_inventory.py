"""clusters and gpu inventory

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "clusters",
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("name", sa.String(length=63), nullable=False),
        sa.Column("api_server", sa.String(length=500), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("status_message", sa.Text(), nullable=False),
        sa.Column("last_contact_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("inventory_sequence", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "status IN ('connected', 'unreachable', 'missing_crd')",
            name=op.f("ck_clusters_status_known"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_clusters")),
        sa.UniqueConstraint("name", name=op.f("uq_clusters_name")),
    )
    op.create_table(
        "gpu_cards",
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("cluster_id", sa.UUID(), nullable=False),
        sa.Column("node", sa.String(length=253), nullable=False),
        sa.Column("uuid", sa.String(length=128), nullable=False),
        sa.Column("model", sa.String(length=120), nullable=False),
        sa.Column("memory_mib", sa.Integer(), nullable=False),
        sa.Column("cores", sa.Integer(), nullable=False),
        sa.Column("split_count", sa.Integer(), nullable=False),
        sa.Column("numa", sa.Integer(), nullable=False),
        sa.Column("healthy", sa.Boolean(), nullable=False),
        sa.Column("missing", sa.Boolean(), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "memory_mib > 0 AND split_count > 0", name=op.f("ck_gpu_cards_sizes_positive")
        ),
        sa.ForeignKeyConstraint(
            ["cluster_id"],
            ["clusters.id"],
            name=op.f("fk_gpu_cards_cluster_id_clusters"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_gpu_cards")),
    )
    op.create_index("uq_gpu_cards_cluster_uuid", "gpu_cards", ["cluster_id", "uuid"], unique=True)


def downgrade() -> None:
    op.drop_index("uq_gpu_cards_cluster_uuid", table_name="gpu_cards")
    op.drop_table("gpu_cards")
    op.drop_table("clusters")
