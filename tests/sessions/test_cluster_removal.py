"""A cluster that still runs sessions cannot be removed."""

from __future__ import annotations

import httpx
from sqlalchemy import update

from gshare.clusters.models import Cluster
from gshare.sessions.models import InteractiveSession
from tests.builders import Builder


async def test_a_cluster_with_live_sessions_is_not_removed(
    build: Builder, client: httpx.AsyncClient
) -> None:
    admin = await build.signed_in(await build.user(super_admin=True))
    cluster = await build.cluster("busy")
    owner = await build.user()
    live = await build.interactive_session(owner, cluster, desired_state="Paused", phase="Paused")
    ended = await build.interactive_session(owner, cluster, ended=True)

    refused = await admin.delete(f"/api/v1/clusters/{cluster.id}")
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "cluster_has_live_sessions"
    assert refused.json()["error"]["message"].startswith("The cluster still runs 1 session(s);")
    async with build.sessions() as db:
        assert await db.get(Cluster, cluster.id) is not None

    async with build.sessions() as db, db.begin():
        await db.execute(
            update(InteractiveSession)
            .where(InteractiveSession.id == live.id)
            .values(ended_at=build.clock.now())
        )
    assert (await admin.delete(f"/api/v1/clusters/{cluster.id}")).status_code == 204
    async with build.sessions() as db:
        assert await db.get(Cluster, cluster.id) is None
        # Ended sessions stay in the record, no longer tied to the removed cluster.
        kept = await db.get(InteractiveSession, ended.id)
        assert kept is not None
        assert kept.cluster_id is None
