"""The one module that talks to a cluster's Kubernetes API (through kubernetes_asyncio)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

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
