"""The operator against a real API server: children, pause and resume, restarts, deletion."""

from __future__ import annotations

import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from gshare.clusters.models import Cluster as ClusterRow
from gshare.devcluster import ROOT, Cluster
from gshare.operator import manifests
from gshare.operator.manifests import OperatorConfig
from gshare.operator.spec import spec_of
from tests.eventually import eventually, eventually_sync
from tests.kube import chart
from tests.processes import clean_env, start_api, start_worker, stop

NAMESPACE = "gshare-ops"
SESSIONS = f"/apis/gshare.io/v1alpha1/namespaces/{NAMESPACE}/gsharesessions"


def _start_operator(
    kube: Cluster, log: Path, kubeconfig: Path | None = None
) -> subprocess.Popen[bytes]:
    env = clean_env()
    env |= {
        "KUBECONFIG": str(kubeconfig or kube.kubeconfig),
        "GSHARE_OPERATOR_NAMESPACE": NAMESPACE,
        "PYTHONPATH": str(ROOT / "src"),
    }
    out = log.open("ab")
    return subprocess.Popen(
        [sys.executable, "-m", "gshare", "operator"],
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        cwd=log.parent,
    )


@pytest.fixture
def operator(kube: Cluster, tmp_path: Path) -> Iterator[dict[str, Any]]:
    kube.install_crd()
    kube.create_namespace(NAMESPACE)
    state: dict[str, Any] = {"log": tmp_path / "operator.log"}
    state["proc"] = _start_operator(kube, state["log"])
    yield state
    state["proc"].send_signal(signal.SIGTERM)
    try:
        state["proc"].wait(20)
    except subprocess.TimeoutExpired:
        state["proc"].kill()


def _session(desired: str = "Running") -> dict[str, Any]:
    session_id = str(uuid.uuid4())
    return {
        "apiVersion": "gshare.io/v1alpha1",
        "kind": "GShareSession",
        "metadata": {"name": f"session-{session_id}"},
        "spec": {
            "sessionId": session_id,
            "ownerId": str(uuid.uuid4()),
            "sessionType": "jupyterlab",
            "image": "registry.example/gshare/jupyterlab:1",
            "cpuMillicores": 1000,
            "memoryMiB": 2048,
            "desiredState": desired,
            "gpu": {
                "node": "gpu-0",
                "cardUUID": "GPU-gpu0-01-a100",
                "vramMiB": 20480,
                "coresPercent": 25,
            },
            "volumes": [
                {"name": "home", "kind": "home", "mountPath": "/home/gshare", "sizeGiB": 5}
            ],
        },
    }


def _children(client: httpx.Client, name: str) -> dict[str, int]:
    found = {}
    for kind, path in (
        ("Pod", f"/api/v1/namespaces/{NAMESPACE}/pods/{name}"),
        ("Service", f"/api/v1/namespaces/{NAMESPACE}/services/{name}"),
        ("Ingress", f"/apis/networking.k8s.io/v1/namespaces/{NAMESPACE}/ingresses/{name}"),
        (
            "NetworkPolicy",
            f"/apis/networking.k8s.io/v1/namespaces/{NAMESPACE}/networkpolicies/{name}",
        ),
        (
            "PersistentVolumeClaim",
            f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims/"
            f"home-{name.removeprefix('session-')}",
        ),
    ):
        response = client.get(path)
        if response.status_code == 200 and not response.json()["metadata"].get("deletionTimestamp"):
            found[kind] = 1
    return found


ALL = {"Pod", "Service", "Ingress", "NetworkPolicy", "PersistentVolumeClaim"}


def _handled_since(log: Path, offset: int) -> int:
    """How many resources the operator has finished handling, as its log past `offset` says."""
    with log.open("rb") as said:
        said.seek(offset)
        return said.read().count(b" is processed: ")


def _status_when(client: httpx.Client, name: str, phase: str) -> dict[str, Any] | None:
    status = client.get(f"{SESSIONS}/{name}").json().get("status") or {}
    return status if status.get("phase") == phase else None


def test_a_session_becomes_its_children_and_pauses_and_resumes(
    kube: Cluster, operator: dict[str, Any]
) -> None:
    body = _session()
    name = body["metadata"]["name"]
    with kube.client() as client:
        assert client.post(SESSIONS, json=body).status_code == 201
        eventually_sync(lambda: set(_children(client, name)) == ALL, "every child", timeout=60)
        pod = client.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}").json()
        assert pod["metadata"]["annotations"]["nvidia.com/use-gpuuuid"] == "GPU-gpu0-01-a100"
        assert pod["metadata"]["ownerReferences"][0]["kind"] == "GShareSession"
        status = eventually_sync(
            lambda: _status_when(client, name, "Running"), "the Running phase", timeout=60
        )
        # The phase follows the pod (kwok marks it ready); the page is served on its own host.
        assert status["url"] == f"https://{body['spec']['sessionId']}.sessions.gshare.local/"
        assert status["podName"] == name
        assert status["observedGeneration"] == 1

        merge = {"Content-Type": "application/merge-patch+json"}
        client.patch(
            f"{SESSIONS}/{name}", json={"spec": {"desiredState": "Paused"}}, headers=merge
        ).raise_for_status()
        eventually_sync(
            lambda: set(_children(client, name)) == {"PersistentVolumeClaim"},
            "only the volume while paused",
            timeout=60,
        )
        paused = eventually_sync(lambda: _status_when(client, name, "Paused"), "Paused", timeout=60)
        assert (paused["url"], paused["podName"], paused["observedGeneration"]) == ("", "", 2)
        client.patch(
            f"{SESSIONS}/{name}", json={"spec": {"desiredState": "Running"}}, headers=merge
        ).raise_for_status()
        eventually_sync(
            lambda: set(_children(client, name)) == ALL, "children on resume", timeout=60
        )


def test_a_spec_moved_to_another_card_gets_a_pod_of_its_own(
    kube: Cluster, operator: dict[str, Any]
) -> None:
    """Paused and resumed onto another card so quickly that the pause never reached the
    cluster: the old pod cannot become the new one (a pod's card and limits are fixed), so it
    is deleted, the status never calls it the new spec's, and once it is gone the pod the new
    spec wants is made."""
    body = _session()
    body["spec"]["revision"] = 1
    name = body["metadata"]["name"]
    pod_path = f"/api/v1/namespaces/{NAMESPACE}/pods/{name}"
    merge = {"Content-Type": "application/merge-patch+json"}
    with kube.client() as client:
        assert client.post(SESSIONS, json=body).status_code == 201
        eventually_sync(
            lambda: _status_when(client, name, "Running"), "the Running phase", timeout=60
        )
        first_uid = client.get(pod_path).json()["metadata"]["uid"]
        gpu = {"node": "gpu-0", "cardUUID": "GPU-gpu0-02-a100", "vramMiB": 40960}
        client.patch(
            f"{SESSIONS}/{name}",
            json={"spec": {"desiredState": "Running", "revision": 3, "gpu": gpu}},
            headers=merge,
        ).raise_for_status()

        def running() -> dict[str, Any] | None:
            status = _status_when(client, name, "Running")
            return status if status and status.get("observedRevision") == 3 else None

        eventually_sync(running, "revision 3 running", timeout=60)
        pod = client.get(pod_path).json()
        assert pod["metadata"]["uid"] != first_uid
        assert pod["metadata"]["annotations"]["nvidia.com/use-gpuuuid"] == "GPU-gpu0-02-a100"
        limits = pod["spec"]["containers"][0]["resources"]["limits"]
        assert limits["nvidia.com/gpumem"] == "40960"


def _pod_event(pod: dict[str, Any], reason: str, message: str, type: str) -> dict[str, Any]:
    """An event about `pod`, as the kubelet would write it."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    meta = pod["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:12]}", "namespace": NAMESPACE},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": meta["name"],
            "namespace": NAMESPACE,
            "uid": meta["uid"],
        },
        "reason": reason,
        "message": message,
        "type": type,
        "count": 2,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "source": {"component": "kubelet", "host": "gpu-0"},
    }


def test_the_status_carries_the_start_up_steps_from_the_pod_and_its_events(
    kube: Cluster, operator: dict[str, Any]
) -> None:
    """kwok marks the pod scheduled, started and ready; events the kubelet would write (created
    here through the API) add the image's size and the warning that explains a stuck start."""
    body = _session()
    name = body["metadata"]["name"]
    with kube.client() as client:
        assert client.post(SESSIONS, json=body).status_code == 201
        status = eventually_sync(
            lambda: _status_when(client, name, "Running"), "the Running phase", timeout=60
        )
        steps = eventually_sync(
            lambda: (
                (s := (_status_when(client, name, "Running") or {}).get("startupSteps"))
                and {"allocated", "scheduled", "started", "ready"} <= {x["step"] for x in s}
                and s
            ),
            "the steps of a start",
            timeout=60,
        )
        assert steps[0]["step"] == "allocated"
        assert steps[0]["message"] == "GPU-gpu0-01-a100"
        assert status["podName"] == name
        pod = client.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}").json()
        events = f"/api/v1/namespaces/{NAMESPACE}/events"
        for reason, message, kind in (
            ("Pulled", 'Successfully pulled image "x" in 2s. Image size: 123456 bytes.', "Normal"),
            ("FailedMount", 'MountVolume.SetUp failed for volume "home"', "Warning"),
        ):
            made = client.post(events, json=_pod_event(pod, reason, message, kind))
            assert made.status_code == 201, made.text

        def told() -> dict[str, dict[str, Any]] | None:
            said = (client.get(f"{SESSIONS}/{name}").json().get("status") or {}).get(
                "startupSteps"
            ) or []
            by = {x["reason"] if x["step"] == "warning" else x["step"]: x for x in said}
            return by if {"pulled", "FailedMount"} <= set(by) else None

        found = eventually_sync(told, "the events in the steps", timeout=60)
        assert found["pulled"]["imageSizeBytes"] == 123456
        assert found["FailedMount"]["count"] == 2
        assert found["FailedMount"]["message"].startswith("MountVolume.SetUp failed")


def test_the_operator_needs_no_more_than_the_charts_rbac(kube: Cluster, tmp_path: Path) -> None:
    """Run as the chart's gshare-operator service account: a session still becomes its
    children and runs, and nothing the operator does is forbidden."""
    kube.install_crd()
    kube.create_namespace(NAMESPACE)
    kube.create_namespace("gshare-system", enforce="baseline")
    rendered = chart.identities(f"namespaces.sessions={NAMESPACE}")
    chart.install(kube, [o for o in rendered if "operator" in o["metadata"]["name"]])
    identity = chart.kubeconfig_of(kube, "gshare-operator", tmp_path / "operator.kubeconfig")
    log = tmp_path / "operator.log"
    proc = _start_operator(kube, log, kubeconfig=identity)
    body = _session()
    name = body["metadata"]["name"]
    try:
        with kube.client() as client:
            assert client.post(SESSIONS, json=body).status_code == 201
            eventually_sync(lambda: set(_children(client, name)) == ALL, "every child", timeout=60)
            eventually_sync(
                lambda: _status_when(client, name, "Running"), "the Running phase", timeout=60
            )
            assert client.delete(f"{SESSIONS}/{name}").status_code == 200
            eventually_sync(
                lambda: not _children(client, name), "the children collected", timeout=60
            )
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
    said = log.read_text()
    assert "forbidden" not in said.lower(), said[-3000:]


def test_a_restarted_operator_creates_no_duplicates_and_deletion_collects_children(
    kube: Cluster, operator: dict[str, Any]
) -> None:
    body = _session()
    name = body["metadata"]["name"]
    with kube.client() as client:
        client.post(SESSIONS, json=body).raise_for_status()
        eventually_sync(lambda: set(_children(client, name)) == ALL, "every child", timeout=60)
        operator["proc"].send_signal(signal.SIGKILL)  # killed mid-flight, restarted
        operator["proc"].wait()
        resources = [
            item
            for item in client.get(SESSIONS).json()["items"]
            if not item["metadata"].get("deletionTimestamp")
        ]
        log_before = operator["log"].stat().st_size
        operator["proc"] = _start_operator(kube, operator["log"])
        eventually_sync(
            lambda: _handled_since(operator["log"], log_before) >= len(resources),
            f"the new operator to resume all {len(resources)} resources",
            timeout=60,
        )
        selector = f"gshare.io/session={body['spec']['sessionId']}"
        pods = client.get(
            f"/api/v1/namespaces/{NAMESPACE}/pods", params={"labelSelector": selector}
        ).json()["items"]
        assert len(pods) == 1
        client.delete(f"{SESSIONS}/{name}").raise_for_status()
        eventually_sync(
            lambda: client.get(f"{SESSIONS}/{name}").status_code == 404,
            "the resource to go",
            timeout=60,
        )
        eventually_sync(
            lambda: not _children(client, name),
            "garbage collection of the children",
            timeout=90,
        )


async def registered(kube: Cluster, sessions, store, now: datetime) -> ClusterRow:
    """`kube` as a connected cluster of the registry, its kubeconfig in `store`."""
    cluster = ClusterRow(
        id=uuid.uuid4(),
        name=f"lab-{uuid.uuid4().hex[:6]}",
        api_server=kube.server,
        status="connected",
        status_message="",
        inventory_sequence=0,
        created_at=now,
    )
    async with sessions() as db, db.begin():
        db.add(cluster)
    await store.put(cluster.id, kube.embedded_kubeconfig())
    return cluster


@asynccontextmanager
async def _reporting(
    kube: Cluster,
    database_url: str,
    sessions,
    tmp_path: Path,
    *,
    worker: bool = False,
    operator_env: dict[str, str] | Callable[[str], dict[str, str]] | None = None,
    worker_env: dict[str, str] | None = None,
    operator: OperatorProcess | None = None,
) -> AsyncIterator[tuple[uuid.UUID, str]]:
    """A registered cluster, a real API process and an operator that reports to it with a
    token of the API's own key set; with `worker`, a worker process too, which applies
    sessions to the cluster with its stored kubeconfig. Yields the cluster's id and the API's
    URL. `operator_env` may be a function of the API's URL. With `operator`, a test can kill
    the operator process and start another with the same settings; the last one is stopped
    at the end."""
    from gshare.clusters.keystore import FileKeyStore, load_or_create
    from gshare.clusters.kubeconfigs import FileKubeconfigStore

    data_dir = tmp_path / "api-data"
    data_dir.mkdir()
    now = datetime.now(UTC)
    cluster = await registered(kube, sessions, FileKubeconfigStore(data_dir / "clusters"), now)
    keys = await load_or_create(FileKeyStore(data_dir / "internal-keys.json"), now)  # the API's
    token_file = tmp_path / "token"
    token_file.write_text(keys.mint(str(cluster.id), now))
    api, base = start_api(database_url, data_dir)
    procs = [api]
    if worker:
        procs.append(
            start_worker(
                database_url,
                data_dir,
                GSHARE_SESSIONS_NAMESPACE=NAMESPACE,
                GSHARE_METERING_INTERVAL_SECONDS="1",
                GSHARE_SESSION_APPLY_INTERVAL_SECONDS="1",
                **(worker_env or {}),
            )
        )
    env = clean_env()
    env |= {
        "KUBECONFIG": str(kube.kubeconfig),
        "GSHARE_OPERATOR_NAMESPACE": NAMESPACE,
        "GSHARE_OPERATOR_API_URL": base,
        "GSHARE_OPERATOR_CLUSTER_ID": str(cluster.id),
        "GSHARE_OPERATOR_TOKEN_FILE": str(token_file),
        **((operator_env(base) if callable(operator_env) else operator_env) or {}),
    }
    log = (tmp_path / "operator.log").open("ab")

    def start_operator() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-m", "gshare", "operator"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
        )

    running = operator if operator is not None else OperatorProcess()
    running.start = start_operator
    running.restart()
    try:
        yield cluster.id, base
    finally:
        assert running.process is not None
        stop(running.process, *procs)


@dataclass
class OperatorProcess:
    """The operator process `_reporting` runs, which a test may kill and start again."""

    start: Callable[[], subprocess.Popen[bytes]] | None = None
    process: subprocess.Popen[bytes] | None = None

    def restart(self) -> None:
        assert self.start is not None
        self.process = self.start()


async def test_the_operator_reports_hamis_inventory_to_the_api(
    kube: Cluster, database_url: str, sessions, tmp_path: Path
) -> None:
    from sqlalchemy import select

    from gshare.capacity.models import GpuCard

    async def cards() -> dict[str, tuple[str, bool]]:
        async with sessions() as db:
            rows = (await db.scalars(select(GpuCard))).all()
        return {r.uuid: (r.node, r.healthy) for r in rows}

    async with _reporting(kube, database_url, sessions, tmp_path):

        async def every_card() -> dict[str, tuple[str, bool]]:
            found = await cards()
            return found if len(found) >= 8 else {}

        found = await eventually(every_card, "eight cards in the inventory", timeout=60)
        assert len(found) == 8, found
        assert found["GPU-gpu1-03-a100"] == ("gpu-1", True)
        # A card turns unhealthy on a node: the next report says so.
        with kube.client() as client:
            node = client.get("/api/v1/nodes/gpu-0").json()
            value = node["metadata"]["annotations"]["hami.io/node-nvidia-register"]
            broken = value.replace(
                "GPU-gpu0-00-a100,10,81920,100,NVIDIA-A100-SXM4-80GB,0,true",
                "GPU-gpu0-00-a100,10,81920,100,NVIDIA-A100-SXM4-80GB,0,false",
            )
            client.patch(
                "/api/v1/nodes/gpu-0",
                json={"metadata": {"annotations": {"hami.io/node-nvidia-register": broken}}},
                headers={"Content-Type": "application/merge-patch+json"},
            ).raise_for_status()

        async def card_unhealthy() -> bool:
            return not (await cards())["GPU-gpu0-00-a100"][1]

        await eventually(card_unhealthy, "the unhealthy card reported", timeout=30)
        assert (await cards())["GPU-gpu0-00-a100"] == ("gpu-0", False)
        # put it back for the other tests
        with kube.client() as client:
            client.patch(
                "/api/v1/nodes/gpu-0",
                json={"metadata": {"annotations": {"hami.io/node-nvidia-register": value}}},
                headers={"Content-Type": "application/merge-patch+json"},
            ).raise_for_status()


async def test_the_operator_reports_each_sessions_status_to_the_api(
    kube: Cluster, operator: dict[str, Any], database_url: str, sessions, tmp_path: Path
) -> None:
    """The phase follows the pod; the API stores what the session's own cluster reports."""
    from gshare.identity.models import User
    from gshare.sessions.models import InteractiveSession

    operator["proc"].terminate()  # this test runs an operator that reports to an API
    operator["proc"].wait(20)
    async with _reporting(kube, database_url, sessions, tmp_path) as (cluster_id, _):
        body = _session()
        session_id = uuid.UUID(body["spec"]["sessionId"])
        now = datetime.now(UTC)
        async with sessions() as db, db.begin():
            owner = User(
                id=uuid.UUID(body["spec"]["ownerId"]),
                email=f"{session_id}@example.org",
                name="Owner",
                password_hash="x",
                must_change_password=False,
                is_super_admin=False,
                active=True,
                created_at=now,
                password_changed_at=now,
            )
            db.add(owner)
            await db.flush()
            db.add(
                InteractiveSession(
                    id=session_id,
                    owner_id=owner.id,
                    session_type="jupyterlab",
                    cluster_id=cluster_id,
                    desired_state="Running",
                    created_at=now,
                    phase="Pending",
                    phase_message="",
                    observed_generation=0,
                    status_sequence=0,
                )
            )

        async def stored() -> tuple[str, int]:
            async with sessions() as db:
                row = await db.get(InteractiveSession, session_id)
                assert row is not None
                return row.phase, row.observed_generation

        async def until(phase: str, generation: int) -> tuple[str, int]:
            # A pod event can refresh the status before the reconcile that caused it records its
            # generation, so the phase may first arrive with the previous generation.
            async def stored_now() -> tuple[str, int] | None:
                found = await stored()
                return found if found == (phase, generation) else None

            return await eventually(
                stored_now, f"the API to store {phase} of generation {generation}", timeout=60
            )

        name = body["metadata"]["name"]
        with kube.client() as client:
            client.post(SESSIONS, json=body).raise_for_status()
            assert await until("Running", 1) == ("Running", 1)
            client.patch(
                f"{SESSIONS}/{name}",
                json={"spec": {"desiredState": "Paused"}},
                headers={"Content-Type": "application/merge-patch+json"},
            ).raise_for_status()
            assert await until("Paused", 2) == ("Paused", 2)
            client.delete(f"{SESSIONS}/{name}")


def test_two_clusters_each_with_its_operator(
    kube: Cluster, second_kube: Cluster, tmp_path: Path
) -> None:
    """Each operator serves only its own cluster's sessions."""
    procs = []
    try:
        for cluster, folder in ((kube, "a"), (second_kube, "b")):
            cluster.install_crd()
            cluster.create_namespace(NAMESPACE)
            (tmp_path / folder).mkdir()
            procs.append(_start_operator(cluster, tmp_path / folder / "operator.log"))
        first, second = _session(), _session()
        with kube.client() as a, second_kube.client() as b:
            a.post(SESSIONS, json=first).raise_for_status()
            b.post(SESSIONS, json=second).raise_for_status()
            eventually_sync(
                lambda: set(_children(a, first["metadata"]["name"])) == ALL,
                "the first cluster's children",
                timeout=60,
            )
            eventually_sync(
                lambda: set(_children(b, second["metadata"]["name"])) == ALL,
                "the second cluster's children",
                timeout=60,
            )
            assert _children(a, second["metadata"]["name"]) == {}
            assert _children(b, first["metadata"]["name"]) == {}
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()


def test_a_pod_outside_its_isolation_level_is_recorded_and_remade_at_its_level(
    kube: Cluster, operator: dict[str, Any]
) -> None:
    """A pod made by hand in a user-namespaced session's place, sharing the node's user ids
    and without the operator's stamp: the operator deletes it, says why in the status, and
    makes the session's own pod, in a user namespace."""
    body = _session()
    body["spec"]["isolation"] = {"level": "user-namespaced", "userNamespaces": True}
    name = body["metadata"]["name"]
    pod_path = f"/api/v1/namespaces/{NAMESPACE}/pods/{name}"
    by_hand = manifests.pod(
        spec_of({**body["spec"], "isolation": None}),
        OperatorConfig(namespace=NAMESPACE),
        manifests.owner_reference(name, str(uuid.uuid4())),
    )
    by_hand["metadata"].pop("ownerReferences")
    by_hand["metadata"]["annotations"].pop(manifests.POD_HASH)
    with kube.client() as client:
        made = client.post(f"/api/v1/namespaces/{NAMESPACE}/pods", json=by_hand)
        assert made.status_code == 201, made.text
        hand_uid = made.json()["metadata"]["uid"]
        assert client.post(SESSIONS, json=body).status_code == 201

        def drift() -> dict[str, Any] | None:
            status = client.get(f"{SESSIONS}/{name}").json().get("status") or {}
            return status.get("isolationDrift")

        recorded = eventually_sync(drift, "the drift in the status", timeout=60)
        assert recorded["pod"] == hand_uid
        assert "hostUsers" in recorded["reason"]
        assert datetime.fromisoformat(recorded["at"]) <= datetime.now(UTC)

        def remade() -> dict[str, Any] | None:
            found = client.get(pod_path)
            if found.status_code != 200:
                return None
            pod = found.json()
            return pod if pod["metadata"]["uid"] != hand_uid else None

        pod = eventually_sync(remade, "the pod remade", timeout=60)
        assert pod["spec"]["hostUsers"] is False
        assert pod["metadata"]["annotations"]["gshare.io/isolation"] == "user-namespaced"
        eventually_sync(
            lambda: _status_when(client, name, "Running"), "the Running phase", timeout=60
        )
        # The drift stays in the status once the pod is replaced, for the report to carry.
        assert drift() == recorded


def test_a_shared_session_on_a_node_dedicated_to_a_tenant_is_drift(
    kube: Cluster, operator: dict[str, Any]
) -> None:
    """The node a shared session's pod runs on is given to a tenant: the pod is outside its
    level, so it goes, and the status says so; once the node is nobody's, the pod runs."""
    body = _session()
    body["spec"]["gpu"] = {"node": "gpu-1", "cardUUID": "GPU-gpu1-03-a100", "vramMiB": 10240}
    name = body["metadata"]["name"]
    node_path = "/api/v1/nodes/gpu-1"
    merge = {"Content-Type": "application/merge-patch+json"}
    tenant = str(uuid.uuid4())
    with kube.client() as client:
        assert client.post(SESSIONS, json=body).status_code == 201
        eventually_sync(
            lambda: _status_when(client, name, "Running"), "the Running phase", timeout=60
        )
        first_uid = client.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}").json()["metadata"][
            "uid"
        ]
        labels = {"metadata": {"labels": {manifests.DEDICATED_KEY: tenant}}}
        client.patch(node_path, json=labels, headers=merge).raise_for_status()
        try:

            def drift() -> dict[str, Any] | None:
                # An event about the pod makes the operator look at it again (the node's
                # labels it read last may be a few seconds old).
                pod = client.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}").json()
                if pod.get("metadata", {}).get("uid") == first_uid:
                    event = _pod_event(pod, "Pulled", "Successfully pulled image", "Normal")
                    client.post(f"/api/v1/namespaces/{NAMESPACE}/events", json=event)
                status = client.get(f"{SESSIONS}/{name}").json().get("status") or {}
                return status.get("isolationDrift")

            recorded = eventually_sync(drift, "the drift in the status", timeout=60, interval=1)
        finally:
            unlabel = {"metadata": {"labels": {manifests.DEDICATED_KEY: None}}}
            client.patch(node_path, json=unlabel, headers=merge).raise_for_status()
        # The node stays dedicated while its pods are remade there: a remade pod may be the one
        # recorded, since a newer drift replaces an older one.
        assert recorded["node"] == "gpu-1"
        assert recorded["pod"]
        assert "dedicated" in recorded["reason"]

        def running_anew() -> dict[str, Any] | None:
            status = _status_when(client, name, "Running")
            pod = client.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}").json()
            return status if status and pod["metadata"]["uid"] != first_uid else None

        eventually_sync(running_anew, "a new pod running", timeout=60)
