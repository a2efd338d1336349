"""Queries on the sessions domain's tables: sessions and their transitions, the catalog,
volumes and their mounts, and used entry tickets."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, or_, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from gshare.sessions import lifecycle
from gshare.sessions.models import (
    CatalogImage,
    InteractiveSession,
    SessionSample,
    SessionTransition,
    SessionVolume,
    UsedTicket,
    Volume,
)

# ---- sessions ------------------------------------------------------------------------------


async def session_row(
    db: AsyncSession, session_id: uuid.UUID, *, lock: bool = False
) -> InteractiveSession | None:
    return await db.get(
        InteractiveSession, session_id, with_for_update=lock, populate_existing=lock
    )


async def by_requests(
    db: AsyncSession, request_ids: Sequence[uuid.UUID]
) -> list[InteractiveSession]:
    """The sessions whose current admission is one of these, locked, in id order."""
    if not request_ids:
        return []
    query = (
        select(InteractiveSession)
        .where(InteractiveSession.request_id.in_(list(request_ids)))
        .order_by(InteractiveSession.id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    return list(await db.scalars(query))


# Lock what can be locked now, in id order, and name the rest: a walk of the queue leaves a
# session another transaction holds to its next turn rather than wait for it.
_LOCK_WAITERS = text(
    "WITH locked AS (SELECT id FROM sessions WHERE request_id = ANY(:ids) "
    "  ORDER BY id FOR UPDATE SKIP LOCKED) "
    "SELECT request_id FROM sessions "
    "WHERE request_id = ANY(:ids) AND id NOT IN (SELECT id FROM locked)"
)


async def lock_waiters(db: AsyncSession, request_ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
    """Lock the sessions whose current admission is one of these requests, skipping those
    another transaction holds; returns the requests of the sessions it skipped."""
    if not request_ids:
        return set()
    found = await db.execute(_LOCK_WAITERS, {"ids": list(request_ids)})
    return {row.request_id for row in found}


async def sessions_by_ids(
    db: AsyncSession, session_ids: Sequence[uuid.UUID], *, lock: bool = False
) -> dict[uuid.UUID, InteractiveSession]:
    """These sessions by id (those that exist); with `lock`, their rows locked in id order."""
    if not session_ids:
        return {}
    query = (
        select(InteractiveSession)
        .where(InteractiveSession.id.in_(list(set(session_ids))))
        .order_by(InteractiveSession.id)
    )
    if lock:
        query = query.with_for_update().execution_options(populate_existing=True)
    return {row.id: row for row in await db.scalars(query)}


async def idle_among(db: AsyncSession, session_ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
    """Which of these sessions are idle now (their GPU unused since `idle_since`)."""
    if not session_ids:
        return set()
    found = await db.scalars(
        select(InteractiveSession.id).where(
            InteractiveSession.id.in_(list(set(session_ids))),
            InteractiveSession.idle_since.is_not(None),
        )
    )
    return set(found)


async def live_of_owner(
    db: AsyncSession, owner_id: uuid.UUID, group_id: uuid.UUID | None = None
) -> list[InteractiveSession]:
    """The owner's sessions that are not stopped (those run for `group_id`, if given), locked
    in id order."""
    in_group = () if group_id is None else (InteractiveSession.group_id == group_id,)
    query = (
        select(InteractiveSession)
        .where(
            InteractiveSession.owner_id == owner_id,
            *in_group,
            InteractiveSession.ended_at.is_(None),
            InteractiveSession.deleted_at.is_(None),
        )
        .order_by(InteractiveSession.id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    return list(await db.scalars(query))


async def names_of(db: AsyncSession, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, str]:
    if not ids:
        return {}
    query = select(InteractiveSession.id, InteractiveSession.name).where(
        InteractiveSession.id.in_(list(ids))
    )
    return {r.id: r.name for r in await db.execute(query)}


async def insert_session(db: AsyncSession, row: InteractiveSession) -> None:
    db.add(row)
    await db.flush()


async def record_transition(
    db: AsyncSession,
    session_id: uuid.UUID,
    from_state: str | None,
    to_state: str,
    reason: str,
    actor_id: uuid.UUID | None,
    now: datetime,
) -> None:
    db.add(
        SessionTransition(
            session_id=session_id,
            from_state=from_state,
            to_state=to_state,
            reason=reason,
            actor_id=actor_id,
            at=now,
        )
    )


async def transitions_of(db: AsyncSession, session_id: uuid.UUID) -> list[SessionTransition]:
    query = (
        select(SessionTransition)
        .where(SessionTransition.session_id == session_id)
        .order_by(SessionTransition.id)
    )
    return list(await db.scalars(query))


async def sessions_of(
    db: AsyncSession,
    *,
    owner_id: uuid.UUID | None = None,
    group_ids: Sequence[uuid.UUID] | None = None,
    states: Sequence[str] | None = None,
    include_deleted: bool = False,
    limit: int = 500,
) -> list[InteractiveSession]:
    """Sessions newest first: one owner's, or those of some groups (None: every group)."""
    query = select(InteractiveSession).order_by(InteractiveSession.created_at.desc())
    if owner_id is not None:
        query = query.where(InteractiveSession.owner_id == owner_id)
    if group_ids is not None:
        query = query.where(InteractiveSession.group_id.in_(list(group_ids)))
    if states:
        query = query.where(InteractiveSession.state.in_(list(states)))
    if not include_deleted:
        query = query.where(InteractiveSession.deleted_at.is_(None))
    return list(await db.scalars(query.limit(limit)))


async def not_stopped_in(db: AsyncSession, group_ids: Sequence[uuid.UUID]) -> int:
    if not group_ids:
        return 0
    query = select(func.count()).where(
        InteractiveSession.group_id.in_(list(group_ids)), InteractiveSession.state != "stopped"
    )
    return int(await db.scalar(query) or 0)


async def live_on_cluster(db: AsyncSession, cluster_id: uuid.UUID) -> int:
    return int(
        await db.scalar(
            select(func.count()).where(
                InteractiveSession.cluster_id == cluster_id, InteractiveSession.ended_at.is_(None)
            )
        )
        or 0
    )


async def ended_among(db: AsyncSession, ids: list[uuid.UUID]) -> set[uuid.UUID]:
    rows = await db.scalars(
        select(InteractiveSession.id).where(
            InteractiveSession.id.in_(ids), InteractiveSession.ended_at.is_not(None)
        )
    )
    return set(rows)


async def open_group(
    db: AsyncSession, session_id: uuid.UUID, owner_id: uuid.UUID
) -> tuple[uuid.UUID | None] | None:
    """(the session's group,) if the session holds its card and is meant to run (not pausing,
    stopping, stopped or deleted, which close its page at once) and belongs to `owner_id`;
    else None."""
    found = await db.execute(
        select(InteractiveSession.group_id).where(
            InteractiveSession.id == session_id,
            InteractiveSession.owner_id == owner_id,
            InteractiveSession.state.in_(lifecycle.HOLDING),
            InteractiveSession.ended_at.is_(None),
            InteractiveSession.deleted_at.is_(None),
            InteractiveSession.desired_state == "Running",
        )
    )
    row = found.first()
    return None if row is None else (row[0],)


async def unapplied(db: AsyncSession, limit: int) -> list[InteractiveSession]:
    """Sessions whose wanted resource is newer than what their cluster was given; skips those
    another worker is applying."""
    query = (
        select(InteractiveSession)
        .where(InteractiveSession.applied_generation < InteractiveSession.spec_generation)
        .order_by(InteractiveSession.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return list(await db.scalars(query))


async def live_groups_of_owners(
    db: AsyncSession, states: Sequence[str]
) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """Each (owner, group) that a live session in one of these states is run for."""
    query = (
        select(InteractiveSession.owner_id, InteractiveSession.group_id)
        .where(
            InteractiveSession.state.in_(list(states)),
            InteractiveSession.ended_at.is_(None),
            InteractiveSession.group_id.is_not(None),
        )
        .distinct()
    )
    return [(r[0], r[1]) for r in await db.execute(query) if r[1] is not None]


async def by_request(db: AsyncSession, request_id: uuid.UUID) -> InteractiveSession | None:
    """The session waiting on this admission request, locked."""
    query = (
        select(InteractiveSession)
        .where(InteractiveSession.request_id == request_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    return (await db.scalars(query)).first()


async def try_lock_apply(db: AsyncSession, session_id: uuid.UUID) -> bool:
    """Take the right to apply this session's resource until `unlock_apply` or the connection
    ends: a lock of the connection, not of a transaction, so it is held across cluster calls
    (`db` must keep one connection, in autocommit, for as long)."""
    taken = await db.scalar(
        text("SELECT pg_try_advisory_lock(hashtext('gshare.sessions.apply'), hashtext(:id))"),
        {"id": str(session_id)},
    )
    return bool(taken)


async def unlock_apply(db: AsyncSession, session_id: uuid.UUID) -> None:
    await db.execute(
        text("SELECT pg_advisory_unlock(hashtext('gshare.sessions.apply'), hashtext(:id))"),
        {"id": str(session_id)},
    )


async def wants_applied(db: AsyncSession, session_id: uuid.UUID, generation: int) -> bool:
    """Whether `generation` is still the session's wanted resource and not yet applied."""
    row = await db.get(InteractiveSession, session_id, populate_existing=True)
    return (
        row is not None
        and row.spec_generation == generation
        and row.applied_generation < generation
    )


async def mark_applied(
    db: AsyncSession, session_id: uuid.UUID, generation: int, error: str
) -> None:
    """Record that `generation` reached the cluster (error empty), or why not."""
    values: dict[str, Any] = {"apply_error": error}
    if not error:
        values["applied_generation"] = func.greatest(
            InteractiveSession.applied_generation, generation
        )
    await db.execute(
        update(InteractiveSession).where(InteractiveSession.id == session_id).values(**values)
    )


async def silent_since(
    db: AsyncSession, states: Sequence[str], cutoff: datetime, limit: int = 500
) -> list[InteractiveSession]:
    """Sessions in these states whose cluster has not reported them since `cutoff`, locked."""
    heard = func.coalesce(InteractiveSession.status_at, InteractiveSession.state_changed_at)
    query = (
        select(InteractiveSession)
        .where(InteractiveSession.state.in_(list(states)), heard < cutoff)
        .order_by(InteractiveSession.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return list(await db.scalars(query))


async def in_state_since(
    db: AsyncSession, state: str, cutoff: datetime, limit: int = 500
) -> list[InteractiveSession]:
    """Sessions that have been in `state` since before `cutoff`, locked."""
    query = (
        select(InteractiveSession)
        .where(InteractiveSession.state == state, InteractiveSession.state_changed_at < cutoff)
        .order_by(InteractiveSession.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return list(await db.scalars(query))


async def running_gpu_sessions(db: AsyncSession, limit: int = 5000) -> list[InteractiveSession]:
    """Running sessions that hold a card (for idle reaping and maximum length), locked."""
    query = (
        select(InteractiveSession)
        .where(InteractiveSession.state.in_(["running", "starting"]))
        .order_by(InteractiveSession.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return list(await db.scalars(query))


async def in_cluster(
    db: AsyncSession, cluster_id: uuid.UUID, ids: Sequence[uuid.UUID]
) -> set[uuid.UUID]:
    """Which of these sessions are placed on `cluster_id` and not stopped."""
    if not ids:
        return set()
    query = select(InteractiveSession.id).where(
        InteractiveSession.id.in_(list(ids)),
        InteractiveSession.cluster_id == cluster_id,
        InteractiveSession.state != "stopped",
    )
    return set(await db.scalars(query))


async def on_cluster(
    db: AsyncSession, cluster_id: uuid.UUID, ids: Sequence[uuid.UUID]
) -> list[InteractiveSession]:
    """These sessions where they run on `cluster_id`, locked in id order."""
    if not ids:
        return []
    query = (
        select(InteractiveSession)
        .where(InteractiveSession.id.in_(list(ids)), InteractiveSession.cluster_id == cluster_id)
        .order_by(InteractiveSession.id)
        .with_for_update()
    )
    return list(await db.scalars(query))


# ---- metering ------------------------------------------------------------------------------

_DUE = text(
    "SELECT id, owner_id, hold_id, price_per_hour, billed_from, metered_until FROM sessions "
    "WHERE hold_id IS NOT NULL AND metered_until < :cutoff "
    "ORDER BY id LIMIT :limit FOR UPDATE SKIP LOCKED"
)
_METERED = text(
    "UPDATE sessions AS s SET metered_until = v.until, cost = s.cost + v.amount "
    "FROM unnest(CAST(:ids AS uuid[]), CAST(:untils AS timestamptz[]), "
    "CAST(:amounts AS bigint[])) AS v(id, until, amount) WHERE s.id = v.id"
)


async def due_for_metering(db: AsyncSession, cutoff: datetime, limit: int) -> list[Any]:
    """Sessions holding a card, metered before `cutoff`, locked (others' skipped): one batch."""
    return list((await db.execute(_DUE, {"cutoff": cutoff, "limit": limit})).all())


async def oldest_metered(db: AsyncSession) -> datetime | None:
    """How far the least recently metered billed session is metered (None: none is billed)."""
    query = select(func.min(InteractiveSession.metered_until)).where(
        InteractiveSession.hold_id.is_not(None)
    )
    oldest: datetime | None = await db.scalar(query)
    return oldest


async def store_metered(
    db: AsyncSession, ids: list[uuid.UUID], untils: list[datetime], amounts: list[int]
) -> None:
    """How far each session is now metered, and what it cost, in one statement."""
    if ids:
        await db.execute(_METERED, {"ids": ids, "untils": untils, "amounts": amounts})


# ---- catalog -------------------------------------------------------------------------------


async def catalog(db: AsyncSession, *, enabled_only: bool) -> list[CatalogImage]:
    query = select(CatalogImage).order_by(CatalogImage.session_type, CatalogImage.name)
    if enabled_only:
        query = query.where(CatalogImage.enabled.is_(True))
    return list(await db.scalars(query))


async def image(
    db: AsyncSession, image_id: uuid.UUID, *, lock: bool = False
) -> CatalogImage | None:
    return await db.get(CatalogImage, image_id, with_for_update=lock)


async def image_named(db: AsyncSession, session_type: str, name: str) -> CatalogImage | None:
    query = select(CatalogImage).where(
        CatalogImage.session_type == session_type, CatalogImage.name == name
    )
    return (await db.scalars(query)).first()


# ---- volumes -------------------------------------------------------------------------------


async def volume(db: AsyncSession, volume_id: uuid.UUID, *, lock: bool = False) -> Volume | None:
    return await db.get(Volume, volume_id, with_for_update=lock)


async def volumes_of(
    db: AsyncSession,
    *,
    owner_id: uuid.UUID | None = None,
    group_ids: Sequence[uuid.UUID] | None = None,
) -> list[Volume]:
    """Live volumes: a user's homes, or the shared volumes of some groups."""
    query = select(Volume).where(Volume.deleted_at.is_(None)).order_by(Volume.name)
    clauses = []
    if owner_id is not None:
        clauses.append((Volume.kind == "home") & (Volume.owner_id == owner_id))
    if group_ids:
        clauses.append((Volume.kind == "shared") & Volume.group_id.in_(list(group_ids)))
    if not clauses:
        return []
    return list(await db.scalars(query.where(or_(*clauses))))


async def home_total_gib(db: AsyncSession, owner_id: uuid.UUID) -> int:
    total = await db.scalar(
        select(func.coalesce(func.sum(Volume.size_gib), 0)).where(
            Volume.kind == "home", Volume.owner_id == owner_id, Volume.deleted_at.is_(None)
        )
    )
    return int(total or 0)


async def insert_volume(db: AsyncSession, row: Volume) -> None:
    db.add(row)
    await db.flush()


async def mount(db: AsyncSession, rows: Sequence[SessionVolume]) -> None:
    db.add_all(rows)
    await db.flush()


async def mounts_of(db: AsyncSession, session_ids: Sequence[uuid.UUID]) -> list[Any]:
    """(session id, mount path, read only, volume) for these sessions' volumes."""
    if not session_ids:
        return []
    query = (
        select(SessionVolume.session_id, SessionVolume.mount_path, SessionVolume.read_only, Volume)
        .join(Volume, Volume.id == SessionVolume.volume_id)
        .where(SessionVolume.session_id.in_(list(session_ids)))
        .order_by(SessionVolume.mount_path)
    )
    return list((await db.execute(query)).all())


async def users_of_volumes(db: AsyncSession, volume_ids: Sequence[uuid.UUID]) -> list[Any]:
    """(volume id, session id, session name, state, owner) of the sessions not stopped that
    mount these volumes."""
    if not volume_ids:
        return []
    query = (
        select(
            SessionVolume.volume_id,
            InteractiveSession.id,
            InteractiveSession.name,
            InteractiveSession.state,
            InteractiveSession.owner_id,
        )
        .join(InteractiveSession, InteractiveSession.id == SessionVolume.session_id)
        .where(
            SessionVolume.volume_id.in_(list(volume_ids)),
            InteractiveSession.state != "stopped",
        )
    )
    return list((await db.execute(query)).all())


async def pin_volumes(
    db: AsyncSession, volume_ids: Sequence[uuid.UUID], cluster_id: uuid.UUID
) -> None:
    """Volumes live where they were first mounted."""
    if volume_ids:
        await db.execute(
            update(Volume)
            .where(Volume.id.in_(list(volume_ids)), Volume.cluster_id.is_(None))
            .values(cluster_id=cluster_id)
        )


# ---- entry tickets -------------------------------------------------------------------------


async def use_ticket(db: AsyncSession, jti: str, expires_at: datetime | None) -> bool:
    """Record a ticket as used; False when it had been used before."""
    used = await db.execute(
        insert(UsedTicket)
        .values(jti=jti, expires_at=expires_at)
        .on_conflict_do_nothing()
        .returning(UsedTicket.jti)
    )
    return used.first() is not None


async def forget_tickets_before(db: AsyncSession, cutoff: datetime) -> None:
    await db.execute(delete(UsedTicket).where(UsedTicket.expires_at < cutoff))


# ---- utilization samples -------------------------------------------------------------------

# More rows than thinning ever leaves (thinning.MAX_POINTS and an hour of reports): a read stays
# bounded even while the worker has not thinned for a long time.
SAMPLES_READ_LIMIT = 20_000


async def add_samples(db: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    """Store reported samples; one already stored for the session at that time wins."""
    if rows:
        await db.execute(insert(SessionSample).values(list(rows)).on_conflict_do_nothing())


async def samples_of(
    db: AsyncSession, session_id: uuid.UUID, *, limit: int | None = SAMPLES_READ_LIMIT
) -> list[SessionSample]:
    """A session's samples, oldest first (the newest `limit` of them; None: all)."""
    query = (
        select(SessionSample)
        .where(SessionSample.session_id == session_id)
        .order_by(SessionSample.at.desc())
        .limit(limit)
    )
    return list(reversed((await db.scalars(query)).all()))


async def try_lock_thinning(db: AsyncSession) -> bool:
    """One worker thins at a time; the lock goes with the transaction."""
    taken = await db.scalar(
        text("SELECT pg_try_advisory_xact_lock(hashtext('gshare.sessions.thin'))")
    )
    return bool(taken)


async def sessions_to_thin(
    db: AsyncSession, *, ended_after: datetime, after_id: uuid.UUID | None, limit: int
) -> list[Any]:
    """Sessions with samples that are live or ended after `ended_after`, in id order from
    after `after_id`: (id, created_at, ended_at)."""
    query = (
        select(InteractiveSession.id, InteractiveSession.created_at, InteractiveSession.ended_at)
        .where(
            or_(
                InteractiveSession.ended_at.is_(None),
                InteractiveSession.ended_at > ended_after,
            ),
            select(SessionSample.session_id)
            .where(SessionSample.session_id == InteractiveSession.id)
            .exists(),
        )
        .order_by(InteractiveSession.id)
        .limit(limit)
    )
    if after_id is not None:
        query = query.where(InteractiveSession.id > after_id)
    return list(await db.execute(query))


async def replace_samples(
    db: AsyncSession,
    session_id: uuid.UUID,
    removed: Sequence[datetime],
    changed: Sequence[dict[str, Any]],
) -> None:
    """Delete a session's samples at `removed` and rewrite those in `changed` (by time)."""
    if removed:
        await db.execute(
            delete(SessionSample).where(
                SessionSample.session_id == session_id, SessionSample.at.in_(list(removed))
            )
        )
    if changed:
        await db.execute(
            _REWRITE_SAMPLES,
            {
                "session_id": session_id,
                "ats": [v["at"] for v in changed],
                "utils": [v["gpu_util_percent"] for v in changed],
                "vrams": [v["vram_used_mib"] for v in changed],
                "counts": [v["samples"] for v in changed],
            },
        )


_REWRITE_SAMPLES = text(
    "UPDATE session_samples s SET gpu_util_percent = v.util, vram_used_mib = v.vram, "
    "samples = v.n FROM unnest(CAST(:ats AS timestamptz[]), CAST(:utils AS float8[]), "
    "CAST(:vrams AS integer[]), CAST(:counts AS integer[])) AS v(at, util, vram, n) "
    "WHERE s.session_id = :session_id AND s.at = v.at"
)


_SAMPLES_IN = text(
    "SELECT s.session_id, s.at, s.gpu_util_percent, s.vram_used_mib FROM session_samples AS s "
    "JOIN unnest(CAST(:ids AS uuid[]), CAST(:after AS timestamptz[]), "
    "CAST(:through AS timestamptz[])) AS v(id, after, through) "
    "ON s.session_id = v.id AND s.at > v.after AND s.at <= v.through"
)


async def samples_in(
    db: AsyncSession, spans: Sequence[tuple[uuid.UUID, datetime, datetime]]
) -> list[Any]:
    """The samples of each (session, after, through) taken after `after` and no later than
    `through`, in one query."""
    if not spans:
        return []
    ids, after, through = (list(x) for x in zip(*spans, strict=True))
    result = await db.execute(_SAMPLES_IN, {"ids": ids, "after": after, "through": through})
    return list(result.all())
