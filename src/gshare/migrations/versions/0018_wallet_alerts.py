"""credits: wallet alerts (a low balance, a short runway), each told once per crossing

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import UUID

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

_TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "wallet_alerts",
        sa.Column(
            "account_id",
            UUID(as_uuid=True),
            sa.ForeignKey("credit_accounts.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("below", sa.BigInteger()),
        sa.Column("runway_hours", sa.Integer()),
        sa.Column("set_by", UUID(as_uuid=True), nullable=False),
        sa.Column("set_at", _TIME, nullable=False),
        sa.Column("below_told_at", _TIME),
        sa.Column("runway_told_at", _TIME),
        sa.CheckConstraint(
            "below IS NOT NULL OR runway_hours IS NOT NULL",
            name=op.f("ck_wallet_alerts_something_to_watch"),
        ),
        sa.CheckConstraint(
            "(below IS NULL OR below >= 0) AND (runway_hours IS NULL OR runway_hours > 0)",
            name=op.f("ck_wallet_alerts_thresholds_in_range"),
        ),
    )


def downgrade() -> None:
    op.drop_table("wallet_alerts")
