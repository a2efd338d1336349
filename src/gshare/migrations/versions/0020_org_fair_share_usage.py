"""capacity: an organization's decayed usage is kept in its own row, as a user's and a group's
are, so that it outlives the groups it was used in

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-07
"""

from __future__ import annotations

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

_CHECK = "ck_fair_share_usage_subject_known"


def upgrade() -> None:
    op.drop_constraint(op.f(_CHECK), "fair_share_usage", type_="check")
    op.create_check_constraint(
        op.f(_CHECK), "fair_share_usage", "subject_kind IN ('user', 'group', 'org')"
    )
    # Each organization starts from the sum of its groups' usage, as it was read until now.
    op.execute(
        "INSERT INTO fair_share_usage (subject_kind, subject_id, usage, sampled_at) "
        "SELECT 'org', g.org_id, sum(u.usage), max(u.sampled_at) FROM fair_share_usage u "
        "JOIN groups g ON g.id = u.subject_id WHERE u.subject_kind = 'group' GROUP BY g.org_id"
    )


def downgrade() -> None:
    op.execute("DELETE FROM fair_share_usage WHERE subject_kind = 'org'")
    op.drop_constraint(op.f(_CHECK), "fair_share_usage", type_="check")
    op.create_check_constraint(
        op.f(_CHECK), "fair_share_usage", "subject_kind IN ('user', 'group')"
    )
