"""Where the internal key set is kept, and how every process comes to see the same one.

Two stores, chosen like the kubeconfig store (GSHARE_KEY_STORE): a 0600 JSON file under the
data dir for processes that share one host, or the Secret `gshare-internal-keys` in the secrets
namespace (GSHARE_SECRETS_NAMESPACE) inside Kubernetes, where API replicas and the worker share
it. Every change is an atomic read-modify-write (a file lock; the Secret's resourceVersion), so
two processes that create or rotate at once agree on one result. Never in the database: a
database backup alone can neither forge an operator token nor a session ticket.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import fcntl
import json
import logging
import os
import random
import tempfile
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import jwt
from kubernetes_asyncio import client

from gshare.clusters.kubeconfigs import (
    SECRET_NAMESPACE,
    ConfigurationFactory,
    in_cluster_configuration,
    running_in_kubernetes,
)
from gshare.clusters.tokens import KeySet, SigningKey, new_key
from gshare.kit import kubeapi
from gshare.kit.settings import Settings

log = logging.getLogger(__name__)
ROTATE_AFTER = timedelta(days=30)
KEYS_FILE = "internal-keys.json"
SECRET_NAME = "gshare-internal-keys"
SECRET_KEY = "keys.json"
WRITE_ATTEMPTS = 8

# What to store given what is stored (None: nothing yet); returning None leaves it as it is.
Change = Callable[[KeySet | None], KeySet | None]


class KeyStoreError(Exception):
    """The stored key set cannot be read or written; the message says where and why."""


def encode(keys: KeySet) -> str:
    return json.dumps(
        {
            "keys": [
                {
                    "kid": k.kid,
                    "private_pem": k.private_pem.decode(),
                    "created_at": k.created_at.isoformat(),
                }
                for k in keys.keys
            ]
        }
    )


def decode(text: str, where: str) -> KeySet:
    try:
        raw = json.loads(text)
        keys = [
            SigningKey(k["kid"], k["private_pem"].encode(), datetime.fromisoformat(k["created_at"]))
            for k in raw["keys"]
        ]
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise KeyStoreError(f"{where} holds no readable key set: {exc}") from exc
    if not keys or any(k.created_at.tzinfo is None for k in keys):
        raise KeyStoreError(f"{where} holds no key with a time zone")
    return KeySet(keys)


class KeyStore(Protocol):
    async def read(self) -> KeySet | None: ...

    async def update(self, change: Change) -> KeySet | None:
        """Apply `change` to what is stored, atomically; what is stored afterwards."""
        ...


class FileKeyStore:
    """A 0600 JSON file; changes take turns on a lock file beside it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> KeySet | None:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return None
        return decode(text, str(self.path))

    def _update(self, change: Change) -> KeySet | None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            current = self._read()
            wanted = change(current)
            if wanted is None:
                return current
            self._replace(encode(wanted))
            return wanted

    def _replace(self, text: str) -> None:
        """Write `text` in full beside the file, then put it in the file's place: a crash at
        any moment leaves the old key set or the new one, never a torn or empty file."""
        descriptor, name = tempfile.mkstemp(
            dir=self.path.parent, prefix=".internal-keys-", suffix=".tmp"
        )
        try:
            with os.fdopen(descriptor, "w") as handle:  # mkstemp creates it 0600
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            self._keep_owner(name)
            os.replace(name, self.path)
        except BaseException:
            Path(name).unlink(missing_ok=True)  # no stray copy of the keys
            raise
        folder = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)

    def _keep_owner(self, name: str) -> None:
        """A rotation run as root (sudo gshare rotate-keys) leaves the file to the user the
        services run as, who could not read it otherwise."""
        try:
            info = self.path.stat()
        except FileNotFoundError:
            return
        if os.geteuid() == 0 and (info.st_uid, info.st_gid) != (0, 0):
            os.chown(name, info.st_uid, info.st_gid)

    async def read(self) -> KeySet | None:
        return await asyncio.to_thread(self._read)

    async def update(self, change: Change) -> KeySet | None:
        return await asyncio.to_thread(self._update, change)


class SecretKeyStore:
    """One Secret in the secrets namespace, written only at the resourceVersion it was read
    at."""

    def __init__(
        self,
        configuration: ConfigurationFactory = in_cluster_configuration,
        namespace: str = SECRET_NAMESPACE,
    ) -> None:
        self.configuration = configuration
        self.namespace = namespace

    @property
    def where(self) -> str:
        return f"the Secret {self.namespace}/{SECRET_NAME}"

    async def _get(self, api: client.ApiClient) -> tuple[dict[str, Any] | None, KeySet | None]:
        secret = await kubeapi.get(api, "Secret", SECRET_NAME, self.namespace)
        data = secret.get("data") if secret else None
        value = data.get(SECRET_KEY) if isinstance(data, dict) else None
        if not value:
            return secret, None
        try:
            text = base64.b64decode(str(value), validate=True).decode()
        except (binascii.Error, ValueError) as exc:
            raise KeyStoreError(f"{self.where} holds no readable key set") from exc
        return secret, decode(text, self.where)

    async def read(self) -> KeySet | None:
        api = client.ApiClient(await self.configuration())
        try:
            return (await self._get(api))[1]
        finally:
            await api.close()

    async def update(self, change: Change) -> KeySet | None:
        api = client.ApiClient(await self.configuration())
        try:
            for _ in range(WRITE_ATTEMPTS):
                secret, current = await self._get(api)
                wanted = change(current)
                if wanted is None:
                    return current
                value = base64.b64encode(encode(wanted).encode()).decode()
                try:
                    if secret is None:
                        await kubeapi.create(api, self._body({}, value))
                    else:
                        await kubeapi.replace(api, self._body(secret, value))
                except kubeapi.Conflict:
                    # Another process wrote first: decide again on what it wrote, after a
                    # short random pause so that the writers do not collide again.
                    await asyncio.sleep(random.uniform(0.05, 0.25))  # noqa: S311
                    continue
                return wanted
        finally:
            await api.close()
        raise KeyStoreError(f"{self.where} kept changing; gave up after {WRITE_ATTEMPTS} tries")

    def _body(self, secret: dict[str, Any], value: str) -> dict[str, Any]:
        """The Secret as read, with the key set replaced: its other keys, labels and
        annotations are kept."""
        meta = secret.get("metadata") or {}
        data = secret.get("data") if isinstance(secret.get("data"), dict) else {}
        metadata: dict[str, Any] = {
            "name": SECRET_NAME,
            "namespace": self.namespace,
            "labels": {"app.kubernetes.io/managed-by": "gshare", **(meta.get("labels") or {})},
        }
        if meta.get("annotations"):
            metadata["annotations"] = meta["annotations"]
        if meta.get("resourceVersion"):
            metadata["resourceVersion"] = meta["resourceVersion"]
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": metadata,
            "type": "Opaque",
            "data": {**(data or {}), SECRET_KEY: value},
        }


def key_store_for(settings: Settings) -> KeyStore:
    """The Secret when running inside Kubernetes (or when asked), the file otherwise."""
    choice = settings.key_store
    if choice == "auto":
        choice = "secret" if running_in_kubernetes() else "file"
    if choice == "secret":
        return SecretKeyStore(namespace=settings.secrets_namespace)
    return FileKeyStore(settings.data_dir / KEYS_FILE)


async def load_or_create(store: KeyStore, now: datetime) -> KeySet:
    """The stored key set, created with one key the first time (by exactly one process, when
    several start at once)."""
    keys = await store.read()
    if keys is None:
        keys = await store.update(lambda current: None if current else KeySet([new_key(now)]))
    assert keys is not None
    return keys


async def rotate_if_due(store: KeyStore, now: datetime, every: timedelta = ROTATE_AFTER) -> bool:
    """Start signing with a new key once the current one is `every` old; older keys keep
    verifying for a token lifetime, then are forgotten. True when this call rotated."""
    rotated = False

    def change(current: KeySet | None) -> KeySet | None:
        nonlocal rotated
        rotated = False  # the change may be decided again after a conflict
        if current is None:
            return KeySet([new_key(now)])
        if now - current.current.created_at < every:
            before = len(current.keys)
            current.drop_retired(now)
            return current if len(current.keys) != before else None
        current.rotate(now)
        rotated = True
        return current

    await store.update(change)
    return rotated


async def rotate_now(store: KeyStore, now: datetime, *, drop_old: bool) -> SigningKey:
    """A new signing key from now on. With `drop_old`, every older key is forgotten at once,
    so nothing signed before verifies any more (after a compromise); otherwise older keys keep
    verifying for a token lifetime, as in a scheduled rotation."""
    fresh = new_key(now)

    def change(current: KeySet | None) -> KeySet:
        if current is None or drop_old:
            return KeySet([fresh])
        current.keys.append(fresh)
        current.drop_retired(now)
        return current

    await store.update(change)
    return fresh


def _same_loop(future: asyncio.Future[KeySet]) -> bool:
    """A read under way can be shared only within its own event loop."""
    try:
        return future.get_loop() is asyncio.get_running_loop()
    except RuntimeError:
        return False


def _kid_of(token: str) -> str | None:
    try:
        kid = jwt.get_unverified_header(token).get("kid")
    except jwt.PyJWTError:
        return None
    return kid if isinstance(kid, str) else None


class KeyRing:
    """The key set as a long-running process sees it: read again once it is `max_age` old,
    and at once when a token names a key it does not hold (another process rotated), though
    at most once per `min_refresh`, so that made-up key ids cannot hammer the store. Requests
    that find it due share one read. While the store cannot be read, the keys held keep
    working for `stale_limit` at most (an API server restarting), then nothing verifies until
    it can be read again: a store made unreadable must not leave forgotten keys working."""

    def __init__(
        self,
        store: KeyStore,
        *,
        max_age: float = 10.0,
        min_refresh: float = 1.0,
        stale_limit: float = 300.0,
        read_timeout: float = 10.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.read_timeout = read_timeout
        self.store = store
        self.max_age = max_age
        self.min_refresh = min_refresh
        self.stale_limit = stale_limit
        self.monotonic = monotonic
        self._keys: KeySet | None = None
        self._read_at = float("-inf")  # when a read was last tried
        self._good_at = float("-inf")  # when one last succeeded
        self._failure: Exception | None = None
        self._reading: asyncio.Future[KeySet] | None = None

    async def _reload(self, now: datetime) -> KeySet:
        reading = self._reading
        if reading is not None and not reading.done() and _same_loop(reading):
            return await asyncio.shield(reading)
        self._reading = asyncio.ensure_future(self._read(now))
        return await asyncio.shield(self._reading)

    async def _read(self, now: datetime) -> KeySet:
        started = self._read_at = self.monotonic()
        try:
            # A store that does not answer is a store that cannot be read: the requests that
            # share this read must not wait on it for ever.
            fresh = await asyncio.wait_for(load_or_create(self.store, now), self.read_timeout)
        except Exception as exc:
            self._failure = exc
            if self._keys is None or started - self._good_at > self.stale_limit:
                raise
            # The store is out of reach for now: the keys held keep working a while, and the
            # next read is tried after min_refresh or max_age again.
            log.warning("cannot read the internal key set; using the one held", exc_info=True)
            return self._keys
        self._failure, self._good_at = None, started
        # Keys already held keep their parsed form: parsing an RSA key costs milliseconds.
        held = {(k.kid, k.private_pem): k for k in (self._keys.keys if self._keys else [])}
        self._keys = KeySet([held.get((k.kid, k.private_pem), k) for k in fresh.keys])
        return self._keys

    async def get(self, now: datetime) -> KeySet:
        since = self.monotonic() - self._read_at
        if self._failure is not None:
            if since >= self.min_refresh:
                return await self._reload(now)  # which decides whether the held keys still do
            # A read failed moments ago: answer as it did rather than ask the store again.
            if self._keys is None or self._read_at - self._good_at > self.stale_limit:
                raise self._failure
            return self._keys
        if self._keys is None or since >= self.max_age:
            return await self._reload(now)
        return self._keys

    async def for_tokens(self, tokens: Iterable[str | None], now: datetime) -> KeySet:
        """The key set, read again first if one of `tokens` names a key not held."""
        keys = await self.get(now)
        held = {k.kid for k in keys.keys}
        unknown = any(
            (kid := _kid_of(token)) is not None and kid not in held for token in tokens if token
        )
        if unknown and self.monotonic() - self._read_at >= self.min_refresh:
            return await self._reload(now)
        return keys
