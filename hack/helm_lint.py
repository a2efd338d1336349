"""`make helm-lint`: the chart checked the way a platform team would before installing it.

1. `helm lint --strict` with the defaults and with every overlay in deploy/values/, which checks
   them against values.schema.json too.
2. Every overlay rendered (and the all-in-one with every optional switch on), and every object,
   with the policies in deploy/policies/, server-side dry-run against a real kube-apiserver (the
   test control plane, with the CRDs of CloudNativePG, external-secrets, the Prometheus operator
   and Kyverno from their Go modules): zero errors and zero warnings, Pod Security's included.
3. A real `helm install` of the all-in-one into that cluster and a `helm upgrade` over it: every
   object is admitted, and the first admin's generated password and the operator's token (which
   the worker writes into the chart's empty Secret) survive the upgrade.
4. A `helm uninstall` that leaves the namespaces holding data (namespaces.keepOnUninstall), and
   an install of the same release that takes them over.

Exits non-zero with what failed.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from gshare.devcluster import Cluster, testenv_bin

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "gshare"
OVERLAYS = sorted((ROOT / "deploy" / "values").glob("*.yaml"))
POLICIES = sorted((ROOT / "deploy" / "policies").glob("*.yaml"))
# Switches no overlay turns on, checked on top of the all-in-one.
EVERY_OPTION = [
    "--set",
    "infra.imagePrepuller.enabled=true,infra.nodeProblemDetector.enabled=true,"
    "infra.spegel.enabled=true,metrics.serviceMonitor.enabled=true,"
    "database.cloudnativepg.backup.enabled=true,"
    "database.cloudnativepg.backup.destinationPath=s3://backups/gshare,"
    "operatorConfig.apiCaConfigMap=gshare-api-ca",
]
MANAGER = "gshare-helm-lint"
Json = dict[str, Any]


class Failed(Exception):
    pass


def helm(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run(  # noqa: S603 - our own helm build, our own arguments
        [str(testenv_bin() / "helm"), *args], capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        raise Failed(f"helm {' '.join(args)}:\n{done.stdout}{done.stderr}")
    return done.stdout


def rendered(overlay: Path | None, env: dict[str, str], *extra: str) -> list[Json]:
    values = ["-f", str(overlay)] if overlay else []
    text = helm("template", "gshare", str(CHART), "--include-crds", *values, *extra, env=env)
    return [doc for doc in yaml.safe_load_all(text) if doc]


class Api:
    """Just enough of a client: discovery, to find each kind's path, and server-side apply."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client
        self._resources: dict[str, dict[str, tuple[str, bool]]] = {}

    def _discover(self, api_version: str) -> dict[str, tuple[str, bool]]:
        if api_version not in self._resources:
            base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            found = self.client.get(base)
            found.raise_for_status()
            self._resources[api_version] = {
                r["kind"]: (r["name"], r["namespaced"])
                for r in found.json()["resources"]
                if "/" not in r["name"]
            }
        return self._resources[api_version]

    def path(self, obj: Json) -> str:
        version, kind = obj["apiVersion"], obj["kind"]
        known = self._discover(version).get(kind)
        if known is None:
            raise Failed(f"the API server does not serve {kind} in {version}")
        plural, namespaced = known
        base = "/api/v1" if version == "v1" else f"/apis/{version}"
        meta = obj["metadata"]
        where = f"/namespaces/{meta.get('namespace', 'default')}" if namespaced else ""
        return f"{base}{where}/{plural}/{meta['name']}"

    def apply(self, obj: Json, *, dry_run: bool) -> list[str]:
        """Apply `obj`; returns the API server's warnings. Raises Failed on refusal."""
        params = {"fieldManager": MANAGER, "force": "true"}
        if dry_run:
            params["dryRun"] = "All"
        answer = self.client.patch(
            self.path(obj),
            params=params,
            content=json.dumps(obj),
            headers={"Content-Type": "application/apply-patch+yaml"},
        )
        name = f"{obj['kind']} {obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"
        if answer.status_code >= 400:
            raise Failed(f"{name} refused ({answer.status_code}): {answer.text[:600]}")
        return [f"{name}: {w}" for w in answer.headers.get_list("warning")]


def install_crds(api: Api, cluster: Cluster) -> None:
    crds = [
        *sorted((testenv_bin().parent / "crds").glob("*.yaml")),
        *sorted((CHART / "crds").glob("*.yaml")),
    ]
    for path in crds:
        for crd in yaml.safe_load_all(path.read_text()):
            if crd:
                api.apply(crd, dry_run=False)
    deadline = time.monotonic() + 60
    for path in crds:
        for crd in yaml.safe_load_all(path.read_text()):
            if not crd:
                continue
            url = (
                f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}"
            )
            while not _established(cluster.client().get(url).json()):
                if time.monotonic() > deadline:
                    raise Failed(f"the CRD {crd['metadata']['name']} never became established")
                time.sleep(0.1)


def _established(crd: Json) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


RELEASE = {"meta.helm.sh/release-name": "gshare", "meta.helm.sh/release-namespace": "default"}


def dry_run_overlay(api: Api, objects: list[Json]) -> list[str]:
    """Namespaces for real (a dry run cannot create what the rest goes into), marked as the
    release's so that the install after adopts them; the rest dry."""
    warnings: list[str] = []
    for obj in objects:
        if obj["kind"] == "CustomResourceDefinition":
            continue
        if obj["kind"] == "Namespace":
            notes = obj["metadata"].setdefault("annotations", {})
            notes.update(RELEASE)
        warnings += api.apply(obj, dry_run=obj["kind"] != "Namespace")
    return warnings


def admitted(api: Api, objects: list[Json]) -> list[str]:
    """What of the release the API server does not hold."""
    missing = []
    for obj in objects:
        if obj["kind"] == "CustomResourceDefinition" or "helm.sh/hook" in (
            obj["metadata"].get("annotations") or {}
        ):
            continue
        if api.client.get(api.path(obj)).status_code != 200:
            missing.append(f"{obj['kind']} {obj['metadata']['name']}")
    return missing


def bootstrap_password(api: Api) -> str:
    found = api.client.get("/api/v1/namespaces/gshare-system/secrets/gshare-bootstrap-admin")
    found.raise_for_status()
    return base64.b64decode(found.json()["data"]["password"]).decode()


TOKEN_SECRET = "/api/v1/namespaces/gshare-system/secrets/gshare-operator-token"


def write_operator_token(api: Api, token: str) -> None:
    """What the worker does once the release runs: the token goes into the chart's Secret."""
    answer = api.client.patch(
        TOKEN_SECRET,
        json={"stringData": {"token": token}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    answer.raise_for_status()


def operator_token(api: Api) -> str:
    found = api.client.get(TOKEN_SECRET)
    found.raise_for_status()
    return base64.b64decode((found.json().get("data") or {}).get("token", "")).decode()


KEPT_SECRET = "/api/v1/namespaces/gshare-secrets/secrets/gshare-cluster-kept"


def uninstall_keeps_data(api: Api, incluster: Path, env: dict[str, str], password: str) -> None:
    """`helm uninstall` with namespaces.keepOnUninstall (the default) removes the workloads but
    leaves the namespaces that hold data, with what the control plane wrote there; installing
    the same release again takes them over."""
    answer = api.client.post(
        "/api/v1/namespaces/gshare-secrets/secrets",
        json={"metadata": {"name": "gshare-cluster-kept"}, "stringData": {"kubeconfig": "x"}},
    )
    answer.raise_for_status()
    helm("uninstall", "gshare", "--namespace", "default", "--no-hooks", env=env)
    for namespace in ("gshare-system", "gshare-sessions", "gshare-secrets"):
        found = api.client.get(f"/api/v1/namespaces/{namespace}").json()
        if found.get("status", {}).get("phase") != "Active":
            raise Failed(f"helm uninstall did not leave the namespace {namespace}: {found}")
    if api.client.get(KEPT_SECRET).status_code != 200:
        raise Failed("helm uninstall lost a Secret the control plane wrote in gshare-secrets")
    gone = api.client.get("/apis/apps/v1/namespaces/gshare-system/deployments/gshare-api")
    if gone.status_code != 404:
        raise Failed("helm uninstall left the API's Deployment")

    helm(
        "install", "gshare", str(CHART), "-f", str(incluster), "--namespace", "default",
        "--no-hooks", env=env,
    )  # fmt: skip
    missing = admitted(api, rendered(incluster, env))
    if missing:
        raise Failed(f"not in the cluster after installing again: {', '.join(missing)}")
    if bootstrap_password(api) != password:
        raise Failed("installing again replaced the first admin's generated password")
    if api.client.get(KEPT_SECRET).status_code != 200:
        raise Failed("installing again lost a Secret the control plane wrote in gshare-secrets")


def main() -> None:
    scratch = Path(tempfile.mkdtemp(prefix="gshare-helm-lint-"))
    env = {
        **os.environ,
        "HELM_CACHE_HOME": str(scratch / "cache"),
        "HELM_CONFIG_HOME": str(scratch / "config"),
        "HELM_DATA_HOME": str(scratch / "data"),
    }
    for overlay in [None, *OVERLAYS]:
        values = ["-f", str(overlay)] if overlay else []
        helm("lint", "--strict", str(CHART), *values, env=env)
        print(f"helm-lint: lint {overlay.name if overlay else 'defaults'}: ok", flush=True)
    helm("lint", "--strict", str(CHART), *EVERY_OPTION, env=env)

    cluster = Cluster("helm-lint", scratch / "cluster", testenv_bin()).start()
    try:
        with cluster.client() as client:
            api = Api(client)
            install_crds(api, cluster)
            incluster = ROOT / "deploy" / "values" / "incluster.yaml"
            checks = [(o.name, rendered(o, env)) for o in OVERLAYS]
            checks.append(("every option", rendered(incluster, env, *EVERY_OPTION)))
            policies = [d for p in POLICIES for d in yaml.safe_load_all(p.read_text()) if d]
            checks.append(("deploy/policies", policies))
            for name, objects in checks:
                warnings = dry_run_overlay(api, objects)
                if warnings:
                    raise Failed("warnings:\n" + "\n".join(warnings))
                print(
                    f"helm-lint: {name}: {len(objects)} objects admitted in a server-side "
                    "dry run, no warnings",
                    flush=True,
                )

            env["KUBECONFIG"] = str(cluster.kubeconfig)
            # Hooks (the migration Job) need a database and a node to run on; they were
            # dry-run above.
            for verb in ("install", "upgrade"):
                helm(
                    verb,
                    "gshare",
                    str(CHART),
                    "-f",
                    str(incluster),
                    "--namespace",
                    "default",
                    "--no-hooks",
                    env=env,
                )
                if verb == "install":
                    first = bootstrap_password(api)
                    write_operator_token(api, "a-token-the-worker-wrote")
            missing = admitted(api, rendered(incluster, env))
            if missing:
                raise Failed(f"not in the cluster after helm upgrade: {', '.join(missing)}")
            if bootstrap_password(api) != first:
                raise Failed("helm upgrade replaced the first admin's generated password")
            if operator_token(api) != "a-token-the-worker-wrote":
                raise Failed("helm upgrade emptied the operator's token Secret the worker writes")
            print("helm-lint: helm install and upgrade of incluster.yaml: ok", flush=True)
            uninstall_keeps_data(api, incluster, env, first)
            print(
                "helm-lint: helm uninstall kept the data namespaces, and an install took them over",
                flush=True,
            )
    finally:
        cluster.stop()


if __name__ == "__main__":
    try:
        main()
    except Failed as exc:
        print(f"helm-lint: {exc}", file=sys.stderr)
        sys.exit(1)
