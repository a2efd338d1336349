"""sessions: the lifecycle, billing, idle reaping, the image catalog and volumes

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

UUID = postgresql.UUID(as_uuid=True)
TS = sa.DateTime(timezone=True)
SEEDED_AT = datetime(2026, 12, 1, tzinfo=UTC)
STATES = (
    "'queued', 'starting', 'running', 'pausing', 'paused', 'resuming', "
    "'stopping', 'stopped', 'failed', 'lost'"
)


def upgrade() -> None:
    op.add_column("admission_requests", sa.Column("cluster_id", UUID))
    op.add_column("admission_requests", sa.Column("session_id", UUID))
    op.add_column("clusters", sa.Column("metrics_at", TS))
    op.add_column(
        "clusters", sa.Column("metrics_error", sa.Text(), server_default="", nullable=False)
    )
    op.add_column(
        "clusters",
        sa.Column(
            "orphans",
            postgresql.JSONB(),
            server_default=sa.text("'[]'::jsonb"),
            nullable=False,
        ),
    )
    op.add_column("clusters", sa.Column("orphans_at", TS))
    op.add_column(
        "clusters",
        sa.Column("metrics_sequence", sa.BigInteger(), server_default="0", nullable=False),
    )
    op.create_table(
        "volumes",
        sa.Column("id", UUID, nullable=False),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("owner_id", UUID),
        sa.Column("group_id", UUID),
        sa.Column("name", sa.String(63), nullable=False),
        sa.Column("size_gib", sa.Integer(), nullable=False),
        sa.Column("access_mode", sa.String(16), nullable=False),
        sa.Column("cluster_id", UUID),
        sa.Column("created_by", UUID),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("deleted_at", TS),
        sa.CheckConstraint("kind IN ('home', 'shared')", name=op.f("ck_volumes_kind_known")),
        sa.CheckConstraint(
            "(kind = 'home' AND owner_id IS NOT NULL AND group_id IS NULL "
            "AND access_mode = 'ReadWriteOnce') OR (kind = 'shared' AND group_id IS NOT NULL "
            "AND access_mode IN ('ReadWriteMany', 'ReadOnlyMany'))",
            name=op.f("ck_volumes_kind_shape"),
        ),
        sa.CheckConstraint("size_gib BETWEEN 1 AND 16384", name=op.f("ck_volumes_size_in_range")),
        sa.ForeignKeyConstraint(
            ["owner_id"], ["users.id"], name=op.f("fk_volumes_owner_id_users"), ondelete="RESTRICT"
        ),
        sa.ForeignKeyConstraint(
            ["cluster_id"],
            ["clusters.id"],
            name=op.f("fk_volumes_cluster_id_clusters"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_volumes")),
    )
    op.create_index(
        "uq_volumes_home_name",
        "volumes",
        ["owner_id", "name"],
        unique=True,
        postgresql_where="kind = 'home' AND deleted_at IS NULL",
    )
    op.create_index(
        "uq_volumes_shared_name",
        "volumes",
        ["group_id", "name"],
        unique=True,
        postgresql_where="kind = 'shared' AND deleted_at IS NULL",
    )

    columns: list[sa.Column[Any]] = [
        sa.Column("name", sa.String(80), server_default="", nullable=False),
        sa.Column("group_id", UUID),
        sa.Column("image", sa.String(512), server_default="", nullable=False),
        sa.Column("tier_id", UUID),
        sa.Column("cpu_millicores", sa.Integer(), server_default="1000", nullable=False),
        sa.Column("memory_mib", sa.Integer(), server_default="2048", nullable=False),
        sa.Column("home_volume_id", UUID),
        sa.Column("state", sa.String(12), server_default="starting", nullable=False),
        sa.Column("state_reason", sa.Text(), server_default="", nullable=False),
        sa.Column("state_changed_at", TS),
        sa.Column("running_since", TS),
        sa.Column("deleted_at", TS),
        sa.Column("request_id", UUID),
        sa.Column("hold_id", UUID),
        sa.Column("price_per_hour", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("billed_from", TS),
        sa.Column("metered_until", TS),
        sa.Column("cost", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("spec_generation", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("applied_generation", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("apply_error", sa.Text(), server_default="", nullable=False),
        sa.Column("gpu_util_percent", sa.Float()),
        sa.Column("vram_used_mib", sa.Integer()),
        sa.Column("peak_vram_mib", sa.Integer()),
        sa.Column("utilization_at", TS),
        sa.Column("idle_since", TS),
        sa.Column("idle_warned_at", TS),
        sa.Column("keep_running_until", TS),
        sa.Column("kept_running_minutes", sa.Integer(), server_default="0", nullable=False),
    ]
    for column in columns:
        op.add_column("sessions", column)
    op.create_foreign_key(
        op.f("fk_sessions_home_volume_id_volumes"),
        "sessions",
        "volumes",
        ["home_volume_id"],
        ["id"],
        ondelete="SET NULL",
    )
    op.create_check_constraint(op.f("ck_sessions_state_known"), "sessions", f"state IN ({STATES})")
    op.create_check_constraint(
        op.f("ck_sessions_amounts_not_negative"), "sessions", "cost >= 0 AND price_per_hour >= 0"
    )
    op.create_check_constraint(
        op.f("ck_sessions_metered_within_allocation"),
        "sessions",
        "hold_id IS NULL OR (billed_from IS NOT NULL AND metered_until >= billed_from)",
    )
    op.create_index(
        "ix_sessions_metered",
        "sessions",
        ["metered_until"],
        postgresql_where="hold_id IS NOT NULL",
    )
    op.create_index(
        "ix_sessions_unapplied",
        "sessions",
        ["id"],
        postgresql_where="applied_generation < spec_generation",
    )
    op.create_index("uq_sessions_request", "sessions", ["request_id"], unique=True)

    op.create_table(
        "session_transitions",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("session_id", UUID, nullable=False),
        sa.Column("from_state", sa.String(12)),
        sa.Column("to_state", sa.String(12), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("actor_id", UUID),
        sa.Column("at", TS, nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.id"],
            name=op.f("fk_session_transitions_session_id_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_session_transitions")),
    )
    op.create_index("ix_session_transitions_session", "session_transitions", ["session_id", "id"])

    op.create_table(
        "session_images",
        sa.Column("id", UUID, nullable=False),
        sa.Column("session_type", sa.String(20), nullable=False),
        sa.Column("name", sa.String(80), nullable=False),
        sa.Column("reference", sa.String(512), nullable=False),
        sa.Column("description", sa.Text(), server_default="", nullable=False),
        sa.Column("enabled", sa.Boolean(), server_default=sa.text("true"), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.CheckConstraint(
            "session_type IN ('vscode', 'jupyterlab', 'terminal')",
            name=op.f("ck_session_images_session_type_known"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_session_images")),
        sa.UniqueConstraint("session_type", "name", name="uq_session_images_type_name"),
    )
    # The default catalog: the images the release builds (build/images/).
    images = sa.table(
        "session_images",
        sa.column("id", UUID),
        sa.column("session_type", sa.String),
        sa.column("name", sa.String),
        sa.column("reference", sa.String),
        sa.column("description", sa.Text),
        sa.column("enabled", sa.Boolean),
        sa.column("created_at", TS),
    )
    op.bulk_insert(
        images,
        [
            {
                "id": "6f0c1e0a-5b1e-4c53-9b65-3f4a1d9e0001",
                "session_type": "jupyterlab",
                "name": "JupyterLab (CUDA)",
                "reference": "ghcr.io/gshare/session-jupyterlab:1",
                "description": "JupyterLab with Python and the CUDA user-space libraries.",
                "enabled": True,
                "created_at": SEEDED_AT,
            },
            {
                "id": "6f0c1e0a-5b1e-4c53-9b65-3f4a1d9e0002",
                "session_type": "vscode",
                "name": "VS Code (CUDA)",
                "reference": "ghcr.io/gshare/session-vscode:1",
                "description": "VS Code in the browser (code-server) with the CUDA libraries.",
                "enabled": True,
                "created_at": SEEDED_AT,
            },
            {
                "id": "6f0c1e0a-5b1e-4c53-9b65-3f4a1d9e0003",
                "session_type": "terminal",
                "name": "Web terminal (CUDA)",
                "reference": "ghcr.io/gshare/session-terminal:1",
                "description": "A shell in the browser with the CUDA libraries.",
                "enabled": True,
                "created_at": SEEDED_AT,
            },
        ],
    )

    op.create_table(
        "session_volumes",
        sa.Column("session_id", UUID, nullable=False),
        sa.Column("volume_id", UUID, nullable=False),
        sa.Column("mount_path", sa.String(200), nullable=False),
        sa.Column("read_only", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.id"],
            name=op.f("fk_session_volumes_session_id_sessions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["volume_id"],
            ["volumes.id"],
            name=op.f("fk_session_volumes_volume_id_volumes"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("session_id", "volume_id", name=op.f("pk_session_volumes")),
    )
    op.create_index("ix_session_volumes_volume", "session_volumes", ["volume_id"])

    op.create_table(
        "worker_loops",
        sa.Column("name", sa.String(40), nullable=False),
        sa.Column("interval_seconds", sa.Float(), nullable=False),
        sa.Column("last_run_at", TS, nullable=False),
        sa.Column("last_ok_at", TS),
        sa.Column("failures", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("last_error", sa.Text(), server_default="", nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_worker_loops")),
    )


def downgrade() -> None:
    op.drop_table("worker_loops")
    op.drop_table("session_volumes")
    op.drop_table("session_images")
    op.drop_table("session_transitions")
    for index in ("uq_sessions_request", "ix_sessions_unapplied", "ix_sessions_metered"):
        op.drop_index(index, table_name="sessions")
    for constraint in (
        "metered_within_allocation",
        "amounts_not_negative",
        "state_known",
    ):
        op.drop_constraint(op.f(f"ck_sessions_{constraint}"), "sessions", type_="check")
    op.drop_constraint(op.f("fk_sessions_home_volume_id_volumes"), "sessions", type_="foreignkey")
    for column in (
        "kept_running_minutes", "keep_running_until", "idle_warned_at", "idle_since",
        "utilization_at", "peak_vram_mib", "vram_used_mib", "gpu_util_percent", "apply_error",
        "applied_generation", "spec_generation", "cost", "metered_until", "billed_from",
        "price_per_hour", "hold_id", "request_id", "deleted_at", "running_since",
        "state_changed_at", "state_reason", "state", "home_volume_id", "memory_mib",
        "cpu_millicores", "tier_id", "image", "group_id", "name",
    ):  # fmt: skip
        op.drop_column("sessions", column)
    op.drop_table("volumes")
    op.drop_column("admission_requests", "cluster_id")
    op.drop_column("admission_requests", "session_id")
    op.drop_column("clusters", "metrics_error")
    op.drop_column("clusters", "orphans")
    op.drop_column("clusters", "orphans_at")
    op.drop_column("clusters", "metrics_sequence")
    op.drop_column("clusters", "metrics_at")
