"""No forever credentials: the API keeps each cluster's operator token fresh in a Secret."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

from gshare.clusters.kube import SYSTEM_NAMESPACE, TOKEN_SECRET
from gshare.clusters.kubeconfigs import FileKubeconfigStore
from gshare.clusters.models import Cluster
from gshare.clusters.tasks import refresh_operator_tokens
from gshare.clusters.tokens import KeySet, new_key
from gshare.devcluster import Cluster as KubeCluster
from gshare.kit.clock import FrozenClock


def _token(kube: KubeCluster) -> str:
    import base64

    with kube.client() as client:
        secret = client.get(f"/api/v1/namespaces/{SYSTEM_NAMESPACE}/secrets/{TOKEN_SECRET}")
    assert secret.status_code == 200, secret.text
    return base64.b64decode(secret.json()["data"]["token"]).decode()


async def test_tokens_are_written_and_refreshed_well_before_they_expire(
    kube: KubeCluster, sessions, clock: FrozenClock, tmp_path: Path
) -> None:
    store = FileKubeconfigStore(tmp_path / "clusters")
    keys = KeySet([new_key(clock.now())])
    live = Cluster(
        id=uuid.uuid4(),
        name="live",
        api_server=kube.server,
        status="connected",
        status_message="",
        inventory_sequence=0,
        created_at=clock.now(),
    )
    dead = Cluster(
        id=uuid.uuid4(),
        name="dead",
        api_server="https://127.0.0.1:9",
        status="connected",
        status_message="",
        inventory_sequence=0,
        created_at=clock.now(),
    )
    async with sessions() as db, db.begin():
        db.add_all([live, dead])
    await store.put(live.id, kube.embedded_kubeconfig())
    await store.put(dead.id, kube.embedded_kubeconfig().replace(kube.server, "https://127.0.0.1:9"))

    first = await refresh_operator_tokens(sessions, store, keys, clock.now())
    assert (first.refreshed, first.failed) == (1, 1)
    token = _token(kube)
    assert keys.verify(token, clock.now()) == str(live.id)

    clock.advance(timedelta(minutes=20))
    second = await refresh_operator_tokens(sessions, store, keys, clock.now())
    assert second.fresh == 1
    assert _token(kube) == token

    clock.advance(timedelta(minutes=15))  # 25 minutes left: time for a new one
    third = await refresh_operator_tokens(sessions, store, keys, clock.now())
    assert third.refreshed == 1
    renewed = _token(kube)
    assert renewed != token
    assert keys.verify(renewed, clock.now() + timedelta(minutes=50)) == str(live.id)

    # A rotation by hand after a compromise: the token signed by the forgotten key is
    # replaced on the next pass, though it has long to live.
    clock.advance(timedelta(minutes=1))
    replaced = KeySet([new_key(clock.now())])
    fourth = await refresh_operator_tokens(sessions, store, replaced, clock.now())
    assert fourth.refreshed == 1
    assert replaced.verify(_token(kube), clock.now()) == str(live.id)

    async with sessions() as db:
        stored = {
            c.name: (c.status, c.status_message)
            for c in [await db.get(Cluster, live.id), await db.get(Cluster, dead.id)]
        }
    assert stored["live"] == ("connected", "")
    assert stored["dead"][0] == "unreachable"
    assert "token refresh failed" in stored["dead"][1]

    # The cluster removed and registered again: the token of the old registration is replaced
    # at once, though it is fresh and signed by the current key.
    again = Cluster(
        id=uuid.uuid4(),
        name="again",
        api_server=kube.server,
        status="connected",
        status_message="",
        inventory_sequence=0,
        created_at=clock.now(),
    )
    async with sessions() as db, db.begin():
        await db.delete(await db.get(Cluster, live.id))
        await db.delete(await db.get(Cluster, dead.id))
        db.add(again)
    await store.put(again.id, kube.embedded_kubeconfig())
    fifth = await refresh_operator_tokens(sessions, store, replaced, clock.now())
    assert (fifth.refreshed, fifth.fresh) == (1, 0)
    assert replaced.verify(_token(kube), clock.now()) == str(again.id)
