"""capacity: each queued request's start forecast, its first one and the one last told

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    for name, kind in (
        ("likely_start_at", _TIME),
        ("surely_start_by", _TIME),
        ("first_likely_start_at", _TIME),
        ("told_likely_start_at", _TIME),
        ("forecast_at", _TIME),
        # The simulation's own waits at the first forecast, before its correction: what the
        # correction learns from once the request has started.
        ("first_likely_seconds", sa.Float()),
        ("first_surely_seconds", sa.Float()),
    ):
        op.add_column("admission_requests", sa.Column(name, kind))
    op.create_check_constraint(
        op.f("ck_admission_requests_likely_before_surely"),
        "admission_requests",
        "likely_start_at IS NULL OR surely_start_by IS NULL OR likely_start_at <= surely_start_by",
    )
    # The recent outcomes the forecast's correction learns from.
    op.create_index(
        "ix_admission_requests_forecast_outcomes",
        "admission_requests",
        ["decided_at"],
        postgresql_where=sa.text("status = 'admitted' AND first_likely_seconds IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_admission_requests_forecast_outcomes", table_name="admission_requests")
    op.drop_constraint(
        op.f("ck_admission_requests_likely_before_surely"), "admission_requests", type_="check"
    )
    for name in (
        "first_surely_seconds",
        "first_likely_seconds",
        "forecast_at",
        "told_likely_start_at",
        "first_likely_start_at",
        "surely_start_by",
        "likely_start_at",
    ):
        op.drop_column("admission_requests", name)
