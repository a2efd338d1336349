"""A real Kubernetes control plane for tests and `make demo`: etcd, kube-apiserver (loopback,
generated certificates, PodSecurity admission), the controller manager, kube-scheduler with a
`hami-scheduler` profile, and kwok running simulated GPU nodes that carry HAMi's registration
annotation.

The binaries come from hack/testenv.sh (built from their Go modules). Several clusters can run
at once: each picks its own free ports and folder.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import json
import os
import socket
import ssl
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from gshare.operator.inventory import REGISTER_ANNOTATION, Card, format_register

ROOT = Path(__file__).resolve().parents[2]
KWOK_ANNOTATION = "kwok.x-k8s.io/node"


def testenv_bin() -> Path:
    """Build (once, cached) and return the folder with the control-plane binaries."""
    out = subprocess.run(  # noqa: S603 - our own script
        ["/bin/bash", str(ROOT / "hack" / "testenv.sh")],
        check=True,
        capture_output=True,
        text=True,
    )
    return Path(out.stdout.strip().splitlines()[-1])


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _pem_key(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


def _cert(
    subject: x509.Name,
    key: rsa.RSAPrivateKey,
    issuer: x509.Name,
    issuer_key: rsa.RSAPrivateKey,
    *,
    ca: bool = False,
    sans: list[x509.GeneralName] | None = None,
    client: bool = False,
) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    if not ca:
        usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else (ExtendedKeyUsageOID.SERVER_AUTH)
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _name(common: str, org: str | None = None) -> x509.Name:
    parts = [x509.NameAttribute(NameOID.COMMON_NAME, common)]
    if org:
        parts.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(parts)


@dataclass
class GpuNode:
    name: str
    cards: list[Card]


def a100_nodes(count: int = 2, cards: int = 4, prefix: str = "gpu") -> list[GpuNode]:
    return [
        GpuNode(
            f"{prefix}-{n}",
            [
                Card(
                    f"GPU-{prefix}{n}-{c:02d}-a100",
                    10,
                    81920,
                    100,
                    "NVIDIA-A100-SXM4-80GB",
                    0,
                    True,
                )
                for c in range(cards)
            ],
        )
        for n in range(count)
    ]


@dataclass
class Cluster:
    name: str
    folder: Path
    bin: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    api_port: int = 0
    kubeconfig: Path = Path()

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.api_port}"

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        log = (self.folder / f"{name}.log").open("wb")
        proc = subprocess.Popen(  # noqa: S603 - binaries built by hack/testenv.sh
            args, stdout=log, stderr=subprocess.STDOUT, cwd=self.folder
        )
        self.processes.append(proc)
        return proc

    def start(self) -> Cluster:
        self.folder.mkdir(parents=True, exist_ok=True)
        pki = self.folder / "pki"
        pki.mkdir(exist_ok=True)
        ca_key = _key()
        ca = _cert(_name(f"{self.name}-ca"), ca_key, _name(f"{self.name}-ca"), ca_key, ca=True)
        server_key = _key()
        server = _cert(
            _name("kube-apiserver"),
            server_key,
            ca.subject,
            ca_key,
            sans=[x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
        )
        admin_key = _key()
        admin = _cert(
            _name("gshare-admin", "system:masters"), admin_key, ca.subject, ca_key, client=True
        )
        sa_key = _key()
        files = {
            "ca.crt": ca.public_bytes(serialization.Encoding.PEM),
            "ca.key": _pem_key(ca_key),
            "server.crt": server.public_bytes(serialization.Encoding.PEM),
            "server.key": _pem_key(server_key),
            "admin.crt": admin.public_bytes(serialization.Encoding.PEM),
            "admin.key": _pem_key(admin_key),
            "sa.key": _pem_key(sa_key),
            "sa.pub": sa_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            ),
        }
        for filename, content in files.items():
            (pki / filename).write_bytes(content)
            os.chmod(pki / filename, 0o600)

        etcd_client, etcd_peer = free_port(), free_port()
        self._spawn(
            "etcd",
            [
                str(self.bin / "etcd"),
                "--name",
                "default",
                "--data-dir",
                str(self.folder / "etcd"),
                "--listen-client-urls",
                f"http://127.0.0.1:{etcd_client}",
                "--advertise-client-urls",
                f"http://127.0.0.1:{etcd_client}",
                "--listen-peer-urls",
                f"http://127.0.0.1:{etcd_peer}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{etcd_peer}",
                "--initial-cluster",
                f"default=http://127.0.0.1:{etcd_peer}",
                "--unsafe-no-fsync",
                "--log-level",
                "warn",
            ],
        )
        self.api_port = free_port()
        self._spawn(
            "kube-apiserver",
            [
                str(self.bin / "kube-apiserver"),
                "--etcd-servers",
                f"http://127.0.0.1:{etcd_client}",
                "--bind-address",
                "127.0.0.1",
                # Not loopback (refused); an RFC 5737 documentation address that nothing binds
                # and no client here calls.
                "--advertise-address",
                "192.0.2.10",
                "--endpoint-reconciler-type",
                "none",
                "--secure-port",
                str(self.api_port),
                "--cert-dir",
                str(pki),
                "--tls-cert-file",
                str(pki / "server.crt"),
                "--tls-private-key-file",
                str(pki / "server.key"),
                "--client-ca-file",
                str(pki / "ca.crt"),
                "--service-account-key-file",
                str(pki / "sa.pub"),
                "--service-account-signing-key-file",
                str(pki / "sa.key"),
                "--service-account-issuer",
                "https://kubernetes.default.svc",
                "--service-cluster-ip-range",
                "10.96.0.0/16",
                # A real node's kubelet (gshare.devnode) lets in holders of this CA's
                # certificates: logs and exec go through the API server as on a cluster.
                "--kubelet-client-certificate",
                str(pki / "admin.crt"),
                "--kubelet-client-key",
                str(pki / "admin.key"),
                # By its address: the node's name is no host name here.
                "--kubelet-preferred-address-types",
                "InternalIP,ExternalIP,Hostname",
                "--authorization-mode",
                "Node,RBAC",
                "--enable-admission-plugins",
                "NamespaceLifecycle,ServiceAccount,PodSecurity",
                # As kubeadm sets it: Pod Security admission decides per namespace.
                "--allow-privileged=true",
                "--v=1",
            ],
        )
        self.kubeconfig = self.folder / "kubeconfig"
        self.kubeconfig.write_text(
            self._kubeconfig(
                {"certificate-authority": str(pki / "ca.crt")},
                {
                    "client-certificate": str(pki / "admin.crt"),
                    "client-key": str(pki / "admin.key"),
                },
            )
        )
        self._wait_ready()
        # Service accounts, garbage collection of owned objects, namespace clean-up.
        self._spawn(
            "kube-controller-manager",
            [
                str(self.bin / "kube-controller-manager"),
                "--kubeconfig",
                str(self.kubeconfig),
                "--bind-address",
                "127.0.0.1",
                "--secure-port",
                str(free_port()),
                "--leader-elect=false",
                "--service-account-private-key-file",
                str(pki / "sa.key"),
                "--root-ca-file",
                str(pki / "ca.crt"),
                "--use-service-account-credentials=false",
                "--controllers",
                "*,-node-ipam-controller,-node-lifecycle-controller",
                "--v=1",
            ],
        )
        scheduler_config = self.folder / "scheduler.yaml"
        scheduler_config.write_text(
            json.dumps(
                {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "KubeSchedulerConfiguration",
                    "clientConnection": {"kubeconfig": str(self.kubeconfig)},
                    "leaderElection": {"leaderElect": False},
                    "profiles": [
                        {"schedulerName": "default-scheduler"},
                        {"schedulerName": "hami-scheduler"},
                    ],
                }
            )
        )
        self._spawn(
            "kube-scheduler",
            [
                str(self.bin / "kube-scheduler"),
                "--config",
                str(scheduler_config),
                "--bind-address",
                "127.0.0.1",
                "--secure-port",
                str(free_port()),
                "--v=1",
            ],
        )
        self._spawn(
            "kwok",
            [
                str(self.bin / "kwok"),
                "--kubeconfig",
                str(self.kubeconfig),
                "--manage-all-nodes=false",
                "--config",
                str(ROOT / "hack" / "kwok-stages.yaml"),
                f"--manage-nodes-with-annotation-selector={KWOK_ANNOTATION}=fake",
                "--cidr=10.244.0.1/16",
                "--node-ip=127.0.0.2",
                "--node-port",
                str(free_port()),
                "--server-address",
                f"127.0.0.1:{free_port()}",
            ],
        )
        return self

    def embedded_kubeconfig(self) -> str:
        """A kubeconfig that carries its certificates inline, as an admin would upload it."""
        pki = self.folder / "pki"

        def data(name: str) -> str:
            return base64.b64encode((pki / name).read_bytes()).decode()

        return self._kubeconfig(
            {"certificate-authority-data": data("ca.crt")},
            {"client-certificate-data": data("admin.crt"), "client-key-data": data("admin.key")},
        )

    def _kubeconfig(self, cluster: dict[str, str], user: dict[str, str]) -> str:
        """A kubeconfig for this cluster's admin, with certificates as `cluster` and `user` say."""
        return json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": self.name,
                "clusters": [{"name": self.name, "cluster": {"server": self.server, **cluster}}],
                "users": [{"name": "admin", "user": user}],
                "contexts": [
                    {"name": self.name, "context": {"cluster": self.name, "user": "admin"}}
                ],
            }
        )

    def install_crd(self) -> None:
        from gshare.operator.crd import session_crd

        with self.client() as client:
            path = (
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gsharesessions.gshare.io"
            )
            # Applied, not created: a cluster kept from an older version gets this schema (an
            # older one would prune the fields it does not know from every resource).
            response = client.patch(
                path,
                params={"fieldManager": "gshare-devcluster", "force": "true"},
                headers={"Content-Type": "application/apply-patch+yaml"},
                content=json.dumps(session_crd()),
            )
            assert response.status_code in (200, 201), response.text
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                status = client.get(path).json().get("status") or {}
                if any(
                    c["type"] == "Established" and c["status"] == "True"
                    for c in status.get("conditions") or []
                ):
                    return
                time.sleep(0.2)
        raise RuntimeError("the CRD was not established")

    def create_namespace(self, name: str, enforce: str = "restricted") -> None:
        """A namespace with Pod Security labels, once its default service account exists."""
        body = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": name,
                "labels": {
                    "pod-security.kubernetes.io/enforce": enforce,
                    "pod-security.kubernetes.io/warn": "restricted",
                    "pod-security.kubernetes.io/audit": "restricted",
                },
            },
        }
        with self.client() as client:
            response = client.post("/api/v1/namespaces", json=body)
            if response.status_code not in (201, 409):
                response.raise_for_status()
            deadline = time.monotonic() + 30
            path = f"/api/v1/namespaces/{name}/serviceaccounts/default"
            while client.get(path).status_code != 200:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no default service account in {name}")
                time.sleep(0.1)

    def tls(self) -> ssl.SSLContext:
        pki = self.folder / "pki"
        context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        return context

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.server, verify=self.tls(), timeout=30)

    def _wait_ready(self, deadline_s: float = 90) -> None:
        deadline = time.monotonic() + deadline_s
        with self.client() as client:
            while time.monotonic() < deadline:
                for proc in self.processes:
                    if proc.poll() is not None:
                        raise RuntimeError(f"{proc.args!r} exited; see {self.folder}")
                try:
                    if client.get("/readyz").status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.3)
        raise RuntimeError(f"kube-apiserver did not become ready; see {self.folder}")

    def add_gpu_nodes(self, nodes: list[GpuNode]) -> None:
        with self.client() as client:
            for node in nodes:
                gpus = sum(c.split_count for c in node.cards)
                body = {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": node.name,
                        "labels": {
                            "kubernetes.io/hostname": node.name,
                            "type": "kwok",
                            "gpu": "on",
                            "nvidia.com/gpu.present": "true",
                        },
                        "annotations": {
                            KWOK_ANNOTATION: "fake",
                            REGISTER_ANNOTATION: format_register(node.cards),
                        },
                    },
                    "spec": {},
                }
                capacity = {
                    "cpu": "64",
                    "memory": "512Gi",
                    "pods": "110",
                    "nvidia.com/gpu": str(gpus),
                    "nvidia.com/gpumem": str(sum(c.memory_mib for c in node.cards)),
                    "nvidia.com/gpucores": str(100 * len(node.cards)),
                }
                # A node is created with its status (as a kubelet registers one), so every copy
                # of it that kwok renders its Ready status from has the GPU resources.
                status = {"status": {"capacity": capacity, "allocatable": capacity}}
                client.post("/api/v1/nodes", json=body | status).raise_for_status()
                # The apiserver taints new nodes not-ready; there is no node lifecycle controller
                # here to lift it once kwok reports Ready, so lift it now.
                client.patch(
                    f"/api/v1/nodes/{node.name}",
                    json={"spec": {"taints": []}},
                    headers={"Content-Type": "application/merge-patch+json"},
                ).raise_for_status()
                self._settle(client, node.name, status)

    @staticmethod
    def _settle(client: httpx.Client, name: str, status: dict[str, Any]) -> None:
        """Wait for kwok to report the node Ready with its GPU resources, writing them again if
        they are missing (they should not be: see hack/kwok-stages.yaml)."""
        wanted = status["status"]["allocatable"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = client.get(f"/api/v1/nodes/{name}").json().get("status") or {}
            ready = any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in found.get("conditions") or []
            )
            has = found.get("allocatable") or {}
            gpus = {k: v for k, v in wanted.items() if k.startswith("nvidia.com/")}
            if ready and all(has.get(k) == v for k, v in gpus.items()):
                return
            if ready:
                client.patch(
                    f"/api/v1/nodes/{name}/status",
                    json=status,
                    headers={"Content-Type": "application/merge-patch+json"},
                ).raise_for_status()
            time.sleep(0.1)
        raise RuntimeError(f"node {name} did not become Ready with its GPUs")

    def add_runtime_class(self, name: str, handler: str, node_selector: dict[str, str]) -> None:
        """A RuntimeClass whose pods schedule only on nodes with `node_selector`'s labels (as
        gVisor's or Kata's would be installed on the nodes that have the runtime)."""
        body = {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": name},
            "handler": handler,
            "scheduling": {"nodeSelector": node_selector},
        }
        with self.client() as client:
            response = client.post("/apis/node.k8s.io/v1/runtimeclasses", json=body)
            if response.status_code != 409:
                response.raise_for_status()

    def set_node(
        self,
        name: str,
        *,
        labels: dict[str, str | None] | None = None,
        taints: list[dict[str, str]] | None = None,
        user_namespaces: bool | None = None,
    ) -> None:
        """Label (None removes a label) and taint a node, and say whether its runtime runs pods
        in user namespaces, as a real node's kubelet reports it."""
        merge = {"Content-Type": "application/merge-patch+json"}
        with self.client() as client:
            spec: dict[str, Any] = {}
            if labels is not None:
                spec["metadata"] = {"labels": labels}
            if taints is not None:
                spec["spec"] = {"taints": taints}
            if spec:
                client.patch(f"/api/v1/nodes/{name}", json=spec, headers=merge).raise_for_status()
            if user_namespaces is not None:
                handlers = [{"name": "", "features": {"userNamespaces": user_namespaces}}]
                client.patch(
                    f"/api/v1/nodes/{name}/status",
                    json={"status": {"runtimeHandlers": handlers}},
                    headers=merge,
                ).raise_for_status()

    def add_volumes(self, count: int, size_gib: int = 100, prefix: str = "volume") -> None:
        """Pre-made persistent volumes for session claims to bind to (the controller manager's
        binder does the binding; `provision_claims` makes one per waiting claim instead). They
        carry no storage class, like claims made without one, and are kept when released."""
        with self.client() as client:
            for n in range(count):
                body = {
                    "apiVersion": "v1",
                    "kind": "PersistentVolume",
                    "metadata": {"name": f"{prefix}-{n:03d}"},
                    "spec": {
                        "capacity": {"storage": f"{size_gib}Gi"},
                        "accessModes": ["ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany"],
                        "persistentVolumeReclaimPolicy": "Retain",
                        "hostPath": {"path": f"/var/lib/gshare-devcluster/{prefix}-{n:03d}"},
                    },
                }
                response = client.post("/api/v1/persistentvolumes", json=body)
                if response.status_code != 409:
                    response.raise_for_status()

    def provision_claims(self, client: httpx.Client, namespace: str) -> int:
        """A volume for each claim in `namespace` that waits for one, bound to that claim
        alone (`claimRef`), of its size, access modes and storage class: what a storage
        class's provisioner does on a real cluster, so that any number of sessions get their
        volumes. Returns how many it made; a claim given one already is left alone."""
        answer = client.get(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims")
        answer.raise_for_status()
        made = 0
        for claim in answer.json().get("items") or []:
            meta, spec = claim["metadata"], claim.get("spec") or {}
            if spec.get("volumeName") or (claim.get("status") or {}).get("phase") == "Bound":
                continue
            name = f"claim-{meta['uid']}"
            volume: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": name},
                "spec": {
                    "capacity": {
                        "storage": ((spec.get("resources") or {}).get("requests") or {}).get(
                            "storage", "1Gi"
                        )
                    },
                    "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": spec.get("storageClassName") or "",
                    "claimRef": {
                        "namespace": namespace,
                        "name": meta["name"],
                        "uid": meta["uid"],
                    },
                    "hostPath": {"path": f"/var/lib/gshare-devcluster/{name}"},
                },
            }
            created = client.post("/api/v1/persistentvolumes", json=volume)
            if created.status_code == 409:
                continue  # made by an earlier pass; the binder has not caught up yet
            created.raise_for_status()
            made += 1
        return made

    def stop(self) -> None:
        for proc in reversed(self.processes):
            proc.terminate()
        for proc in reversed(self.processes):
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.processes.clear()
