"""sessions: utilization samples kept per session, thinned with age

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import UUID

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "session_samples",
        sa.Column("session_id", UUID(as_uuid=True), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("gpu_util_percent", sa.Float()),
        sa.Column("vram_used_mib", sa.Integer()),
        sa.Column("samples", sa.Integer(), nullable=False, server_default="1"),
        sa.CheckConstraint("samples >= 1", name=op.f("ck_session_samples_samples_positive")),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.id"],
            name=op.f("fk_session_samples_session_id_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("session_id", "at", name=op.f("pk_session_samples")),
    )
    # A session's charges over time: its holds, then their captures.
    op.create_index("ix_credit_holds_session", "credit_holds", ["session_id"])
    op.create_index(
        "ix_credit_transfers_hold",
        "credit_transfers",
        ["hold_id"],
        postgresql_where=sa.text("hold_id IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_credit_transfers_hold", table_name="credit_transfers")
    op.drop_index("ix_credit_holds_session", table_name="credit_holds")
    op.drop_table("session_samples")
