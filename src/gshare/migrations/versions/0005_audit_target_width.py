"""audit target width

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A failed sign-in names the email it was for, and an email can be 320 characters long.
    op.alter_column(
        "audit_entries",
        "target_id",
        type_=sa.String(length=320),
        existing_type=sa.String(length=80),
        existing_nullable=True,
    )


def downgrade() -> None:
    op.alter_column(
        "audit_entries",
        "target_id",
        type_=sa.String(length=80),
        existing_type=sa.String(length=320),
        existing_nullable=True,
        postgresql_using="left(target_id, 80)",  # a rewrite, not an UPDATE the log refuses
    )
