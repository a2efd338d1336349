"""The chart's service accounts and RBAC, installed into a test cluster, and the credentials a
pod of each service account would get: to check each identity can do its job and no more."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from gshare import devcluster
from gshare.devcluster import Cluster

ROOT = Path(__file__).resolve().parents[2]
KINDS = {
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "Secret": "/api/v1/namespaces/{ns}/secrets",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
}


def identities(*values: str) -> list[dict[str, Any]]:
    """The all-in-one's service accounts, RBAC and Secrets as helm renders them (`values`:
    --set)."""
    settings = [arg for value in values for arg in ("--set", value)]
    rendered = subprocess.run(
        [
            str(devcluster.testenv_bin() / "helm"),
            "template",
            "gshare",
            str(ROOT / "charts" / "gshare"),
            "-f",
            str(ROOT / "deploy" / "values" / "incluster.yaml"),
            *settings,
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    return [d for d in yaml.safe_load_all(rendered) if d and d.get("kind") in KINDS]


def install(kube: Cluster, objects: list[dict[str, Any]]) -> None:
    with kube.client() as http:
        for obj in objects:
            path = KINDS[obj["kind"]].format(ns=obj["metadata"].get("namespace"))
            answer = http.post(path, json=obj)
            assert answer.status_code in (201, 409), answer.text


def token_of(kube: Cluster, account: str, namespace: str = "gshare-system") -> str:
    """A bound token of `account`, as the kubelet mounts one into its pods."""
    with kube.client() as http:
        answer = http.post(
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
            json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
        )
    assert answer.status_code == 201, answer.text
    return str(answer.json()["status"]["token"])


def kubeconfig_of(kube: Cluster, account: str, path: Path) -> Path:
    """A kubeconfig file that acts as `account`, and nothing more."""
    admin = json.loads(kube.embedded_kubeconfig())
    admin["users"] = [{"name": "admin", "user": {"token": token_of(kube, account)}}]
    path.write_text(json.dumps(admin))
    path.chmod(0o600)
    return path
