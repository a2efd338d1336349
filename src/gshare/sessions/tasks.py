"""The worker's session loops: applying wanted resources to clusters, metering, idle reaping
and reconciliation. Each is safe with several workers at once and after any crash."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.capacity import admission
from gshare.clusters import kube
from gshare.clusters import service as clusters
from gshare.clusters.kubeconfigs import KubeconfigStore
from gshare.credits import operations
from gshare.credits.operations import Charge
from gshare.kit.db import run_in_transaction
from gshare.kit.settings import Settings
from gshare.sessions import lifecycle, metering, reaping, repository, resource, service, usage

log = logging.getLogger(__name__)

APPLY_BATCH = 50
METERING_BATCH = 1000

# ---- applying resources --------------------------------------------------------------------


@dataclass(frozen=True)
class _Wanted:
    session_id: uuid.UUID
    cluster_id: uuid.UUID | None
    generation: int
    remove: bool
    body: dict[str, Any]


async def _wanted(db: AsyncSession, namespace: str) -> list[_Wanted]:
    rows = await repository.unapplied(db, APPLY_BATCH)
    mounts: dict[uuid.UUID, list[resource.Mount]] = {}
    for m in await repository.mounts_of(db, [r.id for r in rows]):
        mounts.setdefault(m.session_id, []).append(
            resource.Mount(
                m.Volume.id, m.Volume.kind, m.mount_path, m.Volume.access_mode, m.Volume.size_gib
            )
        )
    out = []
    for row in rows:
        card = boundary = None
        if row.state in lifecycle.HOLDING and row.request_id is not None:
            allocation = await admission.allocation_of(db, row.request_id)
            boundary = None if allocation is None else allocation.boundary
            found = None if allocation is None else await admission.assignment(db, allocation)
            if found is not None:
                card = resource.Card(
                    found.node, found.card_uuid, found.vram_mib, found.cores_percent,
                    found.mig_profile,
                )  # fmt: skip
        body = resource.resource(
            session_id=row.id,
            owner_id=row.owner_id,
            session_type=row.session_type,
            image=row.image,
            cpu_millicores=row.cpu_millicores,
            memory_mib=row.memory_mib,
            desired_state=row.desired_state,
            card=card,
            mounts=mounts.get(row.id, []),
            namespace=namespace,
            revision=row.spec_generation,
            boundary=boundary,
        )
        remove = row.state in ("stopping", "stopped")
        out.append(_Wanted(row.id, row.cluster_id, row.spec_generation, remove, body))
    return out


async def apply_pending(
    sessions: async_sessionmaker[AsyncSession],
    store: KubeconfigStore,
    now: datetime,
    *,
    namespace: str,
) -> int:
    """Take every session whose wanted resource changed to its cluster: applied with
    server-side apply, or deleted after a stop. The cluster calls happen outside any
    transaction; a failure is recorded and retried on the next tick."""

    async def read(db: AsyncSession) -> list[_Wanted]:
        return await _wanted(db, namespace)

    wanted = await run_in_transaction(sessions, read)
    done = 0
    # Workers apply at once: each session's lock, and a fresh look under it, keep an older
    # resource from being applied over a newer one (or over its deletion).
    async with sessions() as locks:
        # One connection for the whole batch, with no transaction left open on it.
        await locks.connection(execution_options={"isolation_level": "AUTOCOMMIT"})
        for item in wanted:
            if not await repository.try_lock_apply(locks, item.session_id):
                continue  # another worker is applying it
            try:
                done += await _apply_one(sessions, store, item, now, namespace)
            finally:
                await repository.unlock_apply(locks, item.session_id)
    return done


async def _apply_one(
    sessions: async_sessionmaker[AsyncSession],
    store: KubeconfigStore,
    item: _Wanted,
    now: datetime,
    namespace: str,
) -> int:
    async def current(db: AsyncSession) -> bool:
        return await repository.wants_applied(db, item.session_id, item.generation)

    if not await run_in_transaction(sessions, current):
        return 0  # applied meanwhile, or a newer resource is wanted: the next tick takes it
    error = ""
    if item.cluster_id is not None:
        try:
            text = await store.get(item.cluster_id)
            if text is None:
                raise RuntimeError("the cluster has no stored kubeconfig")
            config = kube.parse_kubeconfig(text)
            if item.remove:
                await kube.delete_session(config, namespace, item.body["metadata"]["name"])
            else:
                await kube.apply_session(config, namespace, item.body)
        except Exception as exc:  # any failure: recorded, and tried again next tick
            error = kube.said(exc)[:1000] or type(exc).__name__
            log.warning("cannot apply session %s: %s", item.session_id, error)

    async def mark(db: AsyncSession) -> None:
        await repository.mark_applied(db, item.session_id, item.generation, error)
        if not error and item.remove:
            row = await repository.session_row(db, item.session_id, lock=True)
            if row is not None and row.state == "stopping":
                await service.removed(db, row, now)

    await run_in_transaction(sessions, mark)
    return 0 if error else 1


async def scan_orphans(
    sessions: async_sessionmaker[AsyncSession],
    store: KubeconfigStore,
    now: datetime,
    *,
    namespace: str,
) -> int:
    """List, for each connected cluster, the session resources no live session of that
    cluster stands for (left behind by a deletion that never reached it, or made by hand).
    They are recorded for the admins, never deleted: whoever made them decides."""

    async def connected(db: AsyncSession) -> list[uuid.UUID]:
        return await clusters.connected_ids(db)

    found = 0
    for cluster_id in await run_in_transaction(sessions, connected):
        text = await store.get(cluster_id)
        if text is None:
            continue
        try:
            names = await kube.session_names(kube.parse_kubeconfig(text), namespace)
        except Exception as exc:  # an unreachable cluster: its last list stands
            log.warning("cannot list the sessions of cluster %s: %s", cluster_id, kube.said(exc))
            continue
        ids = {n: _session_id(n) for n in names}

        async def record(
            db: AsyncSession,
            cluster_id: uuid.UUID = cluster_id,
            ids: dict[str, uuid.UUID | None] = ids,
        ) -> list[str]:
            live = await repository.in_cluster(
                db, cluster_id, [i for i in ids.values() if i is not None]
            )
            orphans = sorted(n for n, i in ids.items() if i is None or i not in live)
            await clusters.set_orphans(db, cluster_id, orphans, now)
            return orphans

        found += len(await run_in_transaction(sessions, record))
    return found


def _session_id(name: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(name.removeprefix("session-"))
    except ValueError:
        return None


# ---- metering ------------------------------------------------------------------------------


async def meter_batch(db: AsyncSession, now: datetime, settings: Settings) -> int:
    """Capture what one batch of sessions used since their last capture, extend the holds
    that run low, and pause the sessions whose owners cannot pay for more. Returns how many
    sessions it metered (a full batch: call again)."""
    due = await repository.due_for_metering(db, now - timedelta(seconds=1), METERING_BATCH)
    if not due:
        return 0
    captures = {
        row.id: metering.capture(row.price_per_hour, row.billed_from, row.metered_until, now)
        for row in due
    }
    # A session that cannot pay is paused below, which releases its card: its allocation and
    # card are locked before the wallets are, in the one lock order.
    await admission.lock_paid_by(db, [row.hold_id for row in due])
    # Enough to reach past the next tick, whatever its delay.
    lead = int(3 * settings.metering_interval_seconds) + 60
    charged = await operations.meter_holds(
        db,
        [Charge(row.hold_id, captures[row.id].amount) for row in due],
        lead_seconds=lead,
        now=now,
    )
    by_hold = {c.hold_id: c for c in charged}
    ids, untils, amounts, short = [], [], [], []
    for row in due:
        result = by_hold.get(row.hold_id)
        if result is None:
            continue  # its hold was settled meanwhile
        ids.append(row.id)
        untils.append(captures[row.id].until)
        amounts.append(result.captured)
        if result.short:
            short.append(row.id)
    await repository.store_metered(db, ids, untils, amounts)
    for session_id in short:
        row = await repository.session_row(db, session_id, lock=True)
        if row is not None and row.state in lifecycle.HOLDING:
            await service.pause_for(
                db,
                row,
                now,
                why="Your wallet cannot cover more GPU time. Its volumes are kept; resume it "
                "once you have credits.",
                code="credits",
                title=f"Your session {row.name} was paused: out of credits",
            )
    return len(due)


async def meter(
    sessions: async_sessionmaker[AsyncSession], settings: Settings, now: datetime
) -> int:
    """One metering tick over every billed session, a batch per transaction."""
    total = 0
    while True:

        async def work(db: AsyncSession) -> int:
            return await meter_batch(db, now, settings)

        count = await run_in_transaction(sessions, work)
        total += count
        if count < METERING_BATCH:
            return total


async def oldest_metered(sessions: async_sessionmaker[AsyncSession]) -> datetime | None:
    """How far the least recently metered billed session is metered: the metering lag is the
    time since then."""
    async with sessions() as db:
        return await repository.oldest_metered(db)


# ---- utilization samples -------------------------------------------------------------------


async def thin_samples(sessions: async_sessionmaker[AsyncSession], now: datetime) -> int:
    """Thin every live or recently ended session's samples with age, a batch of sessions per
    transaction. Returns how many rows it removed."""
    removed, after = 0, None
    while True:

        async def work(
            db: AsyncSession, after: uuid.UUID | None = after
        ) -> tuple[int, uuid.UUID | None]:
            return await usage.thin_batch(db, now, after)

        count, after = await run_in_transaction(sessions, work)
        removed += count
        if after is None:
            return removed


# ---- idle reaping and reconciliation -------------------------------------------------------


async def reap_once(
    sessions: async_sessionmaker[AsyncSession], settings: Settings, now: datetime
) -> dict[str, int]:
    async def work(db: AsyncSession) -> dict[str, int]:
        return await reaping.reap(db, now, settings)

    return await run_in_transaction(sessions, work)


async def reconcile_once(
    sessions: async_sessionmaker[AsyncSession], settings: Settings, now: datetime
) -> int:
    """Anything held for a session that does not hold it is given back (see
    `service.repair_leaks`). Sessions their cluster has not reported for too long, and those
    whose card went missing, are lost; those that never started fail. Either is settled. A
    stop the cluster has not confirmed for as long ends. Sessions whose owner is no longer in
    their group are paused."""
    cutoff = now - timedelta(minutes=settings.session_report_timeout_minutes)

    async def repair(db: AsyncSession) -> int:
        return await service.repair_leaks(db, now)

    # First, in a transaction of its own: it locks sessions before anything else.
    repaired = await run_in_transaction(sessions, repair)
    if repaired:
        log.warning("released %d allocations or holds kept for sessions that ended", repaired)

    async def work(db: AsyncSession) -> int:
        silent = await repository.silent_since(db, ["starting", "running", "pausing"], cutoff)
        for row in silent:
            await service.lose(
                db,
                row,
                now,
                "Its cluster has not reported it for "
                f"{settings.session_report_timeout_minutes:g} minutes.",
            )
        stuck = await repository.in_state_since(
            db, "starting", now - timedelta(minutes=settings.session_start_timeout_minutes)
        )
        for row in stuck:
            said = f" The cluster says: {row.phase_message}." if row.phase_message else ""
            await service.fail(
                db,
                row,
                now,
                f"It did not start within {settings.session_start_timeout_minutes:g} minutes."
                + said,
            )
        # A stop whose removal the cluster has not confirmed for as long (it does not answer,
        # or is gone): stopped all the same. It holds nothing; the apply loop still deletes
        # the resource once the cluster answers again.
        unconfirmed = await repository.in_state_since(db, "stopping", cutoff)
        for row in unconfirmed:
            await service.removed(
                db,
                row,
                now,
                "Stopped; its cluster has not confirmed the removal for "
                f"{settings.session_report_timeout_minutes:g} minutes, and removes it once it "
                "answers again.",
            )
        # A guest's membership expiring is announced by nothing: noticed here.
        left = await service.pause_outside_groups(db, now)
        holding = await repository.running_gpu_sessions(db)
        lost = await admission.lost_among(db, [r.request_id for r in holding if r.request_id])
        for row in holding:
            if row.request_id in lost:
                await service.lose(db, row, now, "Its card went missing from its cluster.")
        return len(silent) + len(stuck) + len(unconfirmed) + len(lost) + left

    return repaired + await run_in_transaction(sessions, work)
