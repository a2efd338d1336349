"""The all-in-one install: the worker registers the cluster it runs in with its own service
account, whose rights are exactly what the chart's RBAC grants, and keeps its operator's token
fresh; the API's service account keeps kubeconfigs and the key set in Secrets."""

from __future__ import annotations

import base64
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from sqlalchemy import select

from gshare.audit.models import AuditEntry
from gshare.clusters import kube as kubeapi_adapter
from gshare.clusters.keystore import SecretKeyStore, load_or_create
from gshare.clusters.kubeconfigs import (
    ConfigurationFactory,
    FileKubeconfigStore,
    SecretKubeconfigStore,
)
from gshare.clusters.models import Cluster as ClusterRow
from gshare.clusters.tasks import (
    forget_removed_kubeconfigs,
    keep_local_cluster,
    refresh_operator_tokens,
)
from gshare.clusters.tokens import KeySet, new_key
from gshare.devcluster import Cluster
from gshare.kit import kubeapi
from tests.kube import chart


@pytest.fixture(scope="module")
def installed(kube: Cluster) -> Cluster:
    kube.install_crd()
    kube.create_namespace("gshare-system", enforce="baseline")
    kube.create_namespace("gshare-sessions", enforce="baseline")
    kube.create_namespace("gshare-secrets")
    chart.install(kube, chart.identities())
    return kube


def _mounted(kube: Cluster, account: str, folder: Path) -> Path:
    """What the kubelet mounts into a pod of `account`: a bound token and the cluster's CA."""
    folder.mkdir(parents=True)
    (folder / "token").write_text(chart.token_of(kube, account))
    (folder / "ca.crt").write_bytes((kube.folder / "pki" / "ca.crt").read_bytes())
    return folder


def _in_pod(kube: Cluster, folder: Path) -> ConfigurationFactory:
    """What load_incluster_config makes of a mounted token and CA."""

    async def configuration() -> client.Configuration:
        loaded = client.Configuration()
        loaded.host = kube.server
        loaded.ssl_ca_cert = str(folder / "ca.crt")
        loaded.api_key = {"BearerToken": f"Bearer {(folder / 'token').read_text()}"}
        return loaded

    return configuration


@pytest.fixture
def in_pod(installed: Cluster, monkeypatch: pytest.MonkeyPatch) -> Cluster:
    where = urlsplit(installed.server)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", str(where.hostname))
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(where.port))
    return installed


async def test_the_worker_registers_its_cluster_once_and_its_operator_gets_a_token(
    in_pod: Cluster, sessions, tmp_path: Path
) -> None:
    folder = _mounted(in_pod, "gshare-worker", tmp_path / "worker")
    store = FileKubeconfigStore(tmp_path / "clusters")
    now = datetime.now(UTC)
    name = f"local-{uuid.uuid4().hex[:6]}"

    def credentials() -> str:
        return kubeapi_adapter.in_cluster_kubeconfig(folder)

    async def keep(name: str) -> uuid.UUID | None:
        return await keep_local_cluster(
            sessions,
            store,
            name=name,
            sessions_domain="sessions.example.org",
            now=now,
            credentials=credentials,
        )

    first = await keep(name)
    assert await keep(name) == first
    async with sessions() as db:
        row = await db.get(ClusterRow, first)
        registered = list(
            await db.scalars(
                select(AuditEntry).where(
                    AuditEntry.action == "cluster.register", AuditEntry.target_id == str(first)
                )
            )
        )
    assert row is not None
    assert (row.name, row.sessions_domain) == (name, "sessions.example.org")
    assert [entry.detail["local"] for entry in registered] == [True]

    # A remote cluster an administrator registered under the same name keeps its credentials.
    taken = f"taken-{uuid.uuid4().hex[:6]}"
    async with sessions() as db, db.begin():
        db.add(
            ClusterRow(
                id=uuid.uuid4(),
                name=taken,
                api_server="https://gpu.example.org:6443",
                status="connected",
                status_message="",
                inventory_sequence=0,
                created_at=now,
            )
        )
    assert await keep(taken) is None
    async with sessions() as db:
        remote = await db.scalar(select(ClusterRow).where(ClusterRow.name == taken))
        assert remote is not None
        assert await store.get(remote.id) is None
        await db.delete(remote)
        await db.commit()

    keys = KeySet([new_key(now)])
    refreshed = await refresh_operator_tokens(sessions, store, keys, now)
    assert (refreshed.failed, refreshed.refreshed) == (0, 1)
    with in_pod.client() as http:
        secret = http.get("/api/v1/namespaces/gshare-system/secrets/gshare-operator-token")
    token = base64.b64decode(secret.json()["data"]["token"]).decode()
    assert keys.verify(token, now) == str(first)

    # With the chart's RBAC, the worker's own credentials apply sessions, and reach no further.
    text = await store.get(first)
    assert text is not None
    config = kubeapi_adapter.parse_kubeconfig(text)
    session_id = str(uuid.uuid4())
    name = f"session-{session_id}"
    body = {
        "apiVersion": "gshare.io/v1alpha1",
        "kind": "GShareSession",
        "metadata": {"name": name},
        "spec": {
            "sessionId": session_id,
            "ownerId": str(uuid.uuid4()),
            "sessionType": "terminal",
            "image": "registry.example/gshare/terminal:1",
            "cpuMillicores": 500,
            "memoryMiB": 1024,
            "desiredState": "Paused",
        },
    }
    await kubeapi_adapter.apply_session(config, "gshare-sessions", body)
    assert name in await kubeapi_adapter.session_names(config, "gshare-sessions")
    await kubeapi_adapter.delete_session(config, "gshare-sessions", name)
    api = await kubeapi_adapter.api_client(config)
    try:
        for kind, namespace in [("Secret", "gshare-sessions"), ("Pod", "gshare-sessions")]:
            with pytest.raises(ApiException) as refused:
                await kubeapi.names(api, kind, namespace)
            assert refused.value.status == 403
        await _cannot_borrow_a_service_account(api)
    finally:
        await api.close()


async def test_the_apis_service_account_writes_kubeconfigs_and_uses_the_key_set(
    in_pod: Cluster, sessions, tmp_path: Path
) -> None:
    folder = _mounted(in_pod, "gshare-api", tmp_path / "api")
    config = kubeapi_adapter.parse_kubeconfig(kubeapi_adapter.in_cluster_kubeconfig(folder))

    configuration = _in_pod(in_pod, folder)
    kubeconfigs = SecretKubeconfigStore(configuration)
    cluster_id = uuid.uuid4()
    await kubeconfigs.put(cluster_id, "apiVersion: v1\nkind: Config\n")
    # Written, and then beyond the API's reach: no credential of any cluster can leave through
    # it (a deletion would answer with the Secret too).
    for attempt in (
        kubeconfigs.get(cluster_id),
        kubeconfigs.delete(cluster_id),
        kubeconfigs.put(cluster_id, "apiVersion: v1\nkind: Config\nclusters: []\n"),
        kubeconfigs.stored(),
    ):
        with pytest.raises(ApiException) as refused:
            await attempt
        assert refused.value.status == 403
    keys = await load_or_create(SecretKeyStore(configuration), datetime.now(UTC))
    assert keys.current.kid

    # The worker reads it, and deletes it once its cluster is not registered.
    kept = SecretKubeconfigStore(_in_pod(in_pod, _mounted(in_pod, "gshare-worker", tmp_path / "w")))
    assert await kept.get(cluster_id) == "apiVersion: v1\nkind: Config\n"
    assert cluster_id in await kept.stored()
    later = datetime.now(UTC) + timedelta(minutes=11)
    assert await forget_removed_kubeconfigs(sessions, kept, later) >= 1
    assert cluster_id not in await kept.stored()

    api = await kubeapi_adapter.api_client(config)
    try:
        for namespace in ("gshare-sessions", "gshare-system"):  # no other namespace's Secrets
            with pytest.raises(ApiException) as refused:
                await kubeapi.get(api, "Secret", "gshare-bootstrap-admin", namespace)
            assert refused.value.status == 403
        await _cannot_borrow_a_service_account(api)
    finally:
        await api.close()


async def _cannot_borrow_a_service_account(api: client.ApiClient) -> None:
    """Creating a service-account token Secret beside the operator's account would hand out a
    long-lived token of that account: refused."""
    borrowed = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": f"borrowed-{uuid.uuid4().hex[:6]}",
            "namespace": "gshare-system",
            "annotations": {"kubernetes.io/service-account.name": "gshare-operator"},
        },
        "type": "kubernetes.io/service-account-token",
    }
    with pytest.raises(ApiException) as refused:
        await kubeapi.create(api, borrowed)
    assert refused.value.status == 403
