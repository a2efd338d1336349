"""refusal log

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # One row per (client address, reason, window): the first refused internal call is
    # audited, the rest of the window only counted, so anonymous callers cannot grow the
    # append-only audit log.
    op.create_table(
        "callback_refusals",
        sa.Column("source", sa.String(length=64), nullable=False),
        sa.Column("reason", sa.String(length=40), nullable=False),
        sa.Column("window_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("route", sa.String(length=100), nullable=False),
        sa.Column("first_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("refusals", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("refusals > 0", name=op.f("ck_callback_refusals_refusals_positive")),
        sa.PrimaryKeyConstraint(
            "source", "reason", "window_start", name=op.f("pk_callback_refusals")
        ),
    )
    op.create_index("ix_callback_refusals_window", "callback_refusals", ["window_start"])


def downgrade() -> None:
    op.drop_index("ix_callback_refusals_window", table_name="callback_refusals")
    op.drop_table("callback_refusals")
