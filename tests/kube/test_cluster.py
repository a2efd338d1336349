"""The test control plane itself, and what GShare asks of it: simulated GPU nodes that HAMi
registered, pods scheduled by the hami-scheduler profile, and the restricted Pod Security shape."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import httpx

from gshare.devcluster import Cluster
from gshare.operator.crd import session_crd
from gshare.operator.inventory import REGISTER_ANNOTATION, parse_register
from gshare.operator.manifests import (
    GpuAssignment,
    IsolationSpec,
    NetworkSpec,
    OperatorConfig,
    SessionSpec,
    Volume,
    children,
    network_policy,
    owner_reference,
)
from tests.eventually import eventually_sync


def _spec(node: str = "gpu-0", card: str = "GPU-gpu0-00-a100") -> SessionSpec:
    return SessionSpec(
        session_id=str(uuid.uuid4()),
        owner_id=str(uuid.uuid4()),
        session_type="jupyterlab",
        image="registry.example/gshare/jupyterlab:1",
        cpu_millicores=1000,
        memory_mib=2048,
        gpu=GpuAssignment(node=node, card_uuid=card, vram_mib=20480, cores_percent=25),
        volumes=(Volume(name="home", kind="home", mount_path="/home/gshare"),),
    )


def test_simulated_gpu_nodes_carry_hamis_registration(kube: Cluster) -> None:
    with kube.client() as client:
        nodes = client.get("/api/v1/nodes").json()["items"]
    assert sorted(n["metadata"]["name"] for n in nodes) == ["gpu-0", "gpu-1"]
    for node in nodes:
        inventory = parse_register(
            node["metadata"]["name"], node["metadata"]["annotations"][REGISTER_ANNOTATION]
        )
        assert len(inventory.cards) == 4
        assert node["status"]["allocatable"]["nvidia.com/gpu"] == "40"


RUNTIME_CLASS = "gshare-sandbox"
TENANT = str(uuid.uuid4())
LEVELS = {
    "shared": IsolationSpec(),
    "user-namespaced": IsolationSpec("user-namespaced", user_namespaces=True),
    "sandboxed": IsolationSpec("sandboxed", runtime_class=RUNTIME_CLASS),
    "dedicated": IsolationSpec("dedicated", dedicated_to=TENANT),
    "dedicated+sandboxed": IsolationSpec(
        "dedicated+sandboxed", runtime_class=RUNTIME_CLASS, dedicated_to=TENANT
    ),
    "dedicated+user-namespaced": IsolationSpec(
        "dedicated+user-namespaced", user_namespaces=True, dedicated_to=TENANT
    ),
}
NETWORKS = {
    "open": NetworkSpec(),
    "listed": NetworkSpec(
        "listed", ("10.0.0.0/8", "169.254.0.0/16", "100.64.0.0/10", "2001:db8::/32", "0.0.0.0/0")
    ),
    "none": NetworkSpec("none"),
}


def _runtime_class(client: httpx.Client) -> None:
    """A sandboxed runtime that runs on some nodes only, as RuntimeClasses for gVisor or Kata
    are set up."""
    body = {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": RUNTIME_CLASS},
        "handler": "runsc",
        "scheduling": {
            "nodeSelector": {"gshare.io/sandbox": "gvisor"},
            "tolerations": [
                {"key": "gshare.io/sandbox", "operator": "Exists", "effect": "NoSchedule"}
            ],
        },
    }
    response = client.post("/apis/node.k8s.io/v1/runtimeclasses", json=body)
    assert response.status_code in (201, 409), response.text


def test_generated_pods_pass_restricted_pod_security_with_no_warnings(kube: Cluster) -> None:
    """Every isolation level's pod and every egress mode's policy, dry run in a namespace that
    enforces the restricted Pod Security standard: accepted, with no warning."""
    config = OperatorConfig(namespace="gshare-sessions")
    with kube.client() as client:
        kube.create_namespace(config.namespace)
        _runtime_class(client)
        for level, isolation in LEVELS.items():
            spec = replace(_spec(), isolation=isolation)
            objects = children(spec, config, owner_reference("s", str(uuid.uuid4())))
            pod = next(o for o in objects if o["kind"] == "Pod")
            pod["metadata"].pop("ownerReferences")
            response = client.post(
                f"/api/v1/namespaces/{config.namespace}/pods?dryRun=All", json=pod
            )
            assert response.status_code == 201, (level, response.text)
            assert "warning" not in {k.lower() for k in response.headers}, (level, response.headers)
            made = response.json()["spec"]
            assert made.get("hostUsers", True) is not isolation.user_namespaces, level
            assert made.get("runtimeClassName") == isolation.runtime_class, level
        for mode, network in NETWORKS.items():
            spec = replace(_spec(), network=network)
            policy = network_policy(spec, config, owner_reference("s", str(uuid.uuid4())))
            policy["metadata"].pop("ownerReferences")
            response = client.post(
                f"/apis/networking.k8s.io/v1/namespaces/{config.namespace}/networkpolicies"
                "?dryRun=All",
                json=policy,
            )
            assert response.status_code == 201, (mode, response.text)
            assert "warning" not in {k.lower() for k in response.headers}, (mode, response.headers)
            assert response.json()["spec"]["policyTypes"] == ["Ingress", "Egress"]
            assert response.json()["spec"].get("egress", []) == policy["spec"]["egress"]


def test_a_hami_scheduled_pod_lands_on_its_node_and_runs(kube: Cluster) -> None:
    config = OperatorConfig(namespace="gshare-run")
    spec = _spec(node="gpu-1", card="GPU-gpu1-02-a100")
    with kube.client() as client:
        kube.create_namespace(config.namespace)
        pod = next(
            o for o in children(spec, config, owner_reference("s", "u")) if o["kind"] == "Pod"
        )
        pod["metadata"].pop("ownerReferences")
        pod["spec"]["volumes"] = [v for v in pod["spec"]["volumes"] if "emptyDir" in v]
        pod["spec"]["containers"][0]["volumeMounts"] = [
            m for m in pod["spec"]["containers"][0]["volumeMounts"] if m["name"] in ("tmp", "cache")
        ]
        created = client.post(f"/api/v1/namespaces/{config.namespace}/pods", json=pod)
        assert created.status_code == 201, created.text
        name = pod["metadata"]["name"]

        def running() -> dict[str, Any]:
            current: dict[str, Any] = client.get(
                f"/api/v1/namespaces/{config.namespace}/pods/{name}"
            ).json()
            return current if current.get("status", {}).get("phase") == "Running" else {}

        current = eventually_sync(running, "the pod to run", timeout=60, interval=0.3)
    assert current["status"]["phase"] == "Running", current["status"]
    assert current["spec"]["nodeName"] == "gpu-1"


def test_the_crd_is_accepted_and_validates(kube: Cluster) -> None:
    with kube.client() as client:
        response = client.post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=session_crd()
        )
        assert response.status_code in (201, 409), response.text

        def established() -> bool:
            crd = client.get(
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gsharesessions.gshare.io"
            ).json()
            conditions = {
                c["type"]: c["status"] for c in (crd.get("status") or {}).get("conditions") or []
            }
            return conditions.get("Established") == "True"

        eventually_sync(established, "the CRD to be established", timeout=30, interval=0.2)
        kube.create_namespace("gshare-crd")
        good = {
            "apiVersion": "gshare.io/v1alpha1",
            "kind": "GShareSession",
            "metadata": {"name": "s1"},
            "spec": {
                "sessionId": str(uuid.uuid4()),
                "ownerId": str(uuid.uuid4()),
                "sessionType": "terminal",
                "image": "img:1",
                "cpuMillicores": 500,
                "memoryMiB": 1024,
                "desiredState": "Running",
            },
        }
        path = "/apis/gshare.io/v1alpha1/namespaces/gshare-crd/gsharesessions"
        assert client.post(path, json=good).status_code == 201
        bad = {
            **good,
            "metadata": {"name": "s2"},
            "spec": {**good["spec"], "sessionType": "desktop", "cpuMillicores": 1},
        }
        refused = client.post(path, json=bad)
    assert refused.status_code == 422
    assert "sessionType" in refused.text


def test_every_waiting_claim_is_given_a_volume_of_its_own(kube: Cluster) -> None:
    """The demo's provisioner: however many claims, each gets a volume bound to it alone, of
    its size and class; a second pass makes none."""
    namespace = f"claims-{uuid.uuid4().hex[:8]}"
    kube.create_namespace(namespace)
    names = [f"home-{n}" for n in range(3)]
    path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    with kube.client() as client:
        for name in names:
            body = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": name},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    # A class no pre-made volume has: only a provisioned one can bind.
                    "storageClassName": "on-demand",
                    "resources": {"requests": {"storage": f"{len(name)}Gi"}},
                },
            }
            answer = client.post(
                f"/api/v1/namespaces/{namespace}/persistentvolumeclaims", json=body
            )
            answer.raise_for_status()
        assert kube.provision_claims(client, namespace) == 3
        path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"

        def bound() -> bool:
            claims = client.get(path).json()["items"]
            return all(c.get("status", {}).get("phase") == "Bound" for c in claims)

        eventually_sync(bound, "the claims to be bound", timeout=60, interval=0.2)
        claims = client.get(path).json()["items"]
        for claim in claims:
            volume = client.get(f"/api/v1/persistentvolumes/{claim['spec']['volumeName']}").json()
            assert volume["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]
            assert volume["spec"]["storageClassName"] == "on-demand"
            assert volume["spec"]["capacity"]["storage"] == "6Gi"
        assert kube.provision_claims(client, namespace) == 0
