"""events: the outbox the live updates are read from, and users' notifications

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

UUID = postgresql.UUID(as_uuid=True)
TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("seq", sa.BigInteger()),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("user_id", UUID),
        sa.Column("group_id", UUID),
        sa.Column("org_id", UUID),
        sa.Column("private", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("data", postgresql.JSONB(), nullable=False),
        sa.Column("created_at", TS, server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "NOT private OR user_id IS NOT NULL", name=op.f("ck_events_private_has_user")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_events")),
        sa.UniqueConstraint("seq", name=op.f("uq_events_seq")),
    )
    op.create_index(
        "ix_events_unsequenced", "events", ["id"], postgresql_where=sa.text("seq IS NULL")
    )
    op.create_table(
        "event_relay",
        sa.Column("id", sa.BigInteger(), nullable=False),
        sa.Column("last_seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_event_relay")),
    )
    op.execute("INSERT INTO event_relay (id, last_seq) VALUES (1, 0)")
    op.create_table(
        "notifications",
        sa.Column("id", UUID, nullable=False),
        sa.Column("user_id", UUID, nullable=False),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("data", postgresql.JSONB(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("read_at", TS),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_notifications_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notifications")),
    )
    op.create_index(
        "ix_notifications_user_id_created_at",
        "notifications",
        ["user_id", "created_at", "id"],
    )
    op.create_index(
        "ix_notifications_unread",
        "notifications",
        ["user_id"],
        postgresql_where=sa.text("read_at IS NULL"),
    )


def downgrade() -> None:
    op.drop_table("notifications")
    op.drop_table("event_relay")
    op.drop_table("events")
