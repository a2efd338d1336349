"""The internal key set kept in a Secret, shared by API replicas and the worker in Kubernetes."""

from __future__ import annotations

import asyncio
import base64
from datetime import UTC, datetime, timedelta

import pytest
from kubernetes_asyncio import client, config

from gshare.clusters.keystore import (
    SECRET_KEY,
    SECRET_NAME,
    KeyRing,
    KeyStoreError,
    SecretKeyStore,
    load_or_create,
    rotate_if_due,
)
from gshare.clusters.kube import parse_kubeconfig
from gshare.devcluster import Cluster

START = datetime(2026, 1, 1, tzinfo=UTC)
SECRET = f"/api/v1/namespaces/gshare-secrets/secrets/{SECRET_NAME}"


def _stores(kube: Cluster, count: int) -> list[SecretKeyStore]:
    """One store per process, as in production (each with the service account's identity)."""
    home = parse_kubeconfig(kube.embedded_kubeconfig())

    async def configuration() -> client.Configuration:
        loaded = client.Configuration()
        await config.load_kube_config_from_dict(home, client_configuration=loaded)
        return loaded

    return [SecretKeyStore(configuration) for _ in range(count)]


@pytest.fixture
def fresh_secret(kube: Cluster) -> Cluster:
    kube.create_namespace("gshare-secrets")
    with kube.client() as http:
        http.delete(SECRET)
    return kube


async def test_replicas_starting_together_make_one_key_set(fresh_secret: Cluster) -> None:
    stores = _stores(fresh_secret, 6)
    made = await asyncio.gather(*(load_or_create(s, START) for s in stores))
    assert len({keys.current.kid for keys in made}) == 1
    with fresh_secret.client() as http:
        secret = http.get(SECRET).json()
    assert secret["type"] == "Opaque"
    assert "private_pem" in base64.b64decode(secret["data"][SECRET_KEY]).decode()


async def test_concurrent_rotations_rotate_once_and_keep_the_secrets_other_parts(
    fresh_secret: Cluster,
) -> None:
    stores = _stores(fresh_secret, 4)
    first = await load_or_create(stores[0], START)
    with fresh_secret.client() as http:  # what an administrator or Helm may have added
        patched = http.patch(
            SECRET,
            json={"metadata": {"annotations": {"team": "platform"}}, "stringData": {"x": "1"}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert patched.status_code == 200, patched.text
    due = START + timedelta(days=30)
    rotated = await asyncio.gather(*(rotate_if_due(s, due) for s in stores))
    assert sorted(rotated) == [False, False, False, True]
    after = await load_or_create(stores[1], due)
    assert after.current.kid != first.current.kid
    assert {k.kid for k in after.keys} == {first.current.kid, after.current.kid}
    with fresh_secret.client() as http:
        secret = http.get(SECRET).json()
    assert secret["metadata"]["annotations"]["team"] == "platform"
    assert base64.b64decode(secret["data"]["x"]) == b"1"

    # Another replica's ring learns of the new key from the first token it signs.
    ring = KeyRing(stores[2])
    # As it held the set, read two seconds before the rotation (its max_age is ten).
    ring._keys, ring._read_at = first, ring.monotonic() - 2
    token = after.mint("c1", due)
    keys = await ring.for_tokens([token], due)
    assert keys.verify(token, due) == "c1"


async def test_a_secret_that_holds_no_readable_key_set_is_a_clear_error(
    fresh_secret: Cluster,
) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SECRET_NAME, "namespace": "gshare-secrets"},
        "data": {SECRET_KEY: base64.b64encode(b'{"keys": "no"}').decode()},
    }
    with fresh_secret.client() as http:
        created = http.post("/api/v1/namespaces/gshare-secrets/secrets", json=body)
        assert created.status_code == 201, created.text
    with pytest.raises(KeyStoreError, match="gshare-secrets/gshare-internal-keys"):
        await load_or_create(_stores(fresh_secret, 1)[0], START)
    with fresh_secret.client() as http:  # left as it was, for a person to look at
        assert http.get(SECRET).json()["data"][SECRET_KEY] == body["data"][SECRET_KEY]
        http.delete(SECRET)
