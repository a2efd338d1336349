"""The cluster registry and the count of refused internal calls."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from gshare.audit.service import AuditEvent, record
from gshare.clusters import kube, repository
from gshare.clusters.kubeconfigs import KubeconfigStore
from gshare.clusters.models import CallbackRefusal, Cluster
from gshare.clusters.schemas import DEFAULT_SESSIONS_DOMAIN
from gshare.identity.authz import Context, audit, require
from gshare.identity.permissions import Action
from gshare.kit import metrics
from gshare.kit.clients import client_bucket
from gshare.kit.errors import BadRequest, Conflict, DurableWrite, NotFound, Unprocessable
from gshare.kit.hooks import Guard, Hook
from gshare.kit.ids import new_id
from gshare.kit.pagination import PageRequest


class InvalidKubeconfig(Unprocessable):
    """The kubeconfig given to register a cluster cannot be used: not plain YAML, missing its
    current context, cluster or server, not an https:// server, or malformed certificate data;
    the message says what."""

    code = "invalid_kubeconfig"


class ClusterUnreachable(Unprocessable):
    """The kubeconfig's API server did not answer when the cluster was registered; the message
    names the server and the failure."""

    code = "cluster_unreachable"


class CrdMissing(Unprocessable):
    """The cluster answers but lacks GShare's GShareSession resource definition (or it differs
    from the one this version needs); install the operator on the cluster, then register it."""

    code = "crd_missing"


class LocalClusterKept(Conflict):
    """The name belongs to the cluster the control plane itself runs in, which the worker keeps
    registered under it (GSHARE_LOCAL_CLUSTER): it can be neither registered by hand nor
    removed; unset the setting (the chart's localCluster.name) first."""

    code = "local_cluster_kept"


@dataclass(frozen=True)
class CardCounts:
    nodes: int = 0
    cards: int = 0
    healthy: int = 0
    missing: int = 0


@dataclass(frozen=True)
class Summary:
    cluster: Cluster
    nodes: int
    cards: int
    healthy: int
    missing: int


# The GPU inventory belongs to capacity, which answers each cluster's card counts.
card_counts: Hook[[list[uuid.UUID] | None], dict[uuid.UUID, CardCounts]] = Hook("card counts")


async def register(
    ctx: Context,
    store: KubeconfigStore,
    *,
    name: str,
    kubeconfig_text: str,
    sessions_domain: str = DEFAULT_SESSIONS_DOMAIN,
    local_cluster: str = "",
) -> Cluster:
    """Check the cluster answers and has the CRD, then keep its kubeconfig in the store."""
    require(ctx, Action.CLUSTERS_MANAGE, target_type="cluster", target_id=name)
    if local_cluster and name == local_cluster:
        raise LocalClusterKept(
            f"{name!r} is the name of the cluster the control plane runs in, which it registers "
            "itself; choose another name."
        )
    try:
        parsed = kube.parse_kubeconfig(kubeconfig_text)
        probe = await kube.probe(parsed)
    except kube.KubeconfigError as exc:
        raise InvalidKubeconfig(str(exc)) from exc
    if not probe.reachable:
        raise ClusterUnreachable(probe.problem)
    if not probe.crd_installed:
        raise CrdMissing(
            f"{probe.problem}; install GShare's operator (or its CRD) on the cluster first"
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
    ctx.db.add(cluster)
    try:
        await ctx.db.flush()
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
    await ctx.db.flush()
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


# Other domains refuse a cluster's removal (sessions do while any of theirs is live on it); each
# guard runs with the cluster's row locked and returns why not, or None.
removal_guard: Guard[[uuid.UUID]] = Guard("cluster removal")
# What the cluster offers to isolation levels changed (why): placement may find room anew.
isolation_changed: Hook[[str], None] = Hook("cluster isolation changed")


async def remove(ctx: Context, cluster_id: uuid.UUID, *, local_cluster: str = "") -> None:
    """Forget a cluster. Its kubeconfig is deleted from the store by the caller once this is
    committed, so a failed removal never leaves a cluster without its kubeconfig."""
    require(ctx, Action.CLUSTERS_MANAGE, target_type="cluster", target_id=cluster_id)
    cluster = await repository.cluster(ctx.db, cluster_id, for_delete=True)
    if cluster is None:
        raise NotFound("No such cluster.", code="cluster_not_found")
    if local_cluster and cluster.name == local_cluster:
        # The worker would register it again within minutes, under a new id.
        raise LocalClusterKept(
            f"{cluster.name!r} is the cluster the control plane runs in, kept registered by the "
            "worker; unset GSHARE_LOCAL_CLUSTER (the chart's localCluster.name) to remove it."
        )
    await removal_guard.check(ctx.db, cluster_id)
    await ctx.db.delete(cluster)
    await audit(
        ctx,
        "cluster.remove",
        target_type="cluster",
        target_id=cluster_id,
        detail={"name": cluster.name},
    )
    await ctx.db.flush()


async def set_isolation(
    ctx: Context, cluster_id: uuid.UUID, sandbox: str | None, *, user_namespaces: bool
) -> None:
    """Set what the cluster offers to isolation levels. Sessions already running keep the pods
    they were made with; placement uses the new setting from now on."""
    require(ctx, Action.ISOLATION_MANAGE, target_type="cluster", target_id=cluster_id)
    cluster = await repository.cluster(ctx.db, cluster_id, lock=True)
    if cluster is None:
        raise NotFound("No such cluster.", code="cluster_not_found")
    cluster.sandbox_runtime_class, cluster.user_namespaces = sandbox, user_namespaces
    await audit(
        ctx,
        "cluster.isolation_set",
        target_type="cluster",
        target_id=cluster_id,
        detail={"sandbox_runtime_class": sandbox, "user_namespaces": user_namespaces},
    )
    await ctx.db.flush()
    await isolation_changed.results(ctx.db, f"cluster {cluster_id} isolation")


async def summaries(db: AsyncSession, ids: list[uuid.UUID] | None = None) -> list[Summary]:
    """Clusters by name with their card counts, in a fixed number of queries."""
    clusters = await repository.clusters_by_name(db, ids)
    counts: dict[uuid.UUID, CardCounts] = {}
    for answered in await card_counts.results(db, ids):
        counts.update(answered)
    out = []
    for found in clusters:
        c = counts.get(found.id, CardCounts())
        out.append(Summary(found, c.nodes, c.cards, c.healthy, c.missing))
    return out


async def list_clusters(ctx: Context) -> list[Summary]:
    require(ctx, Action.CLUSTERS_READ, target_type="cluster")
    return await summaries(ctx.db)


async def cluster_detail(ctx: Context, cluster_id: uuid.UUID) -> Summary:
    require(ctx, Action.CLUSTERS_READ, target_type="cluster", target_id=cluster_id)
    found = await summaries(ctx.db, [cluster_id])
    if not found:
        raise NotFound("No such cluster.", code="cluster_not_found")
    return found[0]


async def connected_cluster(db: AsyncSession, cluster_id: uuid.UUID, now: datetime) -> Cluster:
    """The reporting cluster's row, locked, marked as heard from and connected."""
    cluster = await repository.cluster(db, cluster_id, lock=True)
    if cluster is None:
        raise NotFound("No such cluster.", code="cluster_not_found")
    cluster.last_contact_at = now
    cluster.status, cluster.status_message = "connected", ""
    return cluster


async def connected_ids(db: AsyncSession) -> list[uuid.UUID]:
    """Clusters whose operator is reachable: the only ones admission places sessions on."""
    return await repository.connected_ids(db)


async def cluster_exists(db: AsyncSession, cluster_id: uuid.UUID) -> bool:
    return await repository.cluster(db, cluster_id) is not None


# ---- what other domains ask ----------------------------------------------------------------


async def heard_from(db: AsyncSession, cluster_id: uuid.UUID, now: datetime) -> None:
    """A callback from the cluster's operator was accepted at `now`."""
    await repository.touch(db, cluster_id, now)


async def metrics_reported(
    db: AsyncSession, cluster_id: uuid.UUID, now: datetime, error: str, sequence: int
) -> bool:
    """The cluster's operator read its GPU metrics source (error empty) or could not; False
    (and nothing changes) when a report as new was taken already."""
    return await repository.set_metrics(db, cluster_id, now, error, sequence)


async def metrics_fresh(db: AsyncSession, since: datetime) -> set[uuid.UUID]:
    """Clusters whose metrics were read without error since `since`: only their sessions may
    be judged idle."""
    return await repository.metrics_fresh(db, since)


async def set_orphans(
    db: AsyncSession, cluster_id: uuid.UUID, names: list[str], now: datetime
) -> None:
    """Session resources found in the cluster with no session of it behind them."""
    await repository.set_orphans(db, cluster_id, names, now)


async def orphans(db: AsyncSession) -> list[tuple[uuid.UUID, str, list[str]]]:
    """Clusters with resources no session stands for: id, name, the resources' names."""
    return await repository.orphans(db)


async def metrics_problems(db: AsyncSession) -> list[tuple[uuid.UUID, str, datetime | None, str]]:
    """Clusters whose GPU metrics could not be read last time: id, name, when, why."""
    return await repository.metrics_problems(db)


async def sessions_domain_of(db: AsyncSession, cluster_id: uuid.UUID) -> str | None:
    """Where the cluster serves session pages; None when there is no such cluster."""
    found = await repository.cluster(db, cluster_id)
    return found.sessions_domain if found is not None else None


# ---- refused internal calls ----------------------------------------------------------------

# The first refusal per source and reason in each ten-minute window is audited and the rest
# counted: at most six audit entries an hour for one source and reason, and never more than
# MAX_SOURCES_PER_WINDOW sources per window (the rest share the "other" row). Windows are
# forgotten after a week; their first refusals stay in the audit log.
REFUSAL_WINDOW = timedelta(minutes=10)
MAX_SOURCES_PER_WINDOW = 100
OTHER_SOURCES = "other"
REFUSALS_KEPT = timedelta(days=7)


@dataclass(frozen=True)
class Refusal:
    """One refused internal call. Every field is bounded and none is text the caller chose:
    `reason` comes from a fixed set, `route` is the route's template, the ids parsed UUIDs."""

    action: str
    reason: str
    route: str
    client: str
    target_type: str | None = None
    target_id: uuid.UUID | None = None
    actor_id: uuid.UUID | None = None


def source_of(client: str) -> str:
    """Who a refusal is counted against: the client's throttling bucket."""
    return client_bucket(client)


def window_of(now: datetime) -> datetime:
    seconds = int(REFUSAL_WINDOW.total_seconds())
    start = int(now.timestamp()) // seconds * seconds
    return datetime.fromtimestamp(start, tz=now.tzinfo)


async def record_refusal(db: AsyncSession, refusal: Refusal, now: datetime) -> bool:
    """Count a refusal; audit it when it is the first of its window. Returns whether audited."""
    window = window_of(now)
    source = source_of(refusal.client)
    reason = refusal.reason[:40]
    # Before any write: a refusal the database cannot take is still counted here.
    metrics.CALLBACK_REFUSALS.labels(reason, refusal.route[:100]).inc()
    if await repository.count_refusal(db, source, reason, window, now):
        return False
    if await repository.sources_in_window(db, window) >= MAX_SOURCES_PER_WINDOW:
        source = OTHER_SOURCES
    if not await repository.open_refusal(db, source, reason, window, refusal.route[:100], now):
        return False
    await repository.forget_refusals_before(db, now - REFUSALS_KEPT)
    event = AuditEvent(
        action=refusal.action,
        outcome="denied",
        actor_id=refusal.actor_id,
        target_type=refusal.target_type,
        target_id=str(refusal.target_id) if refusal.target_id is not None else None,
        detail={
            "reason": reason,
            "client": source,
            "route": refusal.route[:100],
            # Later refusals of this window are counted in the refusal summary, not audited.
            "window_start": window.isoformat(),
            "window_seconds": int(REFUSAL_WINDOW.total_seconds()),
        },
    )
    await record(db, event, now=now)
    return True


def refusal_later(refusal: Refusal, now: datetime) -> DurableWrite:
    """Recorded after the refused request's rollback."""

    async def write(db: AsyncSession) -> None:
        await record_refusal(db, refusal, now)

    return write


def _refusals_after(page: PageRequest) -> tuple[datetime, str, str] | None:
    if page.after is None:
        return None
    if len(page.after) != 3 or not all(isinstance(v, str) and len(v) <= 100 for v in page.after):
        raise BadRequest("The cursor is not valid.", code="invalid_cursor")
    try:
        at = datetime.fromisoformat(page.after[0])
    except ValueError:
        raise BadRequest("The cursor is not valid.", code="invalid_cursor") from None
    if at.tzinfo is None:
        raise BadRequest("The cursor is not valid.", code="invalid_cursor")
    return at, page.after[1], page.after[2]


async def list_refusals(
    ctx: Context, page: PageRequest
) -> tuple[list[CallbackRefusal], tuple[str, str, str] | None]:
    """Refused internal calls per source, reason and window, newest first."""
    require(ctx, Action.CLUSTERS_READ, target_type="callback_refusal")
    rows = await repository.refusals(ctx.db, page.limit + 1, _refusals_after(page))
    items = rows[: page.limit]
    last = items[-1] if len(rows) > page.limit else None
    after = (last.window_start.isoformat(), last.source, last.reason) if last else None
    return items, after
