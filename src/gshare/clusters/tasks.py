"""Periodic cluster work: keep each registered cluster's operator token fresh."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.clusters import kube, repository
from gshare.clusters.kubeconfigs import KubeconfigStore
from gshare.clusters.tokens import MAX_LIFETIME, KeySet

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
    """Write a new token into every cluster whose current one expires within 30 minutes.

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
            expiry = _expiry(await kube.operator_token_expiry(config))
            if expiry is not None and expiry - now > REFRESH_BEFORE:
                outcome.fresh += 1
            else:
                token = keys.mint(str(cluster.id), now, MAX_LIFETIME)
                await kube.write_operator_token(config, token, (now + MAX_LIFETIME).isoformat())
                outcome.refreshed += 1
        except Exception as exc:  # one cluster's trouble must not stop the others
            log.warning("cannot refresh the operator token of %s: %s", cluster.name, kube.said(exc))
            status, message = "unreachable", f"token refresh failed: {kube.said(exc)}"[:500]
            outcome.failed += 1
        async with sessions() as db, db.begin():
            await repository.set_status(db, cluster.id, status, message, now)
    return outcome
