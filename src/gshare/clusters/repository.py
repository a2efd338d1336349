"""Queries on the clusters domain's tables: clusters and refused internal calls."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, func, select, text, tuple_, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from gshare.clusters.models import CallbackRefusal, Cluster

# A cluster's row is locked `FOR NO KEY UPDATE` to change it: that does not conflict with the
# key-share lock a new row referencing the cluster takes (an allocation on its cards), so a
# report from the cluster never deadlocks with an admission onto it. Only its removal takes
# the full lock (`for_delete`), which keeps such rows out while it checks nothing is left.


async def cluster(
    db: AsyncSession, cluster_id: uuid.UUID, *, lock: bool = False, for_delete: bool = False
) -> Cluster | None:
    if for_delete:
        return await db.get(Cluster, cluster_id, with_for_update=True)
    return await db.get(Cluster, cluster_id, with_for_update={"key_share": True} if lock else None)


async def cluster_named(db: AsyncSession, name: str, *, lock: bool = False) -> Cluster | None:
    query = select(Cluster).where(Cluster.name == name)
    return await db.scalar(query.with_for_update(key_share=True) if lock else query)


async def all_clusters(db: AsyncSession) -> list[Cluster]:
    return list(await db.scalars(select(Cluster).order_by(Cluster.name)))


async def clusters_by_name(
    db: AsyncSession, ids: Sequence[uuid.UUID] | None = None
) -> list[Cluster]:
    query = select(Cluster).order_by(Cluster.name)
    if ids is not None:
        query = query.where(Cluster.id.in_(list(ids)))
    return list(await db.scalars(query))


_CONNECTED = text("SELECT id FROM clusters WHERE status = 'connected'")


async def connected_ids(db: AsyncSession) -> list[uuid.UUID]:
    return list(await db.scalars(_CONNECTED))


async def touch(db: AsyncSession, cluster_id: uuid.UUID, now: datetime) -> None:
    """The cluster's operator was heard from at `now`."""
    await db.execute(update(Cluster).where(Cluster.id == cluster_id).values(last_contact_at=now))


async def set_status(
    db: AsyncSession, cluster_id: uuid.UUID, status: str, message: str, now: datetime
) -> None:
    values: dict[str, object] = {"status": status, "status_message": message}
    if status == "connected":
        values["last_contact_at"] = now
    await db.execute(update(Cluster).where(Cluster.id == cluster_id).values(**values))


# ---- refused internal calls ----------------------------------------------------------------


async def count_refusal(
    db: AsyncSession, source: str, reason: str, window_start: datetime, now: datetime
) -> bool:
    """Add one to an existing (source, reason, window) row; False when there is none yet."""
    counted = await db.execute(
        update(CallbackRefusal)
        .where(
            CallbackRefusal.source == source,
            CallbackRefusal.reason == reason,
            CallbackRefusal.window_start == window_start,
        )
        .values(refusals=CallbackRefusal.refusals + 1, last_at=now)
        .returning(CallbackRefusal.refusals)
    )
    return counted.first() is not None


async def sources_in_window(db: AsyncSession, window_start: datetime) -> int:
    return int(
        await db.scalar(select(func.count()).where(CallbackRefusal.window_start == window_start))
        or 0
    )


async def open_refusal(
    db: AsyncSession, source: str, reason: str, window_start: datetime, route: str, now: datetime
) -> bool:
    """Start the (source, reason, window) row, or count on it when a concurrent call started it
    first; True when this call started it."""
    started = await db.execute(
        insert(CallbackRefusal)
        .values(
            source=source,
            reason=reason,
            window_start=window_start,
            route=route,
            first_at=now,
            last_at=now,
            refusals=1,
        )
        .on_conflict_do_update(
            index_elements=["source", "reason", "window_start"],
            set_={"refusals": CallbackRefusal.refusals + 1, "last_at": now},
        )
        .returning(CallbackRefusal.refusals)
    )
    return started.scalar_one() == 1


async def forget_refusals_before(db: AsyncSession, cutoff: datetime) -> None:
    await db.execute(delete(CallbackRefusal).where(CallbackRefusal.window_start < cutoff))


async def refusals(
    db: AsyncSession, limit: int, after: tuple[datetime, str, str] | None
) -> list[CallbackRefusal]:
    """Newest window first, then by source and reason."""
    query = select(CallbackRefusal).order_by(
        CallbackRefusal.window_start.desc(), CallbackRefusal.source, CallbackRefusal.reason
    )
    if after is not None:
        at, source, reason = after
        query = query.where(
            (CallbackRefusal.window_start < at)
            | (
                (CallbackRefusal.window_start == at)
                & (tuple_(CallbackRefusal.source, CallbackRefusal.reason) > tuple_(source, reason))
            )
        )
    return list(await db.scalars(query.limit(limit)))


async def set_metrics(
    db: AsyncSession, cluster_id: uuid.UUID, now: datetime, error: str, sequence: int
) -> bool:
    taken = await db.execute(
        update(Cluster)
        .where(Cluster.id == cluster_id, Cluster.metrics_sequence < sequence)
        .values(metrics_at=now, metrics_error=error[:1000], metrics_sequence=sequence)
        .returning(Cluster.id)
    )
    return taken.first() is not None


async def metrics_fresh(db: AsyncSession, since: datetime) -> set[uuid.UUID]:
    rows = await db.scalars(
        select(Cluster.id).where(Cluster.metrics_at >= since, Cluster.metrics_error == "")
    )
    return set(rows)


async def metrics_problems(db: AsyncSession) -> list[tuple[uuid.UUID, str, datetime | None, str]]:
    rows = await db.execute(
        select(Cluster.id, Cluster.name, Cluster.metrics_at, Cluster.metrics_error)
        .where(Cluster.metrics_error != "")
        .order_by(Cluster.name)
    )
    return [(r.id, r.name, r.metrics_at, r.metrics_error) for r in rows]


async def set_orphans(
    db: AsyncSession, cluster_id: uuid.UUID, names: list[str], now: datetime
) -> None:
    await db.execute(
        update(Cluster).where(Cluster.id == cluster_id).values(orphans=names, orphans_at=now)
    )


async def orphans(db: AsyncSession) -> list[tuple[uuid.UUID, str, list[str]]]:
    rows = await db.execute(
        select(Cluster.id, Cluster.name, Cluster.orphans)
        .where(func.jsonb_array_length(Cluster.orphans) > 0)
        .order_by(Cluster.name)
    )
    return [(r.id, r.name, list(r.orphans)) for r in rows]
