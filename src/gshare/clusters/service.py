"""The cluster registry and the inventory operators report."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from gshare.clusters import kube
from gshare.clusters.kubeconfigs import KubeconfigStore
from gshare.clusters.models import Cluster, GpuCard
from gshare.clusters.schemas import DEFAULT_SESSIONS_DOMAIN, InventoryReport
from gshare.identity.authz import Context, audit, require
from gshare.identity.permissions import Action
from gshare.kit.errors import Conflict, NotFound, Unprocessable
from gshare.kit.ids import new_id


@dataclass(frozen=True)
class Summary:
    cluster: Cluster
    nodes: int
    cards: int
    healthy: int
    missing: int


async def register(
    ctx: Context,
    store: KubeconfigStore,
    *,
    name: str,
    kubeconfig_text: str,
    sessions_domain: str = DEFAULT_SESSIONS_DOMAIN,
) -> Cluster:
    """Check the cluster answers and has the CRD, then keep its kubeconfig in the store."""
    require(ctx, Action.CLUSTERS_MANAGE, target_type="cluster", target_id=name)
    try:
        parsed = kube.parse_kubeconfig(kubeconfig_text)
        probe = await kube.probe(parsed)
    except kube.KubeconfigError as exc:
        raise Unprocessable(str(exc), code="invalid_kubeconfig") from exc
    if not probe.reachable:
        raise Unprocessable(probe.problem, code="cluster_unreachable")
    if not probe.crd_installed:
        raise Unprocessable(
            f"{probe.problem}; install GShare's operator (or its CRD) on the cluster first",
            code="crd_missing",
        )
    cluster = Cluster(
        id=new_id(),
        name=name,
        api_server=probe.server,
        sessions_domain=sessions_domain,
        status="connected",
        status_message="",
        last_contact_at=ctx.now,
        inventory_sequence=0,
        created_at=ctx.now,
    )
    ctx.session.add(cluster)
    try:
        await ctx.session.flush()
    except IntegrityError as exc:
        raise Conflict(
            f"A cluster named {name!r} is registered already.", code="already_exists"
        ) from exc
    await audit(
        ctx,
        "cluster.register",
        target_type="cluster",
        target_id=cluster.id,
        detail={"name": name, "api_server": probe.server, "sessions_domain": sessions_domain},
    )
    await ctx.session.flush()
    # Only what was checked is kept: the current context's server and embedded credentials.
    # Written last, so nothing after it can fail; if the commit still does, the registry says
    # the kubeconfig is missing and removal cleans it up.
    await store.put(cluster.id, kube.dump_kubeconfig(parsed))
    return cluster


FUTURE_SKEW = timedelta(hours=1)


def refuse_future_sequence(sequence: int, now: datetime) -> None:
    """Report sequences are the operator's clock in milliseconds; one far ahead of ours would
    freeze what it reports until that day, so it is refused."""
    if sequence > (now.timestamp() + FUTURE_SKEW.total_seconds()) * 1000:
        raise Unprocessable(
            "The report's sequence is ahead of the API's clock; check the operator's clock.",
            code="sequence_in_future",
        )


RemovalGuard = Callable[[AsyncSession, uuid.UUID], Awaitable[None]]
_removal_guards: list[RemovalGuard] = []


def add_removal_guard(guard: RemovalGuard) -> None:
    """Let another domain refuse a cluster's removal by raising (sessions refuse while any of
    theirs is live on it). Guards run with the cluster's row locked."""
    if guard not in _removal_guards:
        _removal_guards.append(guard)


async def remove(ctx: Context, cluster_id: uuid.UUID) -> None:
    """Forget a cluster. Its kubeconfig is deleted from the store by the caller once this is
    committed, so a failed removal never leaves a cluster without its kubeconfig."""
    require(ctx, Action.CLUSTERS_MANAGE, target_type="cluster", target_id=cluster_id)
    cluster = await ctx.session.get(Cluster, cluster_id, with_for_update=True)
    if cluster is None:
        raise NotFound("No such cluster.", code="cluster_not_found")
    for guard in _removal_guards:
        await guard(ctx.session, cluster_id)
    await ctx.session.delete(cluster)
    await audit(
        ctx,
        "cluster.remove",
        target_type="cluster",
        target_id=cluster_id,
        detail={"name": cluster.name},
    )
    await ctx.session.flush()


async def summaries(session: AsyncSession, ids: Sequence[uuid.UUID] | None = None) -> list[Summary]:
    query = select(Cluster).order_by(Cluster.name)
    if ids is not None:
        query = query.where(Cluster.id.in_(list(ids)))
    clusters = list(await session.scalars(query))
    counts = {
        row.cluster_id: row
        for row in await session.execute(
            select(
                GpuCard.cluster_id,
                func.count(func.distinct(GpuCard.node)).label("nodes"),
                func.count().label("cards"),
                func.count().filter(GpuCard.healthy & ~GpuCard.missing).label("healthy"),
                func.count().filter(GpuCard.missing).label("missing"),
            ).group_by(GpuCard.cluster_id)
        )
    }
    out = []
    for cluster in clusters:
        row = counts.get(cluster.id)
        out.append(
            Summary(
                cluster,
                row.nodes if row else 0,
                row.cards if row else 0,
                row.healthy if row else 0,
                row.missing if row else 0,
            )
        )
    return out


async def list_clusters(ctx: Context) -> list[Summary]:
    require(ctx, Action.CLUSTERS_READ, target_type="cluster")
    return await summaries(ctx.session)


async def cluster_detail(ctx: Context, cluster_id: uuid.UUID) -> tuple[Summary, list[GpuCard]]:
    require(ctx, Action.CLUSTERS_READ, target_type="cluster", target_id=cluster_id)
    found = await summaries(ctx.session, [cluster_id])
    if not found:
        raise NotFound("No such cluster.", code="cluster_not_found")
    cards = list(
        await ctx.session.scalars(
            select(GpuCard)
            .where(GpuCard.cluster_id == cluster_id)
            .order_by(GpuCard.node, GpuCard.uuid)
        )
    )
    return found[0], cards


async def apply_inventory(
    session: AsyncSession, cluster_id: uuid.UUID, report: InventoryReport, now: datetime
) -> bool:
    """Store a cluster's reported inventory. A report older than the last one applied changes
    nothing (replays and reordering are harmless); cards no longer reported become missing."""
    cluster = await session.get(Cluster, cluster_id, with_for_update=True)
    if cluster is None:
        raise NotFound("No such cluster.", code="cluster_not_found")
    cluster.last_contact_at = now
    cluster.status, cluster.status_message = "connected", ""
    refuse_future_sequence(report.sequence, now)
    if report.sequence <= cluster.inventory_sequence:
        await session.flush()
        return False
    cluster.inventory_sequence = report.sequence
    known = {
        card.uuid: card
        for card in await session.scalars(select(GpuCard).where(GpuCard.cluster_id == cluster_id))
    }
    seen: set[str] = set()
    for node in report.nodes:
        for reported in node.cards:
            seen.add(reported.uuid)
            card = known.get(reported.uuid)
            if card is None:
                card = GpuCard(id=new_id(), cluster_id=cluster_id, uuid=reported.uuid)
                session.add(card)
            card.node, card.model = node.name, reported.model
            card.memory_mib, card.cores = reported.memory_mib, reported.cores
            card.split_count, card.numa = reported.split_count, reported.numa
            card.healthy, card.missing, card.last_seen_at = reported.healthy, False, now
    for card_uuid, card in known.items():
        if card_uuid not in seen:
            card.missing = True
    await session.flush()
    return True
