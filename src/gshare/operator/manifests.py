"""Kubernetes objects for one GShareSession, built from its spec. Pure: plain dicts in and out.

Every child carries an owner reference to the GShareSession, so deleting the resource removes
them; the home volume claim is the one exception when the user keeps their volume.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

API_GROUP = "gshare.io"
API_VERSION = "v1alpha1"
KIND = "GShareSession"
PLURAL = "gsharesessions"
SESSION_LABEL = "gshare.io/session"
OWNER_LABEL = "gshare.io/owner"
APP_PORT = 8080
GPU = "nvidia.com/gpu"
GPU_MEMORY = "nvidia.com/gpumem"
GPU_CORES = "nvidia.com/gpucores"
USE_UUID = "nvidia.com/use-gpuuuid"
POD_HASH = "gshare.io/pod-hash"  # a digest of what the pod was made from
VGPU_MODE = "nvidia.com/vgpu-mode"
# A node given to one tenant carries this label and a NoSchedule taint, both valued with the
# tenant's id; a dedicated session's pod asks for that label and tolerates that taint.
DEDICATED_KEY = "gshare.io/dedicated"
ISOLATION_ANNOTATION = "gshare.io/isolation"  # the level's name, on pods that are not shared
SHARED = "shared"

Json = dict[str, Any]
SessionType = Literal["vscode", "jupyterlab", "terminal"]

# What each session type runs, on APP_PORT, as an unprivileged user. Images come from the catalog.
COMMANDS: dict[str, list[str]] = {
    "vscode": ["code-server", "--bind-addr", f"0.0.0.0:{APP_PORT}", "--auth", "none"],
    "jupyterlab": [
        "jupyter",
        "lab",
        "--ip=0.0.0.0",
        f"--port={APP_PORT}",
        "--no-browser",
        "--ServerApp.token=",
        "--ServerApp.base_url=/",
    ],
    "terminal": ["ttyd", "--port", str(APP_PORT), "--writable", "bash"],
}


@dataclass(frozen=True)
class GpuAssignment:
    node: str
    card_uuid: str
    vram_mib: int | None = None
    cores_percent: int | None = None
    mig_profile: str | None = None
    mig_instance: str | None = None

    @property
    def is_mig(self) -> bool:
        return self.mig_profile is not None


@dataclass(frozen=True)
class Volume:
    name: str
    kind: Literal["home", "shared"]
    mount_path: str
    access_mode: Literal["ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany"] = "ReadWriteOnce"
    size_gib: int = 10
    claim_name: str | None = None  # a shared volume's existing claim
    keep: bool = False  # keep the home claim when the session is deleted


@dataclass(frozen=True)
class IsolationSpec:
    """How far a session's pod is kept from others. The default is today's shared pod."""

    level: str = SHARED  # for display: shared, user-namespaced, sandboxed, dedicated, ...
    user_namespaces: bool = False
    runtime_class: str | None = None
    dedicated_to: str | None = None  # a tenant id (a UUID)

    @property
    def is_shared(self) -> bool:
        return not (self.user_namespaces or self.runtime_class or self.dedicated_to)


Egress = Literal["open", "listed", "none"]


@dataclass(frozen=True)
class NetworkSpec:
    """Where a session's pod may connect: anywhere but other sessions and the metadata
    service (open), DNS and the listed CIDRs (listed), or nowhere (none)."""

    egress: Egress = "open"
    cidrs: tuple[str, ...] = field(default=())  # normalized (ipaddress), each once


@dataclass(frozen=True)
class SessionSpec:
    session_id: str
    owner_id: str
    session_type: SessionType
    image: str
    cpu_millicores: int
    memory_mib: int
    desired_state: Literal["Running", "Paused"] = "Running"
    gpu: GpuAssignment | None = None
    volumes: tuple[Volume, ...] = field(default=())
    revision: int = 0  # the control plane's number for this spec (0: it gave none)
    isolation: IsolationSpec = field(default=IsolationSpec())
    network: NetworkSpec = field(default=NetworkSpec())


@dataclass(frozen=True)
class OperatorConfig:
    namespace: str = "gshare-sessions"
    scheduler_name: str = "hami-scheduler"
    sessions_domain: str = "sessions.gshare.local"
    auth_url: str = "http://gshare-api.gshare-system.svc/internal/v1/session-access"
    # The API's sign-in route as browsers reach it (the console's address).
    signin_url: str = "https://gshare.example.org/api/v1/session-entry"
    ingress_class: str = "nginx"
    ingress_namespace: str = "ingress-nginx"
    storage_class: str | None = None
    # The nodes' own addresses (CIDRs): no session's egress reaches them, whatever its mode.
    # The configured ranges and the addresses of the nodes the operator sees, together.
    node_cidrs: tuple[str, ...] = ()


# Cloud instance metadata services: the link-local one most clouds use, and Alibaba Cloud's.
# Node credentials live there on most clouds: no session's egress rule reaches them.
METADATA_ADDRESSES = ("169.254.169.254/32", "100.100.100.200/32")
ANYWHERE = "0.0.0.0/0"


def resource_name(session_id: str) -> str:
    """The name of a session's resource, and of its pod, service, ingress and network policy."""
    return f"session-{session_id}"


def name_of(spec: SessionSpec) -> str:
    return resource_name(spec.session_id)


def home_claim_name(spec: SessionSpec) -> str:
    return f"home-{spec.session_id}"


def labels(spec: SessionSpec) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "gshare-session",
        "app.kubernetes.io/managed-by": "gshare-operator",
        SESSION_LABEL: spec.session_id,
        OWNER_LABEL: spec.owner_id,
    }


def owner_reference(resource_name: str, resource_uid: str) -> Json:
    return {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": KIND,
        "name": resource_name,
        "uid": resource_uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _meta(spec: SessionSpec, config: OperatorConfig, name: str, owner: Json | None) -> Json:
    meta: Json = {"name": name, "namespace": config.namespace, "labels": labels(spec)}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return meta


def home_claim(spec: SessionSpec, config: OperatorConfig, owner: Json) -> Json | None:
    home = next((v for v in spec.volumes if v.kind == "home"), None)
    if home is None:
        return None
    claim: Json = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": _meta(
            spec, config, home.claim_name or home_claim_name(spec), None if home.keep else owner
        ),
        "spec": {
            "accessModes": [home.access_mode],
            "resources": {"requests": {"storage": f"{home.size_gib}Gi"}},
        },
    }
    if config.storage_class:
        claim["spec"]["storageClassName"] = config.storage_class
    return claim


def shared_claims(spec: SessionSpec, config: OperatorConfig) -> list[Json]:
    """Claims of the group volumes the session mounts, created by whichever session mounts them
    first and owned by none: they outlive every session."""
    claims: list[Json] = []
    for volume in spec.volumes:
        if volume.kind != "shared" or not volume.claim_name:
            continue
        claim: Json = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": volume.claim_name,
                "namespace": config.namespace,
                "labels": {"app.kubernetes.io/managed-by": "gshare-operator"},
            },
            "spec": {
                "accessModes": [volume.access_mode],
                "resources": {"requests": {"storage": f"{volume.size_gib}Gi"}},
            },
        }
        if config.storage_class:
            claim["spec"]["storageClassName"] = config.storage_class
        claims.append(claim)
    return claims


def _gpu_parts(gpu: GpuAssignment | None) -> tuple[dict[str, str], dict[str, str]]:
    """(resource limits, pod annotations) that ask HAMi for exactly the card admission chose."""
    if gpu is None:
        return {}, {}
    annotations = {USE_UUID: gpu.card_uuid, VGPU_MODE: "mig" if gpu.is_mig else "hami-core"}
    limits = {GPU: "1"}
    if gpu.vram_mib is not None:
        limits[GPU_MEMORY] = str(gpu.vram_mib)
    if gpu.cores_percent is not None and not gpu.is_mig:
        limits[GPU_CORES] = str(gpu.cores_percent)
    return limits, annotations


def pod(spec: SessionSpec, config: OperatorConfig, owner: Json) -> Json:
    gpu_limits, gpu_annotations = _gpu_parts(spec.gpu)
    cpu, memory = f"{spec.cpu_millicores}m", f"{spec.memory_mib}Mi"
    mounts: list[Json] = [
        {"name": "tmp", "mountPath": "/tmp"},  # noqa: S108 - a private emptyDir in the pod
        {"name": "cache", "mountPath": "/home/gshare/.cache"},
    ]
    volumes: list[Json] = [
        {"name": "tmp", "emptyDir": {}},
        {"name": "cache", "emptyDir": {}},
    ]
    for volume in spec.volumes:
        claim = volume.claim_name
        if volume.kind == "home" and not claim:
            claim = home_claim_name(spec)
        read_only = volume.access_mode == "ReadOnlyMany"
        volumes.append(
            {
                "name": volume.name,
                "persistentVolumeClaim": {"claimName": claim, "readOnly": read_only},
            }
        )
        mounts.append({"name": volume.name, "mountPath": volume.mount_path, "readOnly": read_only})
    metadata = _meta(spec, config, name_of(spec), owner)
    if gpu_annotations:
        metadata["annotations"] = gpu_annotations
    pod_spec: Json = {
        "schedulerName": config.scheduler_name,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "restartPolicy": "Always",
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 1000,
            "runAsGroup": 1000,
            "fsGroup": 1000,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [
            {
                "name": "session",
                "image": spec.image,
                "command": COMMANDS[spec.session_type],
                "ports": [{"name": "http", "containerPort": APP_PORT}],
                "env": [{"name": "HOME", "value": "/home/gshare"}],
                "resources": {
                    "requests": {"cpu": cpu, "memory": memory},
                    "limits": {"cpu": cpu, "memory": memory, **gpu_limits},
                },
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "readOnlyRootFilesystem": True,
                    "runAsNonRoot": True,
                    "capabilities": {"drop": ["ALL"]},
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "volumeMounts": mounts,
                "readinessProbe": {"tcpSocket": {"port": APP_PORT}, "periodSeconds": 5},
            }
        ],
        "volumes": volumes,
    }
    if spec.gpu is not None:
        pod_spec["nodeSelector"] = {"kubernetes.io/hostname": spec.gpu.node}
    _isolate(pod_spec, metadata, spec.isolation)
    made = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec}
    metadata.setdefault("annotations", {})[POD_HASH] = _digest(made)
    return made


def _isolate(pod_spec: Json, metadata: Json, isolation: IsolationSpec) -> None:
    """Add what the isolation level asks of the pod; a shared pod is left exactly as it was
    before levels existed (so its hash, and so the pods already running, stay)."""
    if isolation.is_shared:
        return
    metadata.setdefault("annotations", {})[ISOLATION_ANNOTATION] = isolation.level
    if isolation.user_namespaces:
        pod_spec["hostUsers"] = False
    if isolation.runtime_class:
        pod_spec["runtimeClassName"] = isolation.runtime_class
    if isolation.dedicated_to:
        term = {"key": DEDICATED_KEY, "operator": "In", "values": [isolation.dedicated_to]}
        pod_spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [term]}]
                }
            }
        }
        pod_spec["tolerations"] = [
            {
                "key": DEDICATED_KEY,
                "operator": "Equal",
                "value": isolation.dedicated_to,
                "effect": "NoSchedule",
            }
        ]


def _digest(obj: Json) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:32]


def pod_matches(found: Mapping[str, Any], wanted: Json) -> bool:
    """Whether a pod in the cluster is the one `wanted` describes. A pod's card, node and
    resources cannot change, so a pod made for another spec has to go before the wanted one can
    be made. A pod an operator made before pods were stamped counts as the wanted one."""
    stamp = ((found.get("metadata") or {}).get("annotations") or {}).get(POD_HASH)
    return stamp is None or stamp == wanted["metadata"]["annotations"][POD_HASH]


def service(spec: SessionSpec, config: OperatorConfig, owner: Json) -> Json:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(spec, config, name_of(spec), owner),
        "spec": {
            "type": "ClusterIP",
            "selector": {SESSION_LABEL: spec.session_id},
            "ports": [{"name": "http", "port": 80, "targetPort": APP_PORT}],
        },
    }


def host_of(spec: SessionSpec, config: OperatorConfig) -> str:
    return f"{spec.session_id}.{config.sessions_domain}"


def ingress(spec: SessionSpec, config: OperatorConfig, owner: Json) -> Json:
    metadata = _meta(spec, config, name_of(spec), owner)
    metadata["annotations"] = {
        # ingress-nginx asks the API before every request: only the session's owner gets in.
        # The API's Set-Cookie (the session's own access cookie) reaches the browser, and the
        # user's email reaches the session as X-GShare-User.
        "nginx.ingress.kubernetes.io/auth-url": f"{config.auth_url}/{spec.session_id}",
        "nginx.ingress.kubernetes.io/auth-response-headers": "X-GShare-User",
        # The cookie also reaches the browser when the session answers an error (a 502 while
        # its program starts), so reloading the page works without a new link.
        "nginx.ingress.kubernetes.io/auth-always-set-cookie": "true",
        # A request with an entry ticket is answered 401 with the cookie; ingress-nginx then
        # sends the browser to the API (`rd`: the address asked for), which sends it back
        # without the ticket, so the ticket leaves the address bar and the history.
        "nginx.ingress.kubernetes.io/auth-signin": config.signin_url,
        "nginx.ingress.kubernetes.io/auth-signin-redirect-param": "rd",
        # The check is a GET whatever the request's method (the subrequest would otherwise
        # repeat a POST's method, which the check does not answer).
        "nginx.ingress.kubernetes.io/auth-method": "GET",
        "nginx.ingress.kubernetes.io/proxy-body-size": "64m",
        "nginx.ingress.kubernetes.io/proxy-read-timeout": "3600",
    }
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": metadata,
        "spec": {
            "ingressClassName": config.ingress_class,
            "rules": [
                {
                    "host": host_of(spec, config),
                    "http": {
                        "paths": [
                            {
                                "path": "/",
                                "pathType": "Prefix",
                                "backend": {
                                    "service": {"name": name_of(spec), "port": {"number": 80}}
                                },
                            }
                        ]
                    },
                }
            ],
        },
    }


def network_policy(spec: SessionSpec, config: OperatorConfig, owner: Json) -> Json:
    """In: only from the ingress controller's namespace, on the session's port. So no other pod,
    and in particular no session of another organization (or of the same one), ever reaches a
    session's pod directly; keep it so.

    Out, by the spec's egress mode: `open`, anywhere but other session pods, the instance
    metadata addresses and the nodes' own (the API's own policy keeps session pods out of the
    system namespace); `listed`, the cluster's DNS and the listed CIDRs, less the same
    addresses; `none`, nowhere (Egress stays in policyTypes with no rule, which denies all)."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(spec, config, name_of(spec), owner),
        "spec": {
            "podSelector": {"matchLabels": {SESSION_LABEL: spec.session_id}},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [
                {
                    "from": [
                        {
                            "namespaceSelector": {
                                "matchLabels": {
                                    "kubernetes.io/metadata.name": config.ingress_namespace
                                }
                            }
                        }
                    ],
                    "ports": [{"protocol": "TCP", "port": APP_PORT}],
                }
            ],
            "egress": egress_rules(spec.network, config),
        },
    }


def egress_rules(network: NetworkSpec, config: OperatorConfig) -> list[Json]:
    if network.egress == "none":
        return []
    if network.egress == "listed":
        rules: list[Json] = [DNS_RULE]
        blocks = [
            b for b in (_ip_block(c, config.node_cidrs) for c in network.cidrs) if b is not None
        ]
        if blocks:
            rules.append({"to": blocks})
        return rules
    other_namespaces: Json = {
        "namespaceSelector": {
            "matchExpressions": [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "NotIn",
                    "values": [config.namespace],
                }
            ]
        }
    }
    # Anywhere but the cloud's instance metadata service and the nodes themselves.
    anywhere = _ip_block(ANYWHERE, config.node_cidrs)
    return [{"to": [other_namespaces, *([anywhere] if anywhere else [])]}]


# The cluster's DNS (CoreDNS or kube-dns, both labelled so), which `listed` sessions still need.
DNS_RULE: Json = {
    "to": [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
        }
    ],
    "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
}


def _ip_block(cidr: str, node_cidrs: Iterable[str] = ()) -> Json | None:
    """An ipBlock for `cidr` with the addresses no session reaches cut out of it (the metadata
    addresses and `node_cidrs`, those the API takes: of its family and strictly inside it), or
    None when the CIDR lies wholly within one of them: that one is never reached."""
    network = ipaddress.ip_network(cidr, strict=False)
    never = [ipaddress.ip_network(m, strict=False) for m in (*METADATA_ADDRESSES, *node_cidrs)]
    same_family = [m for m in never if m.version == network.version]
    if any(network.subnet_of(m) for m in same_family):  # type: ignore[arg-type]
        return None
    cut = list(dict.fromkeys(str(m) for m in same_family if m.subnet_of(network)))  # type: ignore[arg-type]
    block: Json = {"cidr": str(network)}
    if cut:
        block["except"] = cut
    return {"ipBlock": block}


def children(spec: SessionSpec, config: OperatorConfig, owner: Json) -> list[Json]:
    """What should exist for the session now: everything when Running; only the volume when
    Paused."""
    claim = home_claim(spec, config, owner)
    kept = [claim] if claim else []
    kept += shared_claims(spec, config)
    if spec.desired_state == "Paused":
        return kept
    return [
        *kept,
        pod(spec, config, owner),
        service(spec, config, owner),
        ingress(spec, config, owner),
        network_policy(spec, config, owner),
    ]
