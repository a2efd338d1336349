"""Cluster registration answers a clear 4xx, never a 500, whatever the kubeconfig says and
whatever the cluster's API server answers."""

from __future__ import annotations

import json

import httpx
import pytest
from sqlalchemy import func, select

from gshare.clusters.kube import CRD, CRD_PATH, MAX_SERVER_LENGTH, parse_kubeconfig
from gshare.clusters.models import Cluster
from tests.builders import Builder
from tests.clusters.scripted_apiserver import scripted_apiserver

CLUSTERS = "/api/v1/clusters"


async def _admin(build: Builder) -> httpx.AsyncClient:
    return await build.signed_in(await build.user(super_admin=True))


async def _clusters(build: Builder) -> int:
    async with build.sessions() as db:
        return int(await db.scalar(select(func.count()).select_from(Cluster)) or 0)


@pytest.mark.parametrize(
    ("kubeconfig", "says"),
    [
        ("a: " + "[" * 5000, "nested"),
        ("[" * 200_000, "nested"),
        ("- " * 3000 + "x", "nested"),
        ("x: &a [1]\ny: *a\nclusters: *a", "aliases"),
    ],
)
async def test_deep_or_aliased_yaml_is_refused(build: Builder, kubeconfig: str, says: str) -> None:
    response = await (await _admin(build)).post(
        CLUSTERS, json={"name": "deep", "kubeconfig": kubeconfig}
    )
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "invalid_kubeconfig"
    assert says in response.json()["error"]["message"]


async def test_a_server_url_longer_than_its_column_is_refused(build: Builder) -> None:
    async with scripted_apiserver() as server:
        server.answers[CRD_PATH] = CRD
        admin = await _admin(build)
        fits = "/" + "p" * (MAX_SERVER_LENGTH - len(f"https://127.0.0.1:{server.port}/"))
        too_long = fits + "q"
        response = await admin.post(
            CLUSTERS, json={"name": "long", "kubeconfig": server.kubeconfig(too_long)}
        )
        assert response.status_code == 422, response.text
        assert response.json()["error"]["code"] == "invalid_kubeconfig"
        assert str(MAX_SERVER_LENGTH) in response.json()["error"]["message"]
        assert await _clusters(build) == 0
        # One character less fits, and is registered.
        response = await admin.post(
            CLUSTERS, json={"name": "fits", "kubeconfig": server.kubeconfig(fits)}
        )
        assert response.status_code == 201, response.text
        assert len(response.json()["api_server"]) == MAX_SERVER_LENGTH


@pytest.mark.parametrize(
    "server",
    [
        "https://user:pw@10.0.0.1/",
        "https://10.0.0.1/?x=1",
        "https://10.0.0.1:99999/",
        "https://[::1/",
        "https://",
        "https://10.0.0.1/\u0085",
    ],
)
async def test_malformed_server_urls_are_refused(build: Builder, server: str) -> None:
    config = {
        "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
    }
    response = await (await _admin(build)).post(
        CLUSTERS, json={"name": "bad", "kubeconfig": json.dumps(config)}
    )
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "invalid_kubeconfig"


async def test_non_ascii_certificate_data_is_refused(build: Builder) -> None:
    config = {
        "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "clusters": [
            {
                "name": "c",
                "cluster": {"server": "https://10.0.0.1", "certificate-authority-data": "é"},
            }
        ],
        "users": [{"name": "u", "user": {"token": "t"}}],
    }
    response = await (await _admin(build)).post(
        CLUSTERS, json={"name": "bad", "kubeconfig": json.dumps(config)}
    )
    assert response.status_code == 422, response.text
    assert "base64" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition"}, "not a"),
        ({"spec": None}, "not a"),
        ({"spec": "yes"}, "not a"),
        ([1, 2, 3], "not a"),
        ("a string", "not a"),
        ({"spec": {"group": ["gshare.io"]}}, "group"),
        ({"spec": {"group": "gshare.io", "names": "GShareSession"}}, "kind"),
        (
            {"spec": {"group": "gshare.io", "names": {"kind": "GShareSession"}, "versions": 7}},
            "version",
        ),
        (
            {
                "spec": {
                    "group": "gshare.io",
                    "names": {"kind": "GShareSession"},
                    "versions": [{"name": "v1alpha1", "served": "true"}, None],
                }
            },
            "version",
        ),
    ],
)
async def test_a_crd_answer_of_the_wrong_shape_is_a_missing_crd(
    build: Builder, answer: object, says: str
) -> None:
    async with scripted_apiserver() as server:
        server.answers[CRD_PATH] = answer
        response = await (await _admin(build)).post(
            CLUSTERS, json={"name": "odd", "kubeconfig": server.kubeconfig()}
        )
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "crd_missing"
    assert says in response.json()["error"]["message"]
    assert await _clusters(build) == 0


async def test_a_well_formed_crd_answer_registers(build: Builder) -> None:
    async with scripted_apiserver() as server:
        server.answers[CRD_PATH] = CRD
        response = await (await _admin(build)).post(
            CLUSTERS, json={"name": "fine", "kubeconfig": server.kubeconfig()}
        )
    assert response.status_code == 201, response.text
    assert response.json()["status"] == "connected"


@pytest.mark.parametrize(
    "secret",
    [
        {"metadata": ["not", "a", "mapping"]},
        {"metadata": {"annotations": "gshare.io/expires-at"}},
        {"metadata": {"annotations": {"gshare.io/expires-at": 5}}},
        [],
        "text",
    ],
)
async def test_a_token_secret_of_the_wrong_shape_reads_as_no_token(secret: object) -> None:
    """The worker then writes a fresh token rather than failing on the cluster's answer."""
    from gshare.clusters.kube import SYSTEM_NAMESPACE, TOKEN_SECRET, operator_token_state

    async with scripted_apiserver() as server:
        server.answers[f"/api/v1/namespaces/{SYSTEM_NAMESPACE}/secrets/{TOKEN_SECRET}"] = secret
        config = parse_kubeconfig(server.kubeconfig())
        held = await operator_token_state(config)
        assert held.expires_at is None
        assert held.key_id is None


async def test_the_local_clusters_name_can_be_neither_registered_nor_removed(
    build: Builder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker keeps the cluster the control plane runs in registered under its name: a
    registration by hand under that name would have its credentials replaced, and a removal
    would be undone minutes later under a new id."""
    settings = build.app.state.settings
    monkeypatch.setattr(
        build.app.state, "settings", settings.model_copy(update={"local_cluster": "local"})
    )
    admin = await _admin(build)
    async with scripted_apiserver() as server:
        server.answers[CRD_PATH] = CRD
        taken = await admin.post(
            CLUSTERS, json={"name": "local", "kubeconfig": server.kubeconfig()}
        )
        other = await admin.post(
            CLUSTERS, json={"name": "elsewhere", "kubeconfig": server.kubeconfig()}
        )
    assert taken.status_code == 409, taken.text
    assert taken.json()["error"]["code"] == "local_cluster_kept"
    assert other.status_code == 201, other.text

    local = await build.cluster(name="local")
    refused = await admin.delete(f"{CLUSTERS}/{local.id}")
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "local_cluster_kept"
    removed = await admin.delete(f"{CLUSTERS}/{other.json()['id']}")
    assert removed.status_code == 204
