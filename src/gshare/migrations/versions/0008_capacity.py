"""capacity: pools, models and tiers, policies, allocations, the admission queue

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

UUID = postgresql.UUID(as_uuid=True)
TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "gpu_models",
        sa.Column("id", UUID, nullable=False),
        sa.Column("name", sa.String(120), nullable=False),
        sa.Column("memory_mib", sa.Integer(), nullable=False),
        sa.Column("split_count", sa.Integer(), nullable=False),
        sa.Column("exclusive_price", sa.BigInteger(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.CheckConstraint(
            "memory_mib > 0 AND split_count > 0 AND exclusive_price >= 0",
            name=op.f("ck_gpu_models_values_valid"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_gpu_models")),
        sa.UniqueConstraint("name", name=op.f("uq_gpu_models_name")),
    )
    op.create_table(
        "gpu_tiers",
        sa.Column("id", UUID, nullable=False),
        sa.Column("model_id", UUID, nullable=False),
        sa.Column("name", sa.String(40), nullable=False),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("denominator", sa.Integer()),
        sa.Column("mig_profile", sa.String(40)),
        sa.Column("vram_mib", sa.Integer(), nullable=False),
        sa.Column("compute_percent", sa.Integer(), nullable=False),
        sa.Column("price", sa.BigInteger(), nullable=False),
        sa.Column("price_is_default", sa.Boolean(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("retired_at", TS),
        sa.CheckConstraint(
            "kind IN ('fraction', 'exclusive', 'mig')", name=op.f("ck_gpu_tiers_kind_known")
        ),
        sa.CheckConstraint(
            "price >= 0 AND vram_mib > 0 AND compute_percent BETWEEN 1 AND 100",
            name=op.f("ck_gpu_tiers_values_valid"),
        ),
        sa.ForeignKeyConstraint(
            ["model_id"], ["gpu_models.id"], name=op.f("fk_gpu_tiers_model_id_gpu_models")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_gpu_tiers")),
    )
    op.create_index(
        "uq_gpu_tiers_active_name",
        "gpu_tiers",
        ["model_id", "name"],
        unique=True,
        postgresql_where=sa.text("retired_at IS NULL"),
    )

    # Every card starts in the hami-core pool, uncarved, with no MIG layout.
    op.add_column(
        "gpu_cards",
        sa.Column("pool", sa.String(10), nullable=False, server_default="hami-core"),
    )
    op.add_column("gpu_cards", sa.Column("carved_tier_id", UUID))
    op.add_column("gpu_cards", sa.Column("carved_slots", sa.Integer()))
    op.add_column(
        "gpu_cards",
        sa.Column(
            "mig_layout",
            postgresql.JSONB(),
            nullable=False,
            server_default=sa.text("'[]'::jsonb"),
        ),
    )
    op.create_foreign_key(
        op.f("fk_gpu_cards_carved_tier_id_gpu_tiers"),
        "gpu_cards",
        "gpu_tiers",
        ["carved_tier_id"],
        ["id"],
    )
    op.create_check_constraint(
        op.f("ck_gpu_cards_pool_known"), "gpu_cards", "pool IN ('hami-core', 'mig')"
    )
    op.create_check_constraint(
        op.f("ck_gpu_cards_carving_whole"),
        "gpu_cards",
        "(carved_tier_id IS NULL) = (carved_slots IS NULL) AND "
        "(carved_slots IS NULL OR carved_slots >= 1)",
    )
    op.create_check_constraint(
        op.f("ck_gpu_cards_mig_not_carved"),
        "gpu_cards",
        "pool = 'hami-core' OR carved_tier_id IS NULL",
    )
    op.create_unique_constraint(
        op.f("uq_gpu_cards_carving"), "gpu_cards", ["id", "carved_tier_id", "carved_slots"]
    )

    op.create_table(
        "resource_policies",
        sa.Column("id", UUID, nullable=False),
        sa.Column("scope_kind", sa.String(12), nullable=False),
        sa.Column("scope_id", UUID),
        sa.Column("values", postgresql.JSONB(), nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.Column("updated_by", UUID),
        sa.CheckConstraint(
            "scope_kind IN ('global', 'organization', 'group', 'user')",
            name=op.f("ck_resource_policies_scope_known"),
        ),
        sa.CheckConstraint(
            "(scope_kind = 'global') = (scope_id IS NULL)",
            name=op.f("ck_resource_policies_scope_id_given"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_resource_policies")),
    )
    op.create_index(
        "uq_resource_policies_scope",
        "resource_policies",
        ["scope_kind", "scope_id"],
        unique=True,
        postgresql_where=sa.text("scope_id IS NOT NULL"),
    )
    op.create_index(
        "uq_resource_policies_global",
        "resource_policies",
        ["scope_kind"],
        unique=True,
        postgresql_where=sa.text("scope_id IS NULL"),
    )

    op.create_table(
        "admission_requests",
        sa.Column("id", UUID, nullable=False),
        sa.Column("user_id", UUID, nullable=False),
        sa.Column("group_id", UUID, nullable=False),
        sa.Column("tier_id", UUID),
        sa.Column("model", sa.String(120)),
        sa.Column("tier_name", sa.String(40)),
        sa.Column("cpu_millicores", sa.Integer(), nullable=False),
        sa.Column("memory_mib", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(24), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("enqueued_at", TS, nullable=False),
        sa.Column("decided_at", TS),
        sa.Column("reserved_card_id", UUID),
        sa.CheckConstraint(
            "status IN ('queued', 'admitted', 'cancelled', 'insufficient_credits', "
            "'dropped', 'refused')",
            name=op.f("ck_admission_requests_status_known"),
        ),
        sa.CheckConstraint(
            "cpu_millicores >= 0 AND memory_mib >= 0",
            name=op.f("ck_admission_requests_sizes_not_negative"),
        ),
        sa.CheckConstraint(
            "(status = 'queued') = (decided_at IS NULL)",
            name=op.f("ck_admission_requests_decided_when_done"),
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_admission_requests_user_id_users")
        ),
        sa.ForeignKeyConstraint(
            ["tier_id"], ["gpu_tiers.id"], name=op.f("fk_admission_requests_tier_id_gpu_tiers")
        ),
        sa.ForeignKeyConstraint(
            ["reserved_card_id"],
            ["gpu_cards.id"],
            name=op.f("fk_admission_requests_reserved_card_id_gpu_cards"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_admission_requests")),
    )
    op.create_index(
        "ix_admission_requests_queued",
        "admission_requests",
        ["enqueued_at"],
        postgresql_where=sa.text("status = 'queued'"),
    )
    op.create_index("ix_admission_requests_user", "admission_requests", ["user_id", "enqueued_at"])

    op.create_table(
        "gpu_allocations",
        sa.Column("id", UUID, nullable=False),
        sa.Column("request_id", UUID, nullable=False),
        sa.Column("user_id", UUID, nullable=False),
        sa.Column("group_id", UUID, nullable=False),
        sa.Column("cluster_id", UUID),
        sa.Column("card_id", UUID),
        sa.Column("tier_id", UUID),
        sa.Column("model", sa.String(120)),
        sa.Column("tier_name", sa.String(40)),
        sa.Column("slot", sa.Integer()),
        sa.Column("mig_profile", sa.String(40)),
        sa.Column("vram_mib", sa.Integer(), nullable=False),
        sa.Column("compute_percent", sa.Integer(), nullable=False),
        sa.Column("cpu_millicores", sa.Integer(), nullable=False),
        sa.Column("memory_mib", sa.Integer(), nullable=False),
        sa.Column("price_per_hour", sa.BigInteger(), nullable=False),
        sa.Column("hold_id", UUID),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("live_card_id", UUID),
        sa.Column("live_tier_id", UUID),
        sa.Column("live_slots", sa.Integer()),
        sa.Column("admitted_at", TS, nullable=False),
        sa.Column("released_at", TS),
        sa.Column("release_reason", sa.String(20)),
        sa.CheckConstraint(
            "status IN ('live', 'lost', 'released')", name=op.f("ck_gpu_allocations_status_known")
        ),
        sa.CheckConstraint(
            "(status = 'released') = (released_at IS NOT NULL)",
            name=op.f("ck_gpu_allocations_released_when"),
        ),
        sa.CheckConstraint(
            "live_card_id IS NULL OR (live_card_id = card_id AND status <> 'released')",
            name=op.f("ck_gpu_allocations_live_card_is_card"),
        ),
        sa.CheckConstraint(
            "card_id IS NULL OR status = 'released' OR live_card_id IS NOT NULL",
            name=op.f("ck_gpu_allocations_held_card_is_live"),
        ),
        sa.CheckConstraint(
            "slot IS NULL OR (slot >= 0 AND (live_slots IS NULL OR slot < live_slots))",
            name=op.f("ck_gpu_allocations_slot_in_carving"),
        ),
        sa.CheckConstraint(
            "price_per_hour >= 0", name=op.f("ck_gpu_allocations_price_not_negative")
        ),
        sa.ForeignKeyConstraint(
            ["request_id"],
            ["admission_requests.id"],
            name=op.f("fk_gpu_allocations_request_id_admission_requests"),
        ),
        sa.ForeignKeyConstraint(
            ["card_id"],
            ["gpu_cards.id"],
            name=op.f("fk_gpu_allocations_card_id_gpu_cards"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["tier_id"], ["gpu_tiers.id"], name=op.f("fk_gpu_allocations_tier_id_gpu_tiers")
        ),
        # A live allocation names its card's carving; the carving cannot change under it.
        sa.ForeignKeyConstraint(
            ["live_card_id", "live_tier_id", "live_slots"],
            ["gpu_cards.id", "gpu_cards.carved_tier_id", "gpu_cards.carved_slots"],
            name="fk_gpu_allocations_carving",
            onupdate="RESTRICT",
            ondelete="RESTRICT",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_gpu_allocations")),
    )
    op.create_index(
        "uq_gpu_allocations_slot",
        "gpu_allocations",
        ["live_card_id", "slot"],
        unique=True,
        postgresql_where=sa.text("live_card_id IS NOT NULL"),
    )
    op.create_index(
        "uq_gpu_allocations_request_held",
        "gpu_allocations",
        ["request_id"],
        unique=True,
        postgresql_where=sa.text("status <> 'released'"),
    )
    op.create_index(
        "ix_gpu_allocations_held",
        "gpu_allocations",
        ["user_id"],
        postgresql_where=sa.text("status <> 'released'"),
    )
    op.create_index(
        "ix_gpu_allocations_tier_released", "gpu_allocations", ["tier_id", "released_at"]
    )

    op.create_table(
        "fair_share_usage",
        sa.Column("subject_kind", sa.String(6), nullable=False),
        sa.Column("subject_id", UUID, nullable=False),
        sa.Column("usage", sa.Float(), nullable=False),
        sa.Column("sampled_at", TS, nullable=False),
        sa.CheckConstraint(
            "subject_kind IN ('user', 'group')", name=op.f("ck_fair_share_usage_subject_known")
        ),
        sa.CheckConstraint("usage >= 0", name=op.f("ck_fair_share_usage_usage_not_negative")),
        sa.PrimaryKeyConstraint("subject_kind", "subject_id", name=op.f("pk_fair_share_usage")),
    )


def downgrade() -> None:
    op.drop_table("fair_share_usage")
    op.drop_table("gpu_allocations")
    op.drop_table("admission_requests")
    op.drop_table("resource_policies")
    op.drop_constraint(op.f("uq_gpu_cards_carving"), "gpu_cards", type_="unique")
    op.drop_constraint(op.f("ck_gpu_cards_mig_not_carved"), "gpu_cards", type_="check")
    op.drop_constraint(op.f("ck_gpu_cards_carving_whole"), "gpu_cards", type_="check")
    op.drop_constraint(op.f("ck_gpu_cards_pool_known"), "gpu_cards", type_="check")
    op.drop_constraint(
        op.f("fk_gpu_cards_carved_tier_id_gpu_tiers"), "gpu_cards", type_="foreignkey"
    )
    for column in ("mig_layout", "carved_slots", "carved_tier_id", "pool"):
        op.drop_column("gpu_cards", column)
    op.drop_table("gpu_tiers")
    op.drop_table("gpu_models")
