"""Registering clusters against real API servers: what is checked, where the kubeconfig goes."""

from __future__ import annotations

import json
import socket
import stat
from datetime import UTC, datetime, timedelta

import yaml
from sqlalchemy import text

from gshare.clusters.kube import parse_kubeconfig
from gshare.clusters.kubeconfigs import FileKubeconfigStore
from gshare.clusters.tasks import forget_removed_kubeconfigs
from gshare.devcluster import Cluster
from gshare.kit.settings import Settings
from tests.builders import Builder

CLUSTERS = "/api/v1/clusters"


async def test_registration_checks_the_cluster_and_keeps_the_kubeconfig_out_of_the_database(
    build: Builder, kube: Cluster, second_kube: Cluster, settings: Settings, sessions
) -> None:
    admin = await build.signed_in(await build.user(super_admin=True))
    kubeconfig = second_kube.embedded_kubeconfig()
    missing = await admin.post(CLUSTERS, json={"name": "second", "kubeconfig": kubeconfig})
    assert missing.status_code == 422
    assert missing.json()["error"]["code"] == "crd_missing"
    assert "gsharesessions.gshare.io" in missing.json()["error"]["message"]

    second_kube.install_crd()
    kube.install_crd()
    first = await admin.post(
        CLUSTERS, json={"name": "first", "kubeconfig": kube.embedded_kubeconfig()}
    )
    second = await admin.post(CLUSTERS, json={"name": "second", "kubeconfig": kubeconfig})
    assert first.status_code == second.status_code == 201, (first.text, second.text)
    assert second.json()["api_server"] == second_kube.server
    assert second.json()["status"] == "connected"
    again = await admin.post(CLUSTERS, json={"name": "second", "kubeconfig": kubeconfig})
    assert again.status_code == 409

    stored = settings.data_dir / "clusters" / f"{second.json()['id']}.kubeconfig"
    # Only what was checked is kept: the current context's server and embedded credentials.
    assert yaml.safe_load(stored.read_text()) == parse_kubeconfig(kubeconfig)
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    async with sessions() as db:
        rows = (await db.execute(text("SELECT * FROM clusters"))).mappings().all()
    assert len(rows) == 2
    client_key = json.loads(kubeconfig)["users"][0]["user"]["client-key-data"]
    assert all(client_key not in str(dict(row)) for row in rows)

    listed = (await admin.get(CLUSTERS)).json()["items"]
    assert [c["name"] for c in listed] == ["first", "second"]
    removed = await admin.delete(f"{CLUSTERS}/{second.json()['id']}")
    assert removed.status_code == 204
    # The worker, not the API, deletes the kubeconfig of a removed cluster: once a registration
    # still being committed could not be its owner any more.
    store = FileKubeconfigStore(settings.data_dir / "clusters")
    assert await forget_removed_kubeconfigs(sessions, store, datetime.now(UTC)) == 0
    assert stored.exists()
    later = datetime.now(UTC) + timedelta(minutes=11)  # files are stamped by the wall clock
    assert await forget_removed_kubeconfigs(sessions, store, later) == 1
    assert not stored.exists()
    assert (settings.data_dir / "clusters" / f"{first.json()['id']}.kubeconfig").exists()


async def test_unreachable_and_unusable_kubeconfigs_are_refused_clearly(
    build: Builder, kube: Cluster
) -> None:
    admin = await build.signed_in(await build.user(super_admin=True))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]
    config = json.loads(kube.embedded_kubeconfig())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{closed_port}"
    unreachable = await admin.post(
        CLUSTERS, json={"name": "gone", "kubeconfig": json.dumps(config)}
    )
    assert unreachable.status_code == 422
    assert unreachable.json()["error"]["code"] == "cluster_unreachable"
    files = kube.kubeconfig.read_text()  # points at certificate files on this machine
    with_files = await admin.post(CLUSTERS, json={"name": "files", "kubeconfig": files})
    assert with_files.status_code == 422
    assert with_files.json()["error"]["code"] == "invalid_kubeconfig"
    garbage = await admin.post(CLUSTERS, json={"name": "junk", "kubeconfig": "{:"})
    assert garbage.json()["error"]["code"] == "invalid_kubeconfig"
    assert (await admin.get(CLUSTERS)).json()["items"] == []


async def test_sessions_are_applied_with_server_side_apply_idempotently(kube: Cluster) -> None:
    import uuid as uuid_module

    from gshare.clusters.kube import apply_session, parse_kubeconfig

    kube.install_crd()
    with kube.client() as client:
        client.post(
            "/api/v1/namespaces",
            json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gshare-sessions"}},
        )
    session_id = str(uuid_module.uuid4())
    body = {
        "apiVersion": "gshare.io/v1alpha1",
        "kind": "GShareSession",
        "metadata": {"name": f"session-{session_id}", "namespace": "gshare-sessions"},
        "spec": {
            "sessionId": session_id,
            "ownerId": str(uuid_module.uuid4()),
            "sessionType": "vscode",
            "image": "img:1",
            "cpuMillicores": 500,
            "memoryMiB": 1024,
            "desiredState": "Running",
        },
    }
    config = parse_kubeconfig(kube.embedded_kubeconfig())
    await apply_session(config, "gshare-sessions", body)
    await apply_session(config, "gshare-sessions", body)  # the same again changes nothing
    path = (
        f"/apis/gshare.io/v1alpha1/namespaces/gshare-sessions/gsharesessions/session-{session_id}"
    )
    with kube.client() as client:
        first = client.get(path).json()
    assert first["metadata"]["generation"] == 1
    body["spec"]["desiredState"] = "Paused"
    await apply_session(config, "gshare-sessions", body)
    with kube.client() as client:
        paused = client.get(path).json()
    assert paused["spec"]["desiredState"] == "Paused"
    assert paused["metadata"]["generation"] == 2
    managers = {m["manager"] for m in paused["metadata"]["managedFields"]}
    assert "gshare-api" in managers
