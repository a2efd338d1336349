"""A real node for a dev cluster (`gshare.devcluster`): containerd, runc and CNI's bridge from
Debian, a kubelet built from k8s.io/kubernetes, a GPU device-plugin stand-in, rancher's
local-path-provisioner and kube-router's network policy controller, all on this host,
registered with the cluster's API server beside kwok's simulated nodes. Session pods scheduled
here run for real from the session images: the kubelet enforces their security context, their
home volume is a folder the provisioner makes, and their NetworkPolicy is enforced with
iptables.

No GPU is attached. The device plugin (hack/node-standins) offers each configured card's shares
as `nvidia.com/gpu` over the kubelet's device-plugin API, the node carries HAMi's registration
annotation like a HAMi node, and a container given a share finds GPU_STANDIN in its environment
saying that there is no card.

It needs root (it mounts, makes a bridge and writes iptables rules) and Debian's containerd,
runc, containernetworking-plugins, iptables and ipset (`hack/node.sh` installs them).
`unavailable()` says in one line why a machine cannot run it. One real node runs on a machine at
a time: it uses the kubelet's fixed device-plugin folder. Images are kept in containerd's store
under /var/lib/gshare-node between runs, like podman's.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from gshare.devcluster import Cluster, _cert, _key, _name, _pem_key, free_port
from gshare.operator.inventory import REGISTER_ANNOTATION, Card, format_register

STATE = Path("/run/gshare-node")  # sockets, containerd's state, CNI's leases: gone at reboot
LIB = Path("/var/lib/gshare-node")  # containerd's image store and the volumes: kept
KUBELET_ROOT = Path("/var/lib/kubelet")  # the device-plugin API fixes its folder under it
NAMESPACE = "k8s.io"  # containerd's namespace for the kubelet's images and containers
BRIDGE = "gshare0"
POD_CIDR = "10.250.0.0/24"
STORAGE_CLASS = "local-path"
PROVISIONER_NAMESPACE = "local-path-storage"
CNI_BIN = Path("/usr/lib/cni")
PAUSE = "localhost/gshare/pause"
GPU, GPU_MEMORY, GPU_CORES = "nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpucores"
Json = dict[str, Any]


def run(
    argv: list[str],
    *,
    check: bool = True,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess[bytes]:
    """A system program (Debian's ctr, podman, ip, iptables, umount) with our own arguments; with
    `check`, a failure raises RuntimeError with its error output."""
    result = subprocess.run(  # noqa: S603 - fixed programs, arguments of ours
        argv,
        input=stdin,
        capture_output=True,
        timeout=timeout,
        check=False,
        env=dict(env) if env is not None else None,
    )
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])}: {result.stderr.decode()[-2000:]}")
    return result


def unavailable() -> str | None:
    """Why this machine cannot run a real node (one line), or None when it can."""
    if os.geteuid() != 0:
        return "a real node needs root (mounts, a bridge, iptables); this process is not root"
    missing = [
        p
        for p, found in (
            ("containerd", shutil.which("containerd")),
            ("runc", shutil.which("runc") or Path("/usr/sbin/runc").exists()),
            ("containernetworking-plugins", (CNI_BIN / "bridge").exists()),
            ("iptables", shutil.which("iptables") or Path("/usr/sbin/iptables").exists()),
            ("ipset", shutil.which("ipset") or Path("/usr/sbin/ipset").exists()),
        )
        if not found
    ]
    if missing:
        names = ", ".join(missing)
        return f"a real node needs Debian's {names} (`bash hack/node.sh` installs them)"
    if (
        not Path("/sys/fs/cgroup/memory").is_dir()
        and not Path("/sys/fs/cgroup/cgroup.controllers").exists()
    ):
        return "a real node needs cgroups mounted at /sys/fs/cgroup"
    return None


def host_address() -> str:
    """This host's address on its default route: the node's InternalIP (the kubelet refuses a
    loopback one)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the route
        return str(s.getsockname()[0])


def _tar_add(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, 0
    tar.addfile(info, io.BytesIO(data))


def pause_archive(program: Path, reference: str) -> bytes:
    """The pod sandbox's image, made here since nothing can be pulled: `program` as /pause."""
    return program_archive(program, reference, "/pause", "65535:65535")


def program_archive(program: Path, reference: str, path: str, user: str) -> bytes:
    """An OCI image archive named `reference` for containerd, holding one static `program` at
    `path` (its entrypoint), run as `user`."""
    layer_buffer = io.BytesIO()
    with tarfile.open(fileobj=layer_buffer, mode="w", format=tarfile.PAX_FORMAT) as layer:
        _tar_add(layer, path.lstrip("/"), program.read_bytes(), 0o755)
    layer_bytes = layer_buffer.getvalue()
    layer_digest = "sha256:" + hashlib.sha256(layer_bytes).hexdigest()
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {
                "Entrypoint": [path],
                "User": user,
                "Env": [f"PATH={path.rsplit('/', 1)[0] or '/'}"],
            },
            "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
        }
    ).encode()
    config_digest = "sha256:" + hashlib.sha256(config).hexdigest()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": config_digest,
                "size": len(config),
            },
            "layers": [
                {
                    "mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": layer_digest,
                    "size": len(layer_bytes),
                }
            ],
        }
    ).encode()
    manifest_digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
    index = json.dumps(
        {
            "schemaVersion": 2,
            "manifests": [
                {
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": manifest_digest,
                    "size": len(manifest),
                    "annotations": {
                        "io.containerd.image.name": reference,
                        "org.opencontainers.image.ref.name": reference.rsplit(":", 1)[1],
                    },
                }
            ],
        }
    ).encode()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as archive:
        _tar_add(archive, "oci-layout", b'{"imageLayoutVersion": "1.0.0"}')
        _tar_add(archive, "index.json", index)
        for digest, blob in (
            (layer_digest, layer_bytes),
            (config_digest, config),
            (manifest_digest, manifest),
        ):
            _tar_add(archive, f"blobs/sha256/{digest.split(':')[1]}", blob)
    return out.getvalue()


def mounts_under(*roots: Path) -> list[str]:
    """Mount points at or below `roots`, deepest first (so each can be unmounted in turn)."""
    found = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            point = line.split()[4].replace("\\040", " ")
            if any(point == str(r) or point.startswith(f"{r}/") for r in roots):
                found.append(point)
    return sorted(set(found), key=lambda p: p.count("/"), reverse=True)


@dataclass
class RealNode:
    """One real node of `cluster`, named `name`, offering `cards` through the stand-in."""

    cluster: Cluster
    name: str
    cards: list[Card]
    folder: Path = Path()
    labels: Mapping[str, str] = field(default_factory=dict)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    address: str = ""
    _lock: IO[str] | None = None

    @property
    def containerd_socket(self) -> Path:
        return STATE / "containerd.sock"

    # ----- start

    def start(self) -> RealNode:
        reason = unavailable()
        if reason:
            raise RuntimeError(reason)
        self.folder = self.cluster.folder / f"node-{self.name}"
        self.folder.mkdir(parents=True, exist_ok=True)
        STATE.mkdir(parents=True, exist_ok=True)
        self._lock = (STATE.parent / "gshare-node.lock").open("w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RuntimeError(
                "another real node runs on this machine (a demo or a test run): stop it first"
            ) from None
        self.sweep()  # what an earlier run that was killed may have left
        self.address = host_address()
        self._start_containerd()
        self._load_pause()
        self._write_cni()
        self._start_kubelet()
        self._start(
            "gpu-device-plugin",
            [
                str(self.cluster.bin / "gpu-device-plugin"),
                "-cards",
                ",".join(f"{c.uuid}:{c.split_count}" for c in self.cards),
                "-dir",
                str(KUBELET_ROOT / "device-plugins"),
            ],
        )
        self._register()
        self._start_network_policies()
        return self

    def _start(self, name: str, argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        log = (self.folder / f"{name}.log").open("ab")
        proc = subprocess.Popen(  # noqa: S603 - programs built by hack/testenv.sh or Debian's
            argv, stdout=log, stderr=subprocess.STDOUT, cwd=self.folder, **kwargs
        )
        self.processes[name] = proc
        return proc

    def _wait(self, what: str, ready: Any, deadline_s: float = 90) -> None:
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            for name, proc in self.processes.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited; see {self.folder / (name + '.log')}")
            if ready():
                return
            time.sleep(0.2)
        raise RuntimeError(f"{what} did not happen within {deadline_s:.0f} s; see {self.folder}")

    def ctr(self, *args: str, stdin: bytes | None = None, timeout: float = 600) -> str:
        address = ["--address", str(self.containerd_socket), "--namespace", NAMESPACE]
        return run(["ctr", *address, *args], stdin=stdin, timeout=timeout).stdout.decode()

    def _start_containerd(self) -> None:
        config = self.folder / "containerd.toml"
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        config.write_text(
            f"""version = 2
root = "{LIB / "containerd"}"
state = "{STATE / "containerd"}"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "{self.containerd_socket}"
[ttrpc]
  address = "{self.containerd_socket}.ttrpc"
[{cri}]
  sandbox_image = "{self.pause_reference}"
  disable_apparmor = true
  # This host refuses a negative oom_score_adj even to root: keep containers at or above ours.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"
[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[{cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false
[{cri}.cni]
  bin_dir = "{CNI_BIN}"
  conf_dir = "{STATE / "cni"}"
"""
        )
        self._start("containerd", ["containerd", "--config", str(config)])
        self._wait("containerd's socket", self.containerd_socket.exists)
        self._wait("containerd to answer", lambda: self._answers())

    def _answers(self) -> bool:
        try:
            self.ctr("version", timeout=10)
        except (RuntimeError, subprocess.TimeoutExpired):
            return False
        return True

    @property
    def pause_reference(self) -> str:
        program = self.cluster.bin / "pause"
        return f"{PAUSE}:{hashlib.sha256(program.read_bytes()).hexdigest()[:16]}"

    def images(self) -> set[str]:
        return set(self.ctr("images", "list", "--quiet").split())

    def _load_pause(self) -> None:
        reference = self.pause_reference
        if reference not in self.images():
            archive = pause_archive(self.cluster.bin / "pause", reference)
            self.ctr("images", "import", "-", stdin=archive)

    def load_images(self, images: Mapping[str, Iterable[str]], env: Mapping[str, str]) -> None:
        """Copy each podman image (a key) into the node's containerd, under its own name and
        the `images[name]` names besides (a catalog's references), unless containerd has it
        already from an earlier run with the same image id."""
        stamp = LIB / "loaded.json"
        try:
            loaded: dict[str, str] = json.loads(stamp.read_text())
        except (OSError, ValueError):
            loaded = {}
        present = self.images()
        for name, aliases in images.items():
            inspect = ["podman", "image", "inspect", "--format", "{{.Id}}", name]
            image_id = run(inspect, env=env).stdout.decode().strip()
            if loaded.get(name) != image_id or name not in present:
                with tempfile.TemporaryDirectory(dir=LIB) as scratch:
                    archive = Path(scratch) / "image.tar"
                    run(["podman", "save", "--quiet", "--output", str(archive), name], env=env)
                    self.ctr("images", "import", str(archive))
                loaded[name] = image_id
                stamp.write_text(json.dumps(loaded))
            for alias in aliases:
                with contextlib.suppress(RuntimeError):
                    self.ctr("images", "remove", alias)
                self.ctr("images", "tag", name, alias)

    def _write_cni(self) -> None:
        folder = STATE / "cni"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "10-gshare.conflist").write_text(
            json.dumps(
                {
                    "cniVersion": "1.0.0",
                    "name": "gshare",
                    "plugins": [
                        {
                            "type": "bridge",
                            "bridge": BRIDGE,
                            "isGateway": True,
                            "ipMasq": True,
                            "hairpinMode": True,
                            "ipam": {
                                "type": "host-local",
                                "ranges": [[{"subnet": POD_CIDR}]],
                                "routes": [{"dst": "0.0.0.0/0"}],
                                "dataDir": str(STATE / "ipam"),
                            },
                        },
                        {"type": "portmap", "capabilities": {"portMappings": True}},
                    ],
                }
            )
        )
        Path("/proc/sys/net/ipv4/ip_forward").write_text("1\n")

    def _credentials(self, common: str, org: str | None) -> tuple[Path, Path]:
        """A client certificate of the cluster's CA for `common` (in `org`)."""
        pki = self.cluster.folder / "pki"
        ca_key = serialization.load_pem_private_key((pki / "ca.key").read_bytes(), None)
        ca = x509.load_pem_x509_certificate((pki / "ca.crt").read_bytes())
        key = _key()
        cert = _cert(_name(common, org), key, ca.subject, ca_key, client=True)  # type: ignore[arg-type]
        stem = common.replace(":", "-")
        cert_file, key_file = self.folder / f"{stem}.crt", self.folder / f"{stem}.key"
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(_pem_key(key))
        os.chmod(key_file, 0o600)
        return cert_file, key_file

    def _kubeconfig(self, common: str, org: str | None) -> Path:
        cert, key = self._credentials(common, org)
        path = self.folder / f"{common.replace(':', '-')}.kubeconfig"
        path.write_text(
            self.cluster._kubeconfig(
                {"certificate-authority": str(self.cluster.folder / "pki" / "ca.crt")},
                {"client-certificate": str(cert), "client-key": str(key)},
            )
        )
        return path

    def _start_kubelet(self) -> None:
        kubeconfig = self._kubeconfig(f"system:node:{self.name}", "system:nodes")
        config = self.folder / "kubelet.yaml"
        config.write_text(
            json.dumps(
                {
                    "apiVersion": "kubelet.config.k8s.io/v1beta1",
                    "kind": "KubeletConfiguration",
                    # Debian's kernel here mounts cgroup v1; the kubelet still runs on it when
                    # told so (KEP-5573).
                    "failCgroupV1": False,
                    "cgroupDriver": "cgroupfs",
                    "failSwapOn": False,
                    "containerRuntimeEndpoint": f"unix://{self.containerd_socket}",
                    "address": self.address,
                    "port": free_port(),
                    "readOnlyPort": 0,
                    "healthzBindAddress": "127.0.0.1",
                    "healthzPort": free_port(),
                    # Only holders of the cluster CA's certificates (the API server, the admin)
                    # get in; a pod that finds the port is refused.
                    "authentication": {
                        "anonymous": {"enabled": False},
                        "webhook": {"enabled": False},
                        "x509": {"clientCAFile": str(self.cluster.folder / "pki" / "ca.crt")},
                    },
                    "authorization": {"mode": "AlwaysAllow"},
                    # The images are copied in and cannot be pulled again: never collect them.
                    "imageGCHighThresholdPercent": 100,
                    "imageGCLowThresholdPercent": 99,
                    "evictionHard": {
                        "memory.available": "100Mi",
                        "nodefs.available": "1%",
                        "imagefs.available": "1%",
                        "nodefs.inodesFree": "1%",
                    },
                    "clusterDomain": "cluster.local",
                    "resolvConf": "/etc/resolv.conf",
                    "syncFrequency": "10s",
                    "nodeStatusUpdateFrequency": "5s",
                    "serializeImagePulls": False,
                    "registerNode": True,
                }
            )
        )
        labels = {"kubernetes.io/hostname": self.name, "gpu": "on", **self.labels}
        if self.cards:
            labels["nvidia.com/gpu.present"] = "true"
        self._start(
            "kubelet",
            [
                str(self.cluster.bin / "kubelet"),
                "--config",
                str(config),
                "--kubeconfig",
                str(kubeconfig),
                "--hostname-override",
                self.name,
                "--node-ip",
                self.address,
                "--root-dir",
                str(KUBELET_ROOT),
                "--cert-dir",
                str(self.folder / "kubelet-pki"),
                "--node-labels",
                ",".join(f"{k}={v}" for k, v in labels.items()),
                "--v=1",
            ],
        )

    def _node(self, client: httpx.Client) -> Json:
        found = client.get(f"/api/v1/nodes/{self.name}")
        return dict(found.json()) if found.status_code == 200 else {}

    def _register(self) -> None:
        """Wait for the kubelet to register the node Ready with the plugin's shares; then add
        what HAMi's device plugin adds (its registration annotation, the card memory and cores
        as extended resources, which the kubelet keeps), lift the start-up taint that no
        node lifecycle controller lifts here, and give the node its pod range, as a node IPAM
        controller would (the bridge's gateway, the range's first address, is the node's)."""
        shares = sum(c.split_count for c in self.cards)
        with self.cluster.client() as client:

            def registered() -> bool:
                status = self._node(client).get("status") or {}
                ready = any(
                    c.get("type") == "Ready" and c.get("status") == "True"
                    for c in status.get("conditions") or []
                )
                gpus = (status.get("allocatable") or {}).get(GPU, "0")
                return ready and (not shares or gpus == str(shares))

            self._wait(f"node {self.name} to be Ready with its GPU shares", registered, 120)
            merge = {"Content-Type": "application/merge-patch+json"}
            if self.cards:
                extra = {
                    GPU_MEMORY: str(sum(c.memory_mib for c in self.cards)),
                    GPU_CORES: str(100 * len(self.cards)),
                }
                client.patch(
                    f"/api/v1/nodes/{self.name}/status",
                    json={"status": {"capacity": extra}},
                    headers=merge,
                ).raise_for_status()
            annotations = {REGISTER_ANNOTATION: format_register(self.cards)} if self.cards else {}
            client.patch(
                f"/api/v1/nodes/{self.name}",
                json={
                    "metadata": {"annotations": annotations},
                    "spec": {"taints": None, "podCIDR": POD_CIDR, "podCIDRs": [POD_CIDR]},
                },
                headers=merge,
            ).raise_for_status()

            def settled() -> bool:
                node = self._node(client)
                allocatable = (node.get("status") or {}).get("allocatable") or {}
                return not (node.get("spec") or {}).get("taints") and (
                    not self.cards or GPU_MEMORY in allocatable
                )

            self._wait(f"node {self.name} to show its GPU memory and no taint", settled, 60)

    # ----- storage and network policy

    def start_provisioner(self, helper_image: str) -> None:
        """rancher's local-path-provisioner, out of the cluster with the admin's kubeconfig,
        making each claim of the `local-path` class (of any access mode) a folder under
        LIB/volumes on this node, with a helper pod of `helper_image` (which must have sh and
        mkdir); the class is the cluster's default."""
        volumes = LIB / "volumes"
        volumes.mkdir(parents=True, exist_ok=True)
        self.cluster.create_namespace(PROVISIONER_NAMESPACE, enforce="privileged")
        helper = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "helper-pod"},
            "spec": {
                "containers": [
                    {
                        "name": "helper-pod",
                        "image": helper_image,
                        "imagePullPolicy": "Never",
                        # The volumes' folder is root's; the session images run as 1000.
                        "securityContext": {"runAsUser": 0, "runAsGroup": 0},
                    }
                ]
            },
        }
        config = {
            # A filesystem every node sees (there is one node), which is what lets the
            # provisioner make the group volumes' ReadWriteMany and ReadOnlyMany claims too.
            "config.json": json.dumps({"sharedFileSystemPath": str(volumes)}),
            "setup": '#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"\n',
            "teardown": '#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"\n',
            "helperPod.yaml": json.dumps(helper),
        }
        with self.cluster.client() as client:
            for kind, path, body in (
                (
                    "ConfigMap",
                    f"/api/v1/namespaces/{PROVISIONER_NAMESPACE}/configmaps",
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "local-path-config"},
                        "data": config,
                    },
                ),
                (
                    "StorageClass",
                    "/apis/storage.k8s.io/v1/storageclasses",
                    {
                        "apiVersion": "storage.k8s.io/v1",
                        "kind": "StorageClass",
                        "metadata": {
                            "name": STORAGE_CLASS,
                            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
                        },
                        "provisioner": "rancher.io/local-path",
                        "volumeBindingMode": "WaitForFirstConsumer",
                        "reclaimPolicy": "Delete",
                    },
                ),
            ):
                answer = client.post(path, json=body)
                if answer.status_code != 409:
                    assert answer.status_code == 201, f"{kind}: {answer.text}"
        self._start(
            "local-path-provisioner",
            [
                str(self.cluster.bin / "local-path-provisioner"),
                "start",
                "--kubeconfig",
                str(self.cluster.kubeconfig),
                "--namespace",
                PROVISIONER_NAMESPACE,
                "--configmap-name",
                "local-path-config",
                "--helper-image",
                helper_image,
                "--service-account-name",
                "default",
            ],
        )

    def _start_network_policies(self) -> None:
        """kube-router's network policy controller alone (no routing, no service proxy), out of
        the cluster with a certificate of its own that may only read what policies depend on.
        It enforces NetworkPolicy for this node's pods with iptables and ipset, which this
        kernel offers (kube-network-policies needs nftables' queue expression, which it does
        not). It lets the node's own traffic reach its pods, as NetworkPolicy lets a node reach
        its pods for the kubelet's probes; the demo's nginx stands in for the ingress
        controller's pods there."""
        user = "gshare:network-policies"
        with self.cluster.client() as client:
            for path, body in (
                (
                    "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                    {
                        "metadata": {"name": "gshare-network-policies"},
                        "rules": [
                            {
                                "apiGroups": [""],
                                "resources": [
                                    "nodes",
                                    "namespaces",
                                    "pods",
                                    "services",
                                    "endpoints",
                                ],
                                "verbs": ["get", "list", "watch"],
                            },
                            {
                                "apiGroups": ["networking.k8s.io"],
                                "resources": ["networkpolicies"],
                                "verbs": ["get", "list", "watch"],
                            },
                            {
                                "apiGroups": ["discovery.k8s.io"],
                                "resources": ["endpointslices"],
                                "verbs": ["get", "list", "watch"],
                            },
                        ],
                    },
                ),
                (
                    "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                    {
                        "metadata": {"name": "gshare-network-policies"},
                        "roleRef": {
                            "apiGroup": "rbac.authorization.k8s.io",
                            "kind": "ClusterRole",
                            "name": "gshare-network-policies",
                        },
                        "subjects": [
                            {"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}
                        ],
                    },
                ),
            ):
                answer = client.post(path, json=body)
                if answer.status_code != 409:
                    answer.raise_for_status()
        self._start(
            "kube-router",
            [
                str(self.cluster.bin / "kube-router"),
                "--kubeconfig",
                str(self._kubeconfig(user, None)),
                f"--hostname-override={self.name}",
                "--run-firewall=true",
                "--run-router=false",
                "--run-service-proxy=false",
                "--run-loadbalancer=false",
                "--enable-cni=false",
                "--enable-ipv6=false",
                "--health-port=0",
                "--metrics-port=0",
                "--v=1",
            ],
        )
        self._wait(
            "kube-router's policy chains",
            lambda: b"KUBE-ROUTER-FORWARD" in run(["iptables-save", "-t", "filter"]).stdout,
            60,
        )

    # ----- stop

    def stop(self) -> None:
        """Delete the node's pods through its kubelet, stop every program, and leave nothing
        running or mounted: no container, sandbox, mount, bridge, iptables chain or ipset."""
        with contextlib.suppress(httpx.HTTPError, OSError, RuntimeError):
            self._drain()
        order = [
            "kube-router",
            "local-path-provisioner",
            "gpu-device-plugin",
            "kubelet",
            "containerd",
        ]
        for name in order:
            proc = self.processes.pop(name, None)
            if proc is None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.sweep()
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def _drain(self, deadline_s: float = 60) -> None:
        with self.cluster.client() as client:
            on_node = {"fieldSelector": f"spec.nodeName={self.name}"}
            pods = client.get("/api/v1/pods", params=on_node)
            for pod in pods.json().get("items") or []:
                meta = pod["metadata"]
                client.delete(
                    f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                    params={"gracePeriodSeconds": "2"},
                )
            deadline = time.monotonic() + deadline_s
            while time.monotonic() < deadline:
                left = client.get("/api/v1/pods", params=on_node).json()
                if not left.get("items"):
                    return
                time.sleep(0.5)

    @staticmethod
    def sweep() -> None:
        """Remove what a real node leaves on the host: its processes' shims, its mounts, the
        pods' network namespaces, the bridge, and kube-router's iptables chains and ipsets
        (its own clean-up)."""
        for pid in _pids_with(str(STATE / "containerd.sock")):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        netns = list(Path("/run/netns").glob("cni-*"))
        for point in mounts_under(KUBELET_ROOT, STATE, *netns):
            run(["umount", "--lazy", point], check=False)
        for path in netns:
            with contextlib.suppress(OSError):
                path.unlink()
        run(["ip", "link", "delete", BRIDGE], check=False)
        remove_kube_rules()
        for folder in (STATE / "containerd", STATE / "ipam", STATE / "cni", KUBELET_ROOT / "pods"):
            shutil.rmtree(folder, ignore_errors=True)


def remove_kube_rules() -> None:
    """Remove the iptables chains named KUBE-* (kube-router's policy chains, the kubelet's own)
    with the rules that jump to them, and the ipsets named KUBE-* (kube-router's)."""
    for table in ("filter", "nat", "mangle"):
        saved = run(["iptables-save", "-t", table], check=False).stdout.decode()
        chains = [line[1:].split()[0] for line in saved.splitlines() if line.startswith(":KUBE-")]
        for line in saved.splitlines():
            words = shlex.split(line)
            if words[:1] == ["-A"] and not words[1].startswith("KUBE-"):
                target = words[words.index("-j") + 1] if "-j" in words[:-1] else ""
                if target.startswith("KUBE-"):
                    run(["iptables", "-t", table, "-D", *words[1:]], check=False)
        for flag in ("-F", "-X"):
            for chain in chains:
                run(["iptables", "-t", table, flag, chain], check=False)
    for name in run(["ipset", "list", "-n"], check=False).stdout.decode().split():
        if name.startswith("KUBE-"):
            run(["ipset", "destroy", name], check=False)


def _pids_with(word: str) -> list[int]:
    """Processes whose command line holds `word`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(word.encode() in a for a in argv):
            found.append(int(proc.name))
    return found


def session_images(local: Callable[[str], str]) -> dict[str, list[str]]:
    """Each session image as `make images` names it (`local(name)`), with the catalog's
    reference for it (migration 0010): the node runs the catalog's sessions from them."""
    return {
        local(f"session-{kind}"): [f"ghcr.io/gshare/session-{kind}:1"]
        for kind in ("jupyterlab", "terminal", "vscode")
    }
