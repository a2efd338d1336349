"""Where the internal key set is kept: a 0600 JSON file under the data dir, created once,
rotated on schedule and read again by every process when another one changes it."""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

from gshare.clusters.tokens import KeySet, SigningKey, new_key

ROTATE_AFTER = timedelta(days=30)


def _read(path: Path) -> KeySet:
    raw = json.loads(path.read_text())
    return KeySet(
        [
            SigningKey(k["kid"], k["private_pem"].encode(), datetime.fromisoformat(k["created_at"]))
            for k in raw["keys"]
        ]
    )


def _write_temporary(keys: KeySet, folder: Path) -> Path:
    """The key set in a new 0600 file of its own next to where it will live."""
    payload = {
        "keys": [
            {
                "kid": k.kid,
                "private_pem": k.private_pem.decode(),
                "created_at": k.created_at.isoformat(),
            }
            for k in keys.keys
        ]
    }
    descriptor, name = tempfile.mkstemp(dir=folder, prefix=".internal-keys-", suffix=".tmp")
    with os.fdopen(descriptor, "w") as handle:  # mkstemp creates it 0600
        json.dump(payload, handle)
    return Path(name)


def load_or_create(path: Path, now: datetime) -> KeySet:
    """The key set stored at `path` (mode 0600), created with one key the first time.

    Creation is atomic and exclusive: when the API and the worker start together, one of them
    writes the file and both use what it holds."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = _write_temporary(KeySet([new_key(now)]), path.parent)
        try:
            os.link(temporary, path)  # fails if another process got there first
        except FileExistsError:
            pass
        finally:
            temporary.unlink()
    return _read(path)


def save(keys: KeySet, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.replace(_write_temporary(keys, path.parent), path)


def rotate_if_due(path: Path, now: datetime, every: timedelta = ROTATE_AFTER) -> bool:
    """Start signing with a new key once the current one is `every` old (older keys keep
    verifying for a token lifetime). Processes that share the file take turns."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        keys = load_or_create(path, now)
        if now - keys.current.created_at < every:
            before = len(keys.keys)
            keys.drop_retired(now)
            if len(keys.keys) != before:
                save(keys, path)  # forget keys whose tokens have all expired
            return False
        keys.rotate(now)
        save(keys, path)
        return True


class KeyFile:
    """The key set as a long-running process sees it: read again whenever the file changes
    (another process rotated it), so every process verifies what any of them signs."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._keys: KeySet | None = None
        self._stamp: tuple[int, int] | None = None

    def get(self, now: datetime) -> KeySet:
        try:
            info = self.path.stat()
            stamp: tuple[int, int] | None = (info.st_mtime_ns, info.st_ino)
        except FileNotFoundError:
            stamp = None
        if self._keys is None or stamp != self._stamp:
            # Stamped from before the read: if the file is replaced meanwhile, the next call
            # sees a new stamp and reads again.
            self._keys = load_or_create(self.path, now)
            self._stamp = stamp
        return self._keys
