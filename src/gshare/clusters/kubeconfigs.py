"""Where cluster kubeconfigs live: never in the database. Locally a 0600 file per cluster under
the data dir. (In-cluster deployments keep them in a Secret in gshare-system; that store comes
with the Helm chart.)"""

from __future__ import annotations

import os
import uuid
from pathlib import Path


class FileKubeconfigStore:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, cluster_id: uuid.UUID) -> Path:
        return self.folder / f"{cluster_id}.kubeconfig"

    def put(self, cluster_id: uuid.UUID, text: str) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        os.chmod(self.folder, 0o700)
        path = self._path(cluster_id)
        temporary = path.with_suffix(".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(temporary, path)

    def get(self, cluster_id: uuid.UUID) -> str | None:
        path = self._path(cluster_id)
        return path.read_text() if path.exists() else None

    def delete(self, cluster_id: uuid.UUID) -> None:
        self._path(cluster_id).unlink(missing_ok=True)
