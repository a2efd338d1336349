"""The one module that talks to a cluster's Kubernetes API (through kubernetes_asyncio)."""

from __future__ import annotations

import base64
import binascii
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from gshare.kit import kubeapi
from gshare.operator.crd import session_crd

CRD = session_crd()
CRD_NAME = CRD["metadata"]["name"]
CRD_PATH = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}"
# The clusters.api_server column.
MAX_SERVER_LENGTH = 500
# A kubeconfig is a few levels deep; deeper YAML is refused before it is built (a parser's
# recursion is no place to find out).
MAX_YAML_DEPTH = 16


class KubeconfigError(ValueError):
    pass


@dataclass(frozen=True)
class Probe:
    """What registering a cluster found: its API server, and what is missing, if anything."""

    server: str
    reachable: bool
    crd_installed: bool
    problem: str = ""


# What a registered kubeconfig may say, and nothing else. Everything that would make the API
# read local files (tokenFile, certificate paths), run commands (exec, auth-provider) or send
# credentials elsewhere (auth-provider, proxy-url) is refused, as is turning TLS checks off.
CLUSTER_KEYS = frozenset({"server", "certificate-authority-data", "tls-server-name"})
USER_KEYS = frozenset({"token", "client-certificate-data", "client-key-data"})
NAME = "gshare"


def _named(parsed: dict[str, Any], section: str, name: Any, key: str) -> dict[str, Any]:
    entries = parsed.get(section)
    if not isinstance(entries, list):
        raise KubeconfigError(f"the kubeconfig's {section} must be a list")
    for entry in entries:
        if isinstance(entry, dict) and entry.get("name") == name:
            body = entry.get(key)
            if not isinstance(body, dict):
                raise KubeconfigError(f"{section} entry {name!r} has no {key}")
            return body
    raise KubeconfigError(f"the kubeconfig has no {key} named {name!r}")


def _only(body: dict[str, Any], allowed: frozenset[str], what: str) -> dict[str, str]:
    extra = sorted(str(k) for k in body if k not in allowed)
    if extra:
        raise KubeconfigError(
            f"the kubeconfig's {what} uses {', '.join(extra)}, which GShare does not accept: "
            "embed the credentials (certificate-authority-data, client-certificate-data and "
            "client-key-data, or a token); files, exec and auth plugins, proxies and "
            "insecure-skip-tls-verify cannot be used here"
        )
    if not all(isinstance(v, str) and v for v in body.values()):
        raise KubeconfigError(f"the kubeconfig's {what} has an empty or non-text value")
    return dict(body)


def _pem(value: str, what: str) -> bytes:
    try:
        data = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:  # ValueError: characters beyond ASCII
        raise KubeconfigError(f"{what} is not valid base64") from exc
    if b"-----BEGIN" not in data:
        raise KubeconfigError(f"{what} is not PEM data")
    return data


def _load_yaml(text: str) -> Any:
    """The YAML document, once its events show it is shallow and uses no aliases."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    raise KubeconfigError(
                        f"the kubeconfig is nested more than {MAX_YAML_DEPTH} levels deep"
                    )
            elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                depth -= 1
            elif isinstance(event, yaml.AliasEvent):
                raise KubeconfigError("the kubeconfig uses YAML aliases, which are not accepted")
        return yaml.safe_load(text)
    except KubeconfigError:
        raise
    except yaml.YAMLError as exc:
        raise KubeconfigError(f"the kubeconfig is not valid YAML: {exc}") from exc
    except (RecursionError, ValueError, OverflowError) as exc:
        raise KubeconfigError("the kubeconfig cannot be read as YAML") from exc


def _check_server(server: str) -> None:
    """An https:// URL that fits its column and carries nothing but where to connect."""
    if len(server) > MAX_SERVER_LENGTH:
        raise KubeconfigError(
            f"the cluster's server URL is longer than {MAX_SERVER_LENGTH} characters"
        )
    if not server.isprintable() or any(c.isspace() for c in server):
        raise KubeconfigError("the cluster's server URL has spaces or control characters")
    try:
        parts = urlsplit(server)
        parts.port  # noqa: B018  (reading it checks the port)
    except ValueError as exc:
        raise KubeconfigError("the cluster's server is not a valid URL") from exc
    if parts.scheme != "https" or not parts.hostname:
        raise KubeconfigError("the cluster's server must be an https:// URL")
    if parts.username is not None or parts.query or parts.fragment:
        raise KubeconfigError(
            "the cluster's server URL must not carry a user name, a query or a fragment"
        )


def parse_kubeconfig(text: str) -> dict[str, Any]:
    """The kubeconfig's current context reduced to its server and embedded credentials, as a
    small kubeconfig of its own; raises KubeconfigError saying what is wrong."""
    parsed = _load_yaml(text)
    if not isinstance(parsed, dict) or not parsed.get("clusters"):
        raise KubeconfigError("the kubeconfig names no cluster")
    current = parsed.get("current-context")
    if not current:
        raise KubeconfigError("the kubeconfig has no current-context")
    context = _named(parsed, "contexts", current, "context")
    cluster = _only(
        _named(parsed, "clusters", context.get("cluster"), "cluster"), CLUSTER_KEYS, "cluster"
    )
    user = _only(_named(parsed, "users", context.get("user"), "user"), USER_KEYS, "user")
    _check_server(cluster.get("server", ""))
    tls_name = cluster.get("tls-server-name")
    if tls_name is not None and (len(tls_name) > 253 or not tls_name.isprintable()):
        raise KubeconfigError("the cluster's tls-server-name is not a host name")
    token = user.get("token")
    if token is not None and (token.strip() != token or not token.isprintable() or " " in token):
        raise KubeconfigError("the kubeconfig's token has spaces or control characters")
    if "token" not in user and not {"client-certificate-data", "client-key-data"} <= set(user):
        raise KubeconfigError(
            "the kubeconfig needs embedded credentials: client-certificate-data and "
            "client-key-data, or a token"
        )
    for key, what in (
        ("certificate-authority-data", "certificate-authority-data"),
        ("client-certificate-data", "client-certificate-data"),
        ("client-key-data", "client-key-data"),
    ):
        if key in cluster or key in user:
            _pem((cluster | user)[key], what)
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": NAME,
        "contexts": [{"name": NAME, "context": {"cluster": NAME, "user": NAME}}],
        "clusters": [{"name": NAME, "cluster": cluster}],
        "users": [{"name": NAME, "user": user}],
    }


def dump_kubeconfig(kubeconfig: dict[str, Any]) -> str:
    return str(yaml.safe_dump(kubeconfig, sort_keys=False))


SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")


def in_cluster_kubeconfig(folder: Path = SERVICE_ACCOUNT) -> str:
    """A kubeconfig for this pod's own service account: the API server Kubernetes names in the
    environment, the mounted CA and the mounted token (which the kubelet renews, so this is
    built again each time it is needed). Raises KubeconfigError when not inside a pod."""
    host, port = (
        os.environ.get("KUBERNETES_SERVICE_HOST"),
        os.environ.get("KUBERNETES_SERVICE_PORT"),
    )
    try:
        token = (folder / "token").read_text().strip()
        authority = (folder / "ca.crt").read_bytes()
    except OSError as exc:
        raise KubeconfigError(f"no service account is mounted at {folder}: {exc}") from exc
    if not host or not port or not token:
        raise KubeconfigError("not running inside Kubernetes: KUBERNETES_SERVICE_HOST is unset")
    server = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    return dump_kubeconfig(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "in-cluster",
            "clusters": [
                {
                    "name": "in-cluster",
                    "cluster": {
                        "server": server,
                        "certificate-authority-data": base64.b64encode(authority).decode(),
                    },
                }
            ],
            "users": [{"name": "service-account", "user": {"token": token}}],
            "contexts": [
                {
                    "name": "in-cluster",
                    "context": {"cluster": "in-cluster", "user": "service-account"},
                }
            ],
        }
    )


async def api_client(kubeconfig: dict[str, Any]) -> client.ApiClient:
    """A client for a kubeconfig from parse_kubeconfig. The certificates go to a private folder
    only while the TLS context is built from them, then are removed."""
    checked = parse_kubeconfig(dump_kubeconfig(kubeconfig))
    cluster, user = checked["clusters"][0]["cluster"], checked["users"][0]["user"]
    configuration = client.Configuration()
    configuration.host = cluster["server"]
    configuration.tls_server_name = cluster.get("tls-server-name")
    if "token" in user:
        configuration.api_key = {"BearerToken": f"Bearer {user['token']}"}
    with tempfile.TemporaryDirectory(prefix="gshare-kube-") as folder:
        for key, attribute in (
            ("certificate-authority-data", "ssl_ca_cert"),
            ("client-certificate-data", "cert_file"),
            ("client-key-data", "key_file"),
        ):
            value = cluster.get(key) or user.get(key)
            if value:
                path = Path(folder) / attribute
                descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(descriptor, "wb") as handle:
                    handle.write(_pem(value, key))
                setattr(configuration, attribute, str(path))
        try:
            return client.ApiClient(configuration)
        except (ssl.SSLError, OSError, ValueError) as exc:
            raise KubeconfigError(
                f"the kubeconfig's certificates or key cannot be used: {exc}"
            ) from exc


def said(exc: BaseException) -> str:
    """What went wrong, without echoing what the other side sent (headers, bodies)."""
    if isinstance(exc, ApiException):
        return f"it answered {exc.status} {exc.reason}"
    if isinstance(exc, KubeconfigError):
        return str(exc)
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def crd_problem(answer: Any) -> str:
    """What is wrong with the API server's answer about GShare's CRD; empty when nothing.

    The answer is whatever the other side sent: every level is checked for its type."""
    spec = _mapping(_mapping(answer).get("spec"))
    if not spec:
        return f"the API server's answer about {CRD_NAME} is not a custom resource definition"
    wanted = CRD["spec"]
    if spec.get("group") != wanted["group"]:
        return f"{CRD_NAME} does not define the {wanted['group']} group"
    if _mapping(spec.get("names")).get("kind") != wanted["names"]["kind"]:
        return f"{CRD_NAME} does not define the {wanted['names']['kind']} kind"
    versions = spec.get("versions")
    served = {
        v.get("name")
        for v in (versions if isinstance(versions, list) else [])
        if isinstance(v, dict) and v.get("served") is True
    }
    missing = [v["name"] for v in wanted["versions"] if v["name"] not in served]
    if missing:
        return f"{CRD_NAME} does not serve version {', '.join(missing)}"
    return ""


async def _get_raw(api: client.ApiClient, path: str) -> Any:
    """GET `path` and return the JSON answer as plain data, without the client's models (which
    raise on answers they do not expect)."""
    return await api.call_api(
        path,
        "GET",
        header_params={"Accept": "application/json"},
        response_types_map={200: "object"},
        auth_settings=["BearerToken"],
        _return_http_data_only=True,
        _request_timeout=10,
    )


async def probe(kubeconfig: dict[str, Any]) -> Probe:
    api = await api_client(kubeconfig)
    server = str(api.configuration.host)
    try:
        try:
            await _get_raw(api, "/version")
        except Exception as exc:  # aiohttp wraps TLS and connection failures in its own types
            problem = f"cannot reach the API server at {server}: {said(exc)}"
            return Probe(server, False, False, problem)
        try:
            answer = await _get_raw(api, CRD_PATH)
        except ApiException as exc:
            if exc.status == 404:
                return Probe(
                    server,
                    True,
                    False,
                    f"the {CRD_NAME} custom resource definition is not installed",
                )
            return Probe(server, True, False, f"cannot read {CRD_NAME}: {said(exc)}")
        except Exception as exc:
            return Probe(server, True, False, f"cannot read {CRD_NAME}: {said(exc)}")
        problem = crd_problem(answer)
        return Probe(server, True, not problem, problem)
    finally:
        await api.close()


FIELD_MANAGER = "gshare-api"
SYSTEM_NAMESPACE = "gshare-system"
TOKEN_SECRET = "gshare-operator-token"


async def _ensure_namespace(api: client.ApiClient, name: str) -> None:
    """Made when missing; only read when it is there (the chart's worker may only read it). An
    account that may not read it but may apply it (as older setups granted) applies it."""
    try:
        if await kubeapi.get(api, "Namespace", name, "") is not None:
            return
    except ApiException as exc:
        if exc.status != 403:
            raise
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


async def delete_session(kubeconfig: dict[str, Any], namespace: str, name: str) -> None:
    """Delete a GShareSession resource (its children go with it); gone already is fine."""
    api = await api_client(kubeconfig)
    try:
        await kubeapi.delete(api, "GShareSession", name, namespace)
    finally:
        await api.close()


async def session_names(kubeconfig: dict[str, Any], namespace: str) -> list[str]:
    """The names of the GShareSession resources in the cluster."""
    api = await api_client(kubeconfig)
    try:
        return await kubeapi.names(api, "GShareSession", namespace)
    finally:
        await api.close()


async def write_operator_token(
    kubeconfig: dict[str, Any], token: str, *, cluster_id: str, expires_at: str, key_id: str
) -> None:
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
                "annotations": {
                    "gshare.io/cluster": cluster_id,
                    "gshare.io/expires-at": expires_at,
                    "gshare.io/signing-key": key_id,
                },
            },
            "type": "Opaque",
            "stringData": {"token": token},
        }
        await kubeapi.apply(api, body, FIELD_MANAGER)
    finally:
        await api.close()


@dataclass(frozen=True)
class TokenState:
    """What the cluster's token Secret says of the token it holds (never the token itself)."""

    expires_at: str | None = None  # ISO 8601
    key_id: str | None = None  # the signing key's kid
    cluster_id: str | None = None  # the registered cluster it speaks for


async def operator_token_state(kubeconfig: dict[str, Any]) -> TokenState:
    """When the token now in the cluster expires and which key signed it; empty if there is
    none, or if the Secret is not of the shape this writes."""
    api = await api_client(kubeconfig)
    try:
        secret = await kubeapi.get(api, "Secret", TOKEN_SECRET, SYSTEM_NAMESPACE)
    finally:
        await api.close()
    annotations = _mapping(_mapping(_mapping(secret).get("metadata")).get("annotations"))

    def short(name: str) -> str | None:
        value = annotations.get(name)
        return value[:64] if isinstance(value, str) and value else None

    return TokenState(
        short("gshare.io/expires-at"), short("gshare.io/signing-key"), short("gshare.io/cluster")
    )
