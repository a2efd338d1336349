"""Alembic migrations of the GShare schema, and the one list of every domain's tables."""

from __future__ import annotations


def load_all_models() -> None:
    """Import every domain's tables so Base.metadata is complete."""
    import gshare.audit.models
    import gshare.capacity.models
    import gshare.clusters.models
    import gshare.credits.models
    import gshare.events.models
    import gshare.identity.models
    import gshare.kit.idempotency
    import gshare.sessions.models
    import gshare.usage.models
    import gshare.worker.models  # noqa: F401
