"""capacity: notices given ahead of a booking's window name the booking; events: for everyone

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import UUID

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_CAUSE = "ck_capacity_notices_kind_names_its_cause"


def upgrade() -> None:
    # An event every signed-in user may see (it names nothing private): a booking changed.
    op.add_column(
        "events",
        sa.Column("everyone", sa.Boolean(), server_default=sa.text("false"), nullable=False),
    )
    op.create_check_constraint(
        op.f("ck_events_everyone_not_private"), "events", "NOT (everyone AND private)"
    )
    op.add_column("capacity_notices", sa.Column("booking_id", UUID(as_uuid=True)))
    op.create_foreign_key(
        op.f("fk_capacity_notices_booking_id_capacity_bookings"),
        "capacity_notices",
        "capacity_bookings",
        ["booking_id"],
        ["id"],
    )
    # A preemption frees a card either for a queued request or, ahead of its window, for a
    # booking; never both.
    op.drop_constraint(op.f(_CAUSE), "capacity_notices", type_="check")
    op.create_check_constraint(
        op.f(_CAUSE),
        "capacity_notices",
        "(kind = 'preemption') = ((request_id IS NOT NULL) <> (booking_id IS NOT NULL)) AND "
        "(kind = 'drain') = (drain_id IS NOT NULL)",
    )
    op.create_index(
        "ix_capacity_notices_booking",
        "capacity_notices",
        ["booking_id"],
        postgresql_where=sa.text("status = 'pending'"),
    )


def downgrade() -> None:
    op.drop_index("ix_capacity_notices_booking", table_name="capacity_notices")
    op.execute("DELETE FROM capacity_notices WHERE booking_id IS NOT NULL")
    op.drop_constraint(op.f(_CAUSE), "capacity_notices", type_="check")
    op.create_check_constraint(
        op.f(_CAUSE),
        "capacity_notices",
        "(kind = 'preemption') = (request_id IS NOT NULL) AND "
        "(kind = 'drain') = (drain_id IS NOT NULL)",
    )
    op.drop_constraint(op.f("fk_capacity_notices_booking_id_capacity_bookings"), "capacity_notices")
    op.drop_column("capacity_notices", "booking_id")
    op.drop_constraint(op.f("ck_events_everyone_not_private"), "events", type_="check")
    op.drop_column("events", "everyone")
