"""credit lots

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30

Adds `credit_lots` (the part of each wallet's balance that one funder gave) and the optional
`credit_holds.for_group_wallet_id`, and fills lots in for the balances that exist.

Backfill: each wallet's funders are the accounts that minted, allocated or refilled into it.
A funder's lot starts at what it gave less what it took back (never below zero), in the order
it first gave. What the wallet has since spent or passed on is taken from those lots oldest
first, the same order spending uses from now on, until they add up to the balance. Should the
history show more in the wallet than its funders gave (credits returned by a wallet it did not
fund), the difference goes to its oldest lot.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

BACKFILL = """
WITH flows AS (
    SELECT t.credit_account_id AS account_id, t.debit_account_id AS funder_id,
           t.amount AS given, 0::bigint AS taken_back, e.id AS entry_id
    FROM credit_transfers t
    JOIN credit_entries e ON e.transfer_id = t.id AND e.account_id = t.credit_account_id
    WHERE t.kind IN ('mint', 'allocation', 'refill')
    UNION ALL
    SELECT t.debit_account_id, t.credit_account_id, 0::bigint, t.amount, NULL
    FROM credit_transfers t
    WHERE t.kind = 'return'
),
net AS (
    SELECT f.account_id, f.funder_id,
           greatest(0, sum(f.given) - sum(f.taken_back)) AS amount,
           min(f.entry_id) AS seq
    FROM flows f
    JOIN credit_accounts a ON a.id = f.account_id
    WHERE a.kind IN ('org', 'group', 'user')
    GROUP BY f.account_id, f.funder_id
    HAVING min(f.entry_id) IS NOT NULL
),
ranked AS (
    SELECT n.account_id, n.funder_id, n.amount, n.seq, a.balance,
           coalesce(sum(n.amount) OVER (
               PARTITION BY n.account_id ORDER BY n.seq
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
           ), 0) AS before,
           sum(n.amount) OVER (PARTITION BY n.account_id) AS total,
           row_number() OVER (PARTITION BY n.account_id ORDER BY n.seq) AS rank
    FROM net n
    JOIN credit_accounts a ON a.id = n.account_id
)
INSERT INTO credit_lots (account_id, funder_id, amount, seq)
SELECT account_id, funder_id,
       CASE WHEN total >= balance
            THEN amount - least(amount, greatest(0, (total - balance) - before))
            ELSE amount + CASE WHEN rank = 1 THEN balance - total ELSE 0 END
       END,
       seq
FROM ranked
"""


def upgrade() -> None:
    op.create_table(
        "credit_lots",
        sa.Column("account_id", sa.UUID(), nullable=False),
        sa.Column("funder_id", sa.UUID(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("seq", sa.BigInteger(), sa.Identity(), nullable=False),
        sa.CheckConstraint("amount >= 0", name=op.f("ck_credit_lots_amount_not_negative")),
        sa.CheckConstraint("account_id <> funder_id", name=op.f("ck_credit_lots_two_accounts")),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["credit_accounts.id"],
            name=op.f("fk_credit_lots_account_id_credit_accounts"),
        ),
        sa.ForeignKeyConstraint(
            ["funder_id"],
            ["credit_accounts.id"],
            name=op.f("fk_credit_lots_funder_id_credit_accounts"),
        ),
        sa.PrimaryKeyConstraint("account_id", "funder_id", name=op.f("pk_credit_lots")),
    )
    op.add_column("credit_holds", sa.Column("for_group_wallet_id", sa.UUID(), nullable=True))
    # A wallet is closed, under its row lock, when its organization or group is deleted, so a
    # movement that waited for that lock cannot strand credits in it.
    op.add_column(
        "credit_accounts", sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True)
    )
    op.create_check_constraint(
        op.f("ck_credit_accounts_closed_wallet_empty"),
        "credit_accounts",
        "closed_at IS NULL OR (balance = 0 AND held = 0)",
    )
    op.create_foreign_key(
        op.f("fk_credit_holds_for_group_wallet_id_credit_accounts"),
        "credit_holds",
        "credit_accounts",
        ["for_group_wallet_id"],
        ["id"],
    )
    op.execute(BACKFILL)
    # Lots made from now on are newer than every backfilled one.
    op.execute(
        "SELECT setval(pg_get_serial_sequence('credit_lots', 'seq'), "
        "coalesce((SELECT max(seq) FROM credit_lots), 0) + 1, false)"
    )


def downgrade() -> None:
    op.drop_constraint(
        op.f("ck_credit_accounts_closed_wallet_empty"), "credit_accounts", type_="check"
    )
    op.drop_column("credit_accounts", "closed_at")
    op.drop_constraint(
        op.f("fk_credit_holds_for_group_wallet_id_credit_accounts"),
        "credit_holds",
        type_="foreignkey",
    )
    op.drop_column("credit_holds", "for_group_wallet_id")
    op.drop_table("credit_lots")
