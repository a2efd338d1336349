"""The one module that talks to a cluster's Kubernetes API (through kubernetes_asyncio)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

from gshare.kit import kubeapi
from gshare.operator.crd import session_crd

CRD_NAME = session_crd()["metadata"]["name"]


class KubeconfigError(ValueError):
    pass


@dataclass(frozen=True)
class Probe:
    """What registering a cluster found: its API server, and what is missing, if anything."""

    server: str
    reachable: bool
    crd_installed: bool
    problem: str = ""


def parse_kubeconfig(text: str) -> dict[str, Any]:
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise KubeconfigError(f"the kubeconfig is not valid YAML: {exc}") from exc
    if not isinstance(parsed, dict) or not parsed.get("clusters"):
        raise KubeconfigError("the kubeconfig names no cluster")
    for entry in parsed.get("clusters", []):
        cluster = (entry or {}).get("cluster") or {}
        if "certificate-authority" in cluster:
            raise KubeconfigError(
                "the kubeconfig points at files on your machine; embed them "
                "(certificate-authority-data, client-certificate-data, client-key-data)"
            )
    for entry in parsed.get("users", []) or []:
        user = (entry or {}).get("user") or {}
        if "client-certificate" in user or "client-key" in user or "exec" in user:
            raise KubeconfigError(
                "the kubeconfig needs embedded credentials (client-certificate-data and "
                "client-key-data, or a token); files and exec plugins cannot be used here"
            )
    return parsed


async def api_client(kubeconfig: dict[str, Any]) -> client.ApiClient:
    configuration = client.Configuration()
    await config.load_kube_config_from_dict(kubeconfig, client_configuration=configuration)
    return client.ApiClient(configuration)


async def probe(kubeconfig: dict[str, Any]) -> Probe:
    api = await api_client(kubeconfig)
    server = str(api.configuration.host)
    try:
        try:
            await client.VersionApi(api).get_code(_request_timeout=10)
        except (ApiException, OSError, TimeoutError) as exc:
            return Probe(server, False, False, f"cannot reach the API server at {server}: {exc}")
        except Exception as exc:  # aiohttp wraps TLS and connection failures in its own types
            return Probe(server, False, False, f"cannot reach the API server at {server}: {exc}")
        try:
            await client.ApiextensionsV1Api(api).read_custom_resource_definition(
                CRD_NAME, _request_timeout=10
            )
        except ApiException as exc:
            if exc.status == 404:
                return Probe(
                    server,
                    True,
                    False,
                    f"the {CRD_NAME} custom resource definition is not installed",
                )
            return Probe(server, True, False, f"cannot read {CRD_NAME}: {exc.reason}")
        return Probe(server, True, True)
    finally:
        await api.close()


FIELD_MANAGER = "gshare-api"
SYSTEM_NAMESPACE = "gshare-system"
TOKEN_SECRET = "gshare-operator-token"


async def _ensure_namespace(api: client.ApiClient, name: str) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    await kubeapi.apply(api, body, FIELD_MANAGER)


async def apply_session(kubeconfig: dict[str, Any], namespace: str, body: dict[str, Any]) -> None:
    """Apply a GShareSession resource (the session's desired state) to its cluster."""
    api = await api_client(kubeconfig)
    try:
        body = {**body, "metadata": {**body["metadata"], "namespace": namespace}}
        await kubeapi.apply(api, body, FIELD_MANAGER)
    finally:
        await api.close()


async def write_operator_token(kubeconfig: dict[str, Any], token: str, expires_at: str) -> None:
    """Put the operator's current token where the operator reads it: a Secret in gshare-system,
    mounted as a file the operator reloads when it changes."""
    api = await api_client(kubeconfig)
    try:
        await _ensure_namespace(api, SYSTEM_NAMESPACE)
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": TOKEN_SECRET,
                "namespace": SYSTEM_NAMESPACE,
                "annotations": {"gshare.io/expires-at": expires_at},
            },
            "type": "Opaque",
            "stringData": {"token": token},
        }
        await kubeapi.apply(api, body, FIELD_MANAGER)
    finally:
        await api.close()


async def operator_token_expiry(kubeconfig: dict[str, Any]) -> str | None:
    """When the token now in the cluster expires (ISO 8601), or None if there is none."""
    api = await api_client(kubeconfig)
    try:
        secret = await client.CoreV1Api(api).read_namespaced_secret(TOKEN_SECRET, SYSTEM_NAMESPACE)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    finally:
        await api.close()
    annotations = secret.metadata.annotations or {}
    value = annotations.get("gshare.io/expires-at")
    return str(value) if value else None
