"""sessions

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "clusters",
        sa.Column(
            "sessions_domain",
            sa.String(length=253),
            server_default="sessions.gshare.local",
            nullable=False,
        ),
    )
    op.create_table(
        "sessions",
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("owner_id", sa.UUID(), nullable=False),
        sa.Column("session_type", sa.String(length=20), nullable=False),
        sa.Column("cluster_id", sa.UUID(), nullable=True),
        sa.Column("desired_state", sa.String(length=10), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("phase", sa.String(length=20), nullable=False),
        sa.Column("phase_message", sa.Text(), nullable=False),
        sa.Column("observed_generation", sa.BigInteger(), nullable=False),
        sa.Column("status_sequence", sa.BigInteger(), nullable=False),
        sa.Column("status_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "session_type IN ('vscode', 'jupyterlab', 'terminal')",
            name=op.f("ck_sessions_session_type_known"),
        ),
        sa.CheckConstraint(
            "desired_state IN ('Running', 'Paused')", name=op.f("ck_sessions_desired_state_known")
        ),
        sa.CheckConstraint(
            "phase IN ('Pending', 'Running', 'Paused', 'Failed')",
            name=op.f("ck_sessions_phase_known"),
        ),
        sa.ForeignKeyConstraint(
            ["cluster_id"],
            ["clusters.id"],
            name=op.f("fk_sessions_cluster_id_clusters"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["owner_id"],
            ["users.id"],
            name=op.f("fk_sessions_owner_id_users"),
            ondelete="RESTRICT",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sessions")),
    )
    op.create_index("ix_sessions_owner", "sessions", ["owner_id"])
    op.create_index(
        "ix_sessions_live_on_cluster",
        "sessions",
        ["cluster_id"],
        postgresql_where=sa.text("ended_at IS NULL"),
    )
    op.create_table(
        "session_tickets_used",
        sa.Column("jti", sa.String(length=64), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("jti", name=op.f("pk_session_tickets_used")),
    )


def downgrade() -> None:
    op.drop_table("session_tickets_used")
    op.drop_index("ix_sessions_live_on_cluster", table_name="sessions")
    op.drop_index("ix_sessions_owner", table_name="sessions")
    op.drop_table("sessions")
    op.drop_column("clusters", "sessions_domain")
