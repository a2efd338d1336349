"""credits ledger

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

LEDGER_FACTS = ("credit_transfers", "credit_entries", "credit_hold_resolutions")


def upgrade() -> None:
    op.create_table(
        "credit_accounts",
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("owner_id", sa.UUID(), nullable=True),
        sa.Column("balance", sa.BigInteger(), nullable=False),
        sa.Column("held", sa.BigInteger(), nullable=False),
        sa.Column("monthly_grant", sa.BigInteger(), nullable=True),
        sa.Column("grant_funding_account_id", sa.UUID(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "(kind IN ('mint', 'consumption')) = (owner_id IS NULL)",
            name=op.f("ck_credit_accounts_owner_matches_kind"),
        ),
        sa.CheckConstraint(
            "kind IN ('mint', 'consumption') OR (balance >= 0 AND held >= 0 AND held <= balance)",
            name=op.f("ck_credit_accounts_wallet_never_negative"),
        ),
        sa.CheckConstraint(
            "kind IN ('org', 'group', 'user', 'mint', 'consumption')",
            name=op.f("ck_credit_accounts_kind_known"),
        ),
        sa.CheckConstraint(
            "monthly_grant IS NULL OR monthly_grant > 0",
            name=op.f("ck_credit_accounts_grant_positive"),
        ),
        sa.ForeignKeyConstraint(
            ["grant_funding_account_id"],
            ["credit_accounts.id"],
            name=op.f("fk_credit_accounts_grant_funding_account_id_credit_accounts"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_credit_accounts")),
    )
    op.create_index(
        "uq_credit_accounts_owner", "credit_accounts", ["kind", "owner_id"], unique=True
    )
    op.create_index(
        "uq_credit_accounts_system",
        "credit_accounts",
        ["kind"],
        unique=True,
        postgresql_where=sa.text("owner_id IS NULL"),
    )
    op.create_table(
        "idempotency_records",
        sa.Column("actor_id", sa.UUID(), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("fingerprint", sa.LargeBinary(length=32), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("actor_id", "key", name=op.f("pk_idempotency_records")),
    )
    op.create_table(
        "credit_holds",
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("account_id", sa.UUID(), nullable=False),
        sa.Column("session_id", sa.UUID(), nullable=False),
        sa.Column("rate_per_hour", sa.BigInteger(), nullable=False),
        sa.Column("window_seconds", sa.Integer(), nullable=False),
        sa.Column("reserved", sa.BigInteger(), nullable=False),
        sa.Column("captured", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "(status = 'open') = (resolved_at IS NULL) AND (status = 'open' OR reserved = 0)",
            name=op.f("ck_credit_holds_resolved_holds_reserve_nothing"),
        ),
        sa.CheckConstraint(
            "status IN ('open', 'settled', 'released')", name=op.f("ck_credit_holds_status_known")
        ),
        sa.CheckConstraint(
            "rate_per_hour > 0 AND window_seconds > 0", name=op.f("ck_credit_holds_terms_positive")
        ),
        sa.CheckConstraint(
            "reserved >= 0 AND captured >= 0", name=op.f("ck_credit_holds_amounts_not_negative")
        ),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["credit_accounts.id"],
            name=op.f("fk_credit_holds_account_id_credit_accounts"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_credit_holds")),
    )
    op.create_index("ix_credit_holds_account", "credit_holds", ["account_id"], unique=False)
    op.create_index(
        "uq_credit_holds_open_session",
        "credit_holds",
        ["session_id"],
        unique=True,
        postgresql_where=sa.text("status = 'open'"),
    )
    op.create_table(
        "credit_hold_resolutions",
        sa.Column("hold_id", sa.UUID(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("captured", sa.BigInteger(), nullable=False),
        sa.Column("released", sa.BigInteger(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "kind IN ('settled', 'released')", name=op.f("ck_credit_hold_resolutions_kind_known")
        ),
        sa.CheckConstraint(
            "captured >= 0 AND released >= 0",
            name=op.f("ck_credit_hold_resolutions_amounts_not_negative"),
        ),
        sa.ForeignKeyConstraint(
            ["hold_id"],
            ["credit_holds.id"],
            name=op.f("fk_credit_hold_resolutions_hold_id_credit_holds"),
        ),
        sa.PrimaryKeyConstraint("hold_id", name=op.f("pk_credit_hold_resolutions")),
    )
    op.create_table(
        "credit_transfers",
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("debit_account_id", sa.UUID(), nullable=False),
        sa.Column("credit_account_id", sa.UUID(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("memo", sa.Text(), nullable=True),
        sa.Column("actor_id", sa.UUID(), nullable=True),
        sa.Column("hold_id", sa.UUID(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "kind IN ('mint', 'allocation', 'return', 'refill', 'capture')",
            name=op.f("ck_credit_transfers_kind_known"),
        ),
        sa.CheckConstraint("amount > 0", name=op.f("ck_credit_transfers_amount_positive")),
        sa.CheckConstraint(
            "debit_account_id <> credit_account_id", name=op.f("ck_credit_transfers_two_accounts")
        ),
        sa.ForeignKeyConstraint(
            ["credit_account_id"],
            ["credit_accounts.id"],
            name=op.f("fk_credit_transfers_credit_account_id_credit_accounts"),
        ),
        sa.ForeignKeyConstraint(
            ["debit_account_id"],
            ["credit_accounts.id"],
            name=op.f("fk_credit_transfers_debit_account_id_credit_accounts"),
        ),
        sa.ForeignKeyConstraint(
            ["hold_id"], ["credit_holds.id"], name=op.f("fk_credit_transfers_hold_id_credit_holds")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_credit_transfers")),
    )
    op.create_table(
        "credit_entries",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("transfer_id", sa.UUID(), nullable=False),
        sa.Column("account_id", sa.UUID(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("balance_after", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("amount <> 0", name=op.f("ck_credit_entries_amount_nonzero")),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["credit_accounts.id"],
            name=op.f("fk_credit_entries_account_id_credit_accounts"),
        ),
        sa.ForeignKeyConstraint(
            ["transfer_id"],
            ["credit_transfers.id"],
            name=op.f("fk_credit_entries_transfer_id_credit_transfers"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_credit_entries")),
    )
    op.create_index(
        "ix_credit_entries_account", "credit_entries", ["account_id", "id"], unique=False
    )
    op.create_index("ix_credit_entries_transfer", "credit_entries", ["transfer_id"], unique=False)
    op.create_table(
        "credit_refills",
        sa.Column("account_id", sa.UUID(), nullable=False),
        sa.Column("period", sa.String(length=7), nullable=False),
        sa.Column("grant", sa.BigInteger(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("shortfall", sa.BigInteger(), nullable=False),
        sa.Column("transfer_id", sa.UUID(), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "period ~ '^[0-9]{4}-[0-9]{2}$'", name=op.f("ck_credit_refills_period_format")
        ),
        sa.CheckConstraint(
            "amount >= 0 AND shortfall >= 0", name=op.f("ck_credit_refills_amounts_not_negative")
        ),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["credit_accounts.id"],
            name=op.f("fk_credit_refills_account_id_credit_accounts"),
        ),
        sa.ForeignKeyConstraint(
            ["transfer_id"],
            ["credit_transfers.id"],
            name=op.f("fk_credit_refills_transfer_id_credit_transfers"),
        ),
        sa.PrimaryKeyConstraint("account_id", "period", name=op.f("pk_credit_refills")),
    )
    # Movements of credits are facts: once written, never edited or removed.
    op.execute(
        "CREATE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ "
        "BEGIN RAISE EXCEPTION 'ledger rows cannot be changed or deleted'; END $$"
    )
    for table in LEDGER_FACTS:
        op.execute(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION ledger_append_only()"
        )


def downgrade() -> None:
    for table in LEDGER_FACTS:
        op.execute(f"DROP TRIGGER {table}_append_only ON {table}")
    op.execute("DROP FUNCTION ledger_append_only()")
    op.drop_table("credit_refills")
    op.drop_index("ix_credit_entries_transfer", table_name="credit_entries")
    op.drop_index("ix_credit_entries_account", table_name="credit_entries")
    op.drop_table("credit_entries")
    op.drop_table("credit_transfers")
    op.drop_table("credit_hold_resolutions")
    op.drop_index(
        "uq_credit_holds_open_session",
        table_name="credit_holds",
        postgresql_where=sa.text("status = 'open'"),
    )
    op.drop_index("ix_credit_holds_account", table_name="credit_holds")
    op.drop_table("credit_holds")
    op.drop_table("idempotency_records")
    op.drop_index(
        "uq_credit_accounts_system",
        table_name="credit_accounts",
        postgresql_where=sa.text("owner_id IS NULL"),
    )
    op.drop_index("uq_credit_accounts_owner", table_name="credit_accounts")
    op.drop_table("credit_accounts")
