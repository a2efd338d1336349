"""Where cluster kubeconfigs live: never in the database.

Locally, a 0600 file per cluster under the data dir. When the API runs inside Kubernetes, a
Secret per cluster in the secrets namespace of its own cluster (GSHARE_SECRETS_NAMESPACE,
gshare-secrets; chosen by GSHARE_KUBECONFIG_STORE)."""

from __future__ import annotations

import asyncio
import base64
import binascii
import os
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from kubernetes_asyncio import client, config

from gshare.kit import kubeapi
from gshare.kit.settings import Settings

SECRET_NAMESPACE = "gshare-secrets"
CLUSTER_LABEL = "gshare.io/cluster"


class KubeconfigStore(Protocol):
    async def put(self, cluster_id: uuid.UUID, text: str) -> None: ...

    async def get(self, cluster_id: uuid.UUID) -> str | None: ...

    async def delete(self, cluster_id: uuid.UUID) -> None: ...

    async def stored(self) -> dict[uuid.UUID, datetime]:
        """Every kubeconfig kept, with when it was first written."""
        ...


class FileKubeconfigStore:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, cluster_id: uuid.UUID) -> Path:
        return self.folder / f"{cluster_id}.kubeconfig"

    def _write(self, cluster_id: uuid.UUID, text: str) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        os.chmod(self.folder, 0o700)
        path = self._path(cluster_id)
        temporary = path.with_suffix(".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(temporary, path)

    async def put(self, cluster_id: uuid.UUID, text: str) -> None:
        await asyncio.to_thread(self._write, cluster_id, text)

    async def get(self, cluster_id: uuid.UUID) -> str | None:
        path = self._path(cluster_id)
        return path.read_text() if path.exists() else None

    async def delete(self, cluster_id: uuid.UUID) -> None:
        self._path(cluster_id).unlink(missing_ok=True)

    async def stored(self) -> dict[uuid.UUID, datetime]:
        found = {}
        for path in self.folder.glob("*.kubeconfig") if self.folder.exists() else []:
            try:
                found[uuid.UUID(path.stem)] = datetime.fromtimestamp(path.stat().st_mtime, UTC)
            except (ValueError, FileNotFoundError):
                continue
        return found


ConfigurationFactory = Callable[[], Awaitable[client.Configuration]]


async def in_cluster_configuration() -> client.Configuration:
    configuration = client.Configuration()
    config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    return configuration


class SecretKubeconfigStore:
    """One Secret per registered cluster in the secrets namespace of the cluster the API runs
    in."""

    def __init__(
        self,
        configuration: ConfigurationFactory = in_cluster_configuration,
        namespace: str = SECRET_NAMESPACE,
    ) -> None:
        self.configuration = configuration
        self.namespace = namespace

    @staticmethod
    def name_of(cluster_id: uuid.UUID) -> str:
        return f"gshare-cluster-{cluster_id}"

    async def _api(self) -> client.ApiClient:
        return client.ApiClient(await self.configuration())

    async def put(self, cluster_id: uuid.UUID, text: str) -> None:
        """Created (all the API may do: it reads and changes no kubeconfig once written), or
        replaced when it exists (the worker, for the cluster it runs in)."""
        api = await self._api()
        try:
            body = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": self.name_of(cluster_id),
                    "namespace": self.namespace,
                    "labels": {
                        "app.kubernetes.io/managed-by": "gshare-api",
                        CLUSTER_LABEL: str(cluster_id),
                    },
                },
                "type": "Opaque",
                "stringData": {"kubeconfig": text},
            }
            try:
                await kubeapi.create(api, body)
            except kubeapi.Conflict:
                await kubeapi.apply(api, body, "gshare-api")
        finally:
            await api.close()

    async def get(self, cluster_id: uuid.UUID) -> str | None:
        api = await self._api()
        try:
            secret = await kubeapi.get(api, "Secret", self.name_of(cluster_id), self.namespace)
        finally:
            await api.close()
        data = secret.get("data") if isinstance(secret, dict) else None
        value = data.get("kubeconfig") if isinstance(data, dict) else None
        if not value:
            return None
        try:
            return base64.b64decode(str(value), validate=True).decode()
        except (binascii.Error, ValueError) as exc:
            raise ValueError(
                f"the Secret {self.name_of(cluster_id)} holds no readable kubeconfig"
            ) from exc

    async def delete(self, cluster_id: uuid.UUID) -> None:
        api = await self._api()
        try:
            await kubeapi.delete(api, "Secret", self.name_of(cluster_id), self.namespace)
        finally:
            await api.close()

    async def stored(self) -> dict[uuid.UUID, datetime]:
        api = await self._api()
        try:
            items = await kubeapi.listed(api, "Secret", self.namespace, CLUSTER_LABEL)
        finally:
            await api.close()
        found = {}
        for item in items:
            meta = item.get("metadata") or {}
            try:
                cluster_id = uuid.UUID(str((meta.get("labels") or {}).get(CLUSTER_LABEL)))
                created = datetime.fromisoformat(str(meta.get("creationTimestamp")))
            except ValueError:
                continue
            if meta.get("name") == self.name_of(cluster_id):
                found[cluster_id] = created
        return found


def running_in_kubernetes() -> bool:
    """Kubernetes tells every pod where its API server is."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


def store_for(settings: Settings) -> KubeconfigStore:
    """Secrets when running inside Kubernetes (or when asked), files otherwise."""
    choice = settings.kubeconfig_store
    if choice == "auto":
        choice = "secret" if running_in_kubernetes() else "file"
    if choice == "secret":
        return SecretKubeconfigStore(namespace=settings.secrets_namespace)
    return FileKubeconfigStore(settings.data_dir / "clusters")
