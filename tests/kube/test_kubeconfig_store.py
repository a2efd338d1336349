"""Kubeconfigs kept as Secrets in gshare-secrets when the API runs inside Kubernetes."""

from __future__ import annotations

import base64
import uuid

import pytest
from kubernetes_asyncio import client, config

from gshare.clusters.kube import parse_kubeconfig
from gshare.clusters.kubeconfigs import SecretKubeconfigStore
from gshare.devcluster import Cluster


async def test_the_secret_store_puts_reads_and_forgets(kube: Cluster) -> None:
    kube.create_namespace("gshare-secrets")
    home = parse_kubeconfig(kube.embedded_kubeconfig())

    async def configuration() -> client.Configuration:
        # In production: the API's service account (load_incluster_config).
        loaded = client.Configuration()
        await config.load_kube_config_from_dict(home, client_configuration=loaded)
        return loaded

    store = SecretKubeconfigStore(configuration)
    cluster_id = uuid.uuid4()
    assert await store.get(cluster_id) is None
    await store.put(cluster_id, "apiVersion: v1\nkind: Config\n")
    await store.put(cluster_id, "apiVersion: v1\nkind: Config\nclusters: []\n")  # replaced
    assert await store.get(cluster_id) == "apiVersion: v1\nkind: Config\nclusters: []\n"
    with kube.client() as http:
        secret = http.get(
            f"/api/v1/namespaces/gshare-secrets/secrets/gshare-cluster-{cluster_id}"
        ).json()
    assert secret["type"] == "Opaque"
    assert secret["metadata"]["labels"]["gshare.io/cluster"] == str(cluster_id)
    assert base64.b64decode(secret["data"]["kubeconfig"]).startswith(b"apiVersion")
    await store.delete(cluster_id)
    await store.delete(cluster_id)  # already gone: nothing to do
    assert await store.get(cluster_id) is None


async def test_a_secret_that_holds_no_readable_kubeconfig_is_a_clear_error(kube: Cluster) -> None:
    kube.create_namespace("gshare-secrets")
    home = parse_kubeconfig(kube.embedded_kubeconfig())

    async def configuration() -> client.Configuration:
        loaded = client.Configuration()
        await config.load_kube_config_from_dict(home, client_configuration=loaded)
        return loaded

    store = SecretKubeconfigStore(configuration)
    cluster_id = uuid.uuid4()
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": store.name_of(cluster_id), "namespace": "gshare-secrets"},
        "data": {"kubeconfig": base64.b64encode(b"\xff\xfe not text").decode()},
    }
    with kube.client() as http:
        created = http.post("/api/v1/namespaces/gshare-secrets/secrets", json=body)
        assert created.status_code == 201, created.text
    with pytest.raises(ValueError, match="holds no readable kubeconfig"):
        await store.get(cluster_id)
    await store.delete(cluster_id)
