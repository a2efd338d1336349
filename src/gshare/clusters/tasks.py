"""Periodic cluster work: keep each registered cluster's operator token fresh, and the cluster
the control plane runs in registered when it is asked to."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.audit.service import AuditEvent, record
from gshare.clusters import kube, repository
from gshare.clusters.kubeconfigs import KubeconfigStore
from gshare.clusters.models import Cluster
from gshare.clusters.tokens import MAX_LIFETIME, KeySet
from gshare.kit import metrics
from gshare.kit.ids import new_id

log = logging.getLogger(__name__)
REFRESH_BEFORE = timedelta(minutes=30)  # well before the one-hour token expires


@dataclass
class TokenRefresh:
    refreshed: int = 0
    fresh: int = 0
    failed: int = 0


def _expiry(value: str | None) -> datetime | None:
    """The recorded expiry, or None (refresh now) when there is none or it cannot be read."""
    try:
        when = datetime.fromisoformat(value) if value else None
    except ValueError:
        return None
    return when if when is not None and when.tzinfo is not None else None


async def refresh_operator_tokens(
    sessions: async_sessionmaker[AsyncSession],
    store: KubeconfigStore,
    keys: KeySet,
    now: datetime,
) -> TokenRefresh:
    """Write a new token into every cluster whose current one expires within 30 minutes, was
    signed by a key other than the current one, or speaks for another cluster id.

    No credential lives forever: each token lasts an hour, and the operator reloads the mounted
    Secret when it changes. A cluster that cannot be reached is marked unreachable."""
    async with sessions() as db:
        clusters = await repository.all_clusters(db)
    outcome = TokenRefresh()
    for cluster in clusters:
        status, message = "connected", ""
        try:
            text = await store.get(cluster.id)
            if text is None:
                raise kube.KubeconfigError("its kubeconfig is missing from the store")
            config = kube.parse_kubeconfig(text)
            held = await kube.operator_token_state(config)
            expiry = _expiry(held.expires_at)
            signer = keys.current.kid
            fresh = expiry is not None and expiry - now > REFRESH_BEFORE
            if fresh and held.key_id == signer and held.cluster_id == str(cluster.id):
                outcome.fresh += 1
            else:
                # Also when another key signed it (after a rotation by hand the old key no
                # longer verifies), or it speaks for another registration of this cluster (one
                # removed and registered again): the operator gets a token that works at once.
                token = keys.mint(str(cluster.id), now, MAX_LIFETIME)
                await kube.write_operator_token(
                    config,
                    token,
                    cluster_id=str(cluster.id),
                    expires_at=(now + MAX_LIFETIME).isoformat(),
                    key_id=signer,
                )
                outcome.refreshed += 1
        except Exception as exc:  # one cluster's trouble must not stop the others
            log.warning("cannot refresh the operator token of %s: %s", cluster.name, kube.said(exc))
            status, message = "unreachable", f"token refresh failed: {kube.said(exc)}"[:500]
            outcome.failed += 1
        async with sessions() as db, db.begin():
            await repository.set_status(db, cluster.id, status, message, now)
    counts = {"refreshed": outcome.refreshed, "fresh": outcome.fresh, "failed": outcome.failed}
    for counted, number in counts.items():
        metrics.TOKEN_REFRESHES.labels(counted).inc(number)  # 0 too: every series exists
    return outcome


async def keep_local_cluster(
    sessions: async_sessionmaker[AsyncSession],
    store: KubeconfigStore,
    *,
    name: str,
    sessions_domain: str,
    now: datetime,
    credentials: Callable[[], str] = kube.in_cluster_kubeconfig,
) -> uuid.UUID | None:
    """The cluster the control plane itself runs in, registered as `name` the first time and
    given the worker's own service-account credentials every time (the kubelet renews them).

    What an administrator would do by hand in the console for an all-in-one install: with it,
    the operator beside the control plane gets its token without anyone registering anything.
    A cluster registered under the same name with another API server is left alone (None): its
    credentials are never replaced by this pod's."""
    text = credentials()
    server = str(kube.parse_kubeconfig(text)["clusters"][0]["cluster"]["server"])
    async with sessions() as db, db.begin():
        cluster = await repository.cluster_named(db, name, lock=True)
        if cluster is None:
            cluster = Cluster(
                id=new_id(),
                name=name,
                api_server=server,
                sessions_domain=sessions_domain,
                status="connected",
                status_message="",
                inventory_sequence=0,
                created_at=now,
            )
            db.add(cluster)
            await db.flush()
            await record(
                db,
                AuditEvent(
                    "cluster.register",
                    target_type="cluster",
                    target_id=str(cluster.id),
                    detail={
                        "name": name,
                        "api_server": server,
                        "sessions_domain": sessions_domain,
                        "by": "worker",
                        "local": True,
                    },
                ),
                now=now,
            )
            log.info("registered the cluster the control plane runs in as %s", name)
        elif cluster.api_server == server and cluster.sessions_domain != sessions_domain:
            cluster.sessions_domain = sessions_domain  # the chart's sessions.domain changed
        elif cluster.api_server != server:
            log.error(
                "the cluster %s is registered with the API server %s, not this cluster's %s: "
                "its credentials are left as they are; choose another GSHARE_LOCAL_CLUSTER",
                name,
                cluster.api_server,
                server,
            )
            return None
        cluster_id = cluster.id
    await store.put(cluster_id, text)
    return cluster_id


# Longer than any registration takes between writing the kubeconfig and committing the row.
KUBECONFIG_GRACE = timedelta(minutes=10)


async def forget_removed_kubeconfigs(
    sessions: async_sessionmaker[AsyncSession], store: KubeconfigStore, now: datetime
) -> int:
    """Delete the kubeconfigs of clusters no longer registered. The worker does this, not the
    API: the API's credentials may create a kubeconfig but never read, change or delete one (a
    deleted Secret comes back in the answer, data and all). One written moments ago may belong
    to a registration not yet committed: it is left until KUBECONFIG_GRACE has passed."""
    kept = await store.stored()
    async with sessions() as db:
        registered = {c.id for c in await repository.all_clusters(db)}
    forgotten = 0
    for cluster_id, written_at in kept.items():
        if cluster_id not in registered and now - written_at > KUBECONFIG_GRACE:
            await store.delete(cluster_id)
            forgotten += 1
    return forgotten
