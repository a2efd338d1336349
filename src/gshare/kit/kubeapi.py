"""Server-side apply and delete over a kubernetes_asyncio ApiClient, for GShare's two
Kubernetes adapters (the API's clusters/kube.py and the operator's)."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

# kind -> (API path prefix, plural) for what GShare manages
RESOURCES: dict[str, tuple[str, str]] = {
    "Namespace": ("/api/v1", "namespaces"),
    "Secret": ("/api/v1", "secrets"),
    "Pod": ("/api/v1", "pods"),
    "Service": ("/api/v1", "services"),
    "PersistentVolumeClaim": ("/api/v1", "persistentvolumeclaims"),
    "Ingress": ("/apis/networking.k8s.io/v1", "ingresses"),
    "NetworkPolicy": ("/apis/networking.k8s.io/v1", "networkpolicies"),
    "GShareSession": ("/apis/gshare.io/v1alpha1", "gsharesessions"),
}


def _object(response: Any) -> dict[str, Any]:
    # The answer is whatever the other side sent; callers read it as an object, possibly empty.
    return dict(response) if isinstance(response, dict) else {}


def path_of(kind: str, name: str, namespace: str | None = None) -> str:
    prefix, plural = RESOURCES[kind]
    where = f"/namespaces/{namespace}" if namespace and kind != "Namespace" else ""
    return f"{prefix}{where}/{plural}/{name}"


async def apply(api: client.ApiClient, body: dict[str, Any], manager: str) -> dict[str, Any]:
    """Server-side apply: the object converges to `body` however often this runs."""
    meta = body["metadata"]
    response = await api.call_api(
        path_of(body["kind"], meta["name"], meta.get("namespace")),
        "PATCH",
        query_params=[("fieldManager", manager), ("force", "true")],
        header_params={
            "Content-Type": "application/apply-patch+yaml",
            "Accept": "application/json",
        },
        body=body,
        response_types_map={200: "object", 201: "object"},
        auth_settings=["BearerToken"],
        _return_http_data_only=True,
    )
    return _object(response)


async def _read_or_delete(api: client.ApiClient, method: str, path: str) -> dict[str, Any] | None:
    """GET or DELETE; None when the object is not there."""
    try:
        response = await api.call_api(
            path,
            method,
            header_params={"Accept": "application/json"},
            response_types_map={200: "object", 202: "object"},
            auth_settings=["BearerToken"],
            _return_http_data_only=True,
        )
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return _object(response)


async def delete(api: client.ApiClient, kind: str, name: str, namespace: str) -> bool:
    """Delete if present; False when it was already gone."""
    return await _read_or_delete(api, "DELETE", path_of(kind, name, namespace)) is not None


async def get(api: client.ApiClient, kind: str, name: str, namespace: str) -> dict[str, Any] | None:
    """The object, or None when there is none."""
    return await _read_or_delete(api, "GET", path_of(kind, name, namespace))


async def names(api: client.ApiClient, kind: str, namespace: str) -> list[str]:
    """The names of every object of `kind` in `namespace` (none when the namespace is not
    there)."""
    prefix, plural = RESOURCES[kind]
    found = await _read_or_delete(api, "GET", f"{prefix}/namespaces/{namespace}/{plural}")
    items = (found or {}).get("items")
    if not isinstance(items, list):
        return []
    return [
        str(item["metadata"].get("name", ""))
        for item in items
        if isinstance(item, dict) and isinstance(item.get("metadata"), dict)
    ]


async def _items(
    api: client.ApiClient, path: str, query: list[tuple[str, str]]
) -> list[dict[str, Any]]:
    """The objects of the list answered at `path`, each a dict (anything else is skipped)."""
    response = await api.call_api(
        path,
        "GET",
        query_params=query,
        header_params={"Accept": "application/json"},
        response_types_map={200: "object"},
        auth_settings=["BearerToken"],
        _return_http_data_only=True,
    )
    items = _object(response).get("items")
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


async def listed(
    api: client.ApiClient, kind: str, namespace: str, label: str
) -> list[dict[str, Any]]:
    """Every object of `kind` in `namespace` that carries the label `label` (any value)."""
    prefix, plural = RESOURCES[kind]
    return await _items(
        api, f"{prefix}/namespaces/{namespace}/{plural}", [("labelSelector", label)]
    )


async def nodes(api: client.ApiClient) -> list[dict[str, Any]]:
    """Every Node of the cluster."""
    return await _items(api, "/api/v1/nodes", [])


async def events_about(
    api: client.ApiClient, namespace: str, uid: str, *, limit: int = 200
) -> list[dict[str, Any]]:
    """The core/v1 events in `namespace` about the object with this uid (at most `limit`: a
    pod that keeps failing does not make the answer grow without end, since the kubelet counts
    repeats in one event)."""
    return await _items(
        api,
        f"/api/v1/namespaces/{namespace}/events",
        [("fieldSelector", f"involvedObject.uid={uid}"), ("limit", str(limit))],
    )


async def patch_status(
    api: client.ApiClient, kind: str, name: str, namespace: str, status: dict[str, Any]
) -> None:
    """Merge `status` into the object's status subresource."""
    await api.call_api(
        path_of(kind, name, namespace) + "/status",
        "PATCH",
        header_params={
            "Content-Type": "application/merge-patch+json",
            "Accept": "application/json",
        },
        body={"status": status},
        response_types_map={200: "object"},
        auth_settings=["BearerToken"],
        _return_http_data_only=True,
    )


class Conflict(Exception):
    """Someone else wrote the object first: it exists already (create) or has changed since it
    was read (replace). Read it again and retry."""


async def _write(api: client.ApiClient, method: str, path: str, body: dict[str, Any]) -> None:
    try:
        await api.call_api(
            path,
            method,
            header_params={"Content-Type": "application/json", "Accept": "application/json"},
            body=body,
            response_types_map={200: "object", 201: "object"},
            auth_settings=["BearerToken"],
            _return_http_data_only=True,
        )
    except ApiException as exc:
        if exc.status == 409:
            raise Conflict(path) from exc
        raise


async def create(api: client.ApiClient, body: dict[str, Any]) -> None:
    """Create the object; Conflict when it exists already."""
    meta = body["metadata"]
    prefix, plural = RESOURCES[body["kind"]]
    where = f"/namespaces/{meta['namespace']}" if meta.get("namespace") else ""
    await _write(api, "POST", f"{prefix}{where}/{plural}", body)


async def replace(api: client.ApiClient, body: dict[str, Any]) -> None:
    """Replace the object as read at `metadata.resourceVersion`; Conflict when it has changed
    since (optimistic concurrency: nothing another writer did is lost)."""
    meta = body["metadata"]
    if not meta.get("resourceVersion"):
        raise ValueError("replace needs the resourceVersion the object was read at")
    await _write(api, "PUT", path_of(body["kind"], meta["name"], meta.get("namespace")), body)
