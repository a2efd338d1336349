"""sessions: start-up steps reported from the pod's phase and Kubernetes events

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "sessions",
        sa.Column("startup_revision", sa.BigInteger(), server_default="0", nullable=False),
    )
    op.add_column("sessions", sa.Column("startup_requested_at", sa.DateTime(timezone=True)))
    op.add_column(
        "sessions",
        sa.Column(
            "startup_steps",
            postgresql.JSONB(),
            server_default=sa.text("'[]'::jsonb"),
            nullable=False,
        ),
    )
    # The API keeps at most 20 steps (sessions/startup.py); the database holds it to that too.
    op.create_check_constraint(
        op.f("ck_sessions_startup_steps_bounded"),
        "sessions",
        "jsonb_typeof(startup_steps) = 'array' AND jsonb_array_length(startup_steps) <= 20",
    )


def downgrade() -> None:
    op.drop_constraint(op.f("ck_sessions_startup_steps_bounded"), "sessions", type_="check")
    op.drop_column("sessions", "startup_steps")
    op.drop_column("sessions", "startup_requested_at")
    op.drop_column("sessions", "startup_revision")
