"""The internal key set in its file: private, created once, rotated, and seen by every process."""

from __future__ import annotations

import stat
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gshare.clusters.keystore import (
    FileKeyStore,
    KeyRing,
    KeyStoreError,
    load_or_create,
    rotate_if_due,
    rotate_now,
)
from gshare.clusters.tokens import InvalidToken, KeySet, new_key

START = datetime(2026, 1, 1, tzinfo=UTC)


class Ticking:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.value = 0.0

    def __call__(self) -> float:
        return self.value


class Counted:
    """A real file store that counts its reads."""

    def __init__(self, store: FileKeyStore) -> None:
        self.store = store
        self.reads = 0

    async def read(self) -> KeySet | None:
        self.reads += 1
        return await self.store.read()

    async def update(self, change):  # type: ignore[no-untyped-def]
        return await self.store.update(change)


async def test_the_key_file_is_private_and_reads_back(tmp_path: Path) -> None:
    store = FileKeyStore(tmp_path / "internal-keys.json")
    first = await load_or_create(store, START)
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    again = await load_or_create(store, START)
    assert again.jwks() == first.jwks()
    assert "d" not in again.jwks()["keys"][0]  # never the private part


def test_processes_creating_the_key_set_together_agree(tmp_path: Path) -> None:
    """The API and the worker start at once on a fresh data dir: one key set, not two."""
    path = tmp_path / "keys" / "internal-keys.json"
    script = (
        "import asyncio, sys, datetime, pathlib\n"
        "from gshare.clusters.keystore import FileKeyStore, load_or_create\n"
        "store = FileKeyStore(pathlib.Path(sys.argv[1]))\n"
        "keys = asyncio.run(load_or_create(store, datetime.datetime.now(datetime.UTC)))\n"
        "print(keys.current.kid)\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(path)], stdout=subprocess.PIPE)
        for _ in range(6)
    ]
    kids = {p.communicate(timeout=60)[0].decode().strip() for p in procs}
    assert len(kids) == 1
    assert "" not in kids
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert [p.name for p in path.parent.iterdir() if p.suffix == ".tmp"] == []


async def test_a_rotation_is_seen_at_once_by_a_token_of_the_new_key(tmp_path: Path) -> None:
    store = FileKeyStore(tmp_path / "internal-keys.json")
    ticks = Ticking()
    api = KeyRing(store, monotonic=ticks)
    first = await api.get(START)
    old_token = first.mint("c1", START + timedelta(days=30))
    assert await rotate_if_due(store, START + timedelta(days=10)) is False
    assert await rotate_if_due(store, START + timedelta(days=30)) is True  # the worker
    worker = await load_or_create(store, START + timedelta(days=30))
    new_token = worker.mint("c1", START + timedelta(days=30))

    ticks.value += 2  # well within max_age: the API has not read the file again on its own
    assert (await api.get(START)).current.kid == first.current.kid
    keys = await api.for_tokens([None, new_token], START + timedelta(days=30))
    assert keys.verify(new_token, START + timedelta(days=30)) == "c1"
    assert keys.verify(old_token, START + timedelta(days=30)) == "c1"  # still verifies

    # Once every token of the old key has expired, a later pass forgets it.
    assert await rotate_if_due(store, START + timedelta(days=31)) is False
    ticks.value += 10
    later = await api.get(START + timedelta(days=31))
    assert [k.kid for k in later.keys] == [worker.current.kid]


async def test_made_up_key_ids_cannot_make_every_request_read_the_store(tmp_path: Path) -> None:
    store = Counted(FileKeyStore(tmp_path / "internal-keys.json"))
    ticks = Ticking()
    ring = KeyRing(store, monotonic=ticks)
    forged = KeySet([new_key(START)]).mint("c1", START)  # a key id the store never held
    await ring.get(START)
    reads = store.reads
    for _ in range(50):
        await ring.for_tokens([forged, "not a token at all"], START)
    assert store.reads == reads  # within min_refresh of the last read: no more reads
    ticks.value += 1.5
    keys = await ring.for_tokens([forged], START)
    assert store.reads == reads + 1
    with pytest.raises(InvalidToken) as refused:
        keys.verify(forged, START)
    assert refused.value.reason == "unknown_key"


async def test_a_rotation_by_hand_can_forget_every_older_key(tmp_path: Path) -> None:
    store = FileKeyStore(tmp_path / "internal-keys.json")
    before = await load_or_create(store, START)
    token = before.mint("c1", START)

    kept = await rotate_now(store, START + timedelta(minutes=1), drop_old=False)
    overlapping = await load_or_create(store, START)
    assert overlapping.current.kid == kept.kid
    assert overlapping.verify(token, START + timedelta(minutes=2)) == "c1"

    fresh = await rotate_now(store, START + timedelta(minutes=2), drop_old=True)
    after = await load_or_create(store, START)
    assert [k.kid for k in after.keys] == [fresh.kid]
    with pytest.raises(InvalidToken):
        after.verify(token, START + timedelta(minutes=3))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not json",
        "[]",
        '{"keys": []}',
        '{"keys": [{"kid": "a"}]}',
        '{"keys": [{"kid": "a", "private_pem": "x", "created_at": "2026-01-01T00:00:00"}]}',
    ],
)
async def test_an_unreadable_key_file_is_a_clear_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "internal-keys.json"
    path.write_text(text)
    with pytest.raises(KeyStoreError, match=r"internal-keys\.json"):
        await load_or_create(FileKeyStore(path), START)
    assert path.read_text() == text  # nothing overwritten: the keys may still be recovered


async def test_a_store_out_of_reach_leaves_the_held_keys_working(tmp_path: Path) -> None:
    path = tmp_path / "internal-keys.json"
    ticks = Ticking()
    ring = KeyRing(FileKeyStore(path), monotonic=ticks)
    held = await ring.get(START)
    path.write_text("{ torn")  # unreadable for now
    ticks.value += 60
    assert (await ring.get(START)).current.kid == held.current.kid
    with pytest.raises(KeyStoreError):  # a process that holds nothing yet says why
        await KeyRing(FileKeyStore(path)).get(START)


async def test_forgotten_keys_stop_working_once_the_store_stays_unreadable(tmp_path: Path) -> None:
    """An unreadable store (a file left to root by a rotation, a Secret deleted) must not leave
    the keys held before working for ever."""
    path = tmp_path / "internal-keys.json"
    ticks = Ticking()
    ring = KeyRing(FileKeyStore(path), monotonic=ticks, stale_limit=300)
    await ring.get(START)
    path.write_text("{ torn")
    ticks.value += 200
    await ring.get(START)  # a while: still the keys held
    ticks.value += 101
    for _ in range(30):  # and no moment after, however the calls fall
        ticks.value += 0.7
        with pytest.raises(KeyStoreError):
            await ring.get(START)


async def test_requests_that_find_the_ring_due_share_one_read(tmp_path: Path) -> None:
    import asyncio

    store = Counted(FileKeyStore(tmp_path / "internal-keys.json"))
    await load_or_create(store.store, START)
    ring = KeyRing(store)
    sets = await asyncio.gather(*(ring.get(START) for _ in range(50)))
    assert store.reads == 1
    assert len({keys.current.kid for keys in sets}) == 1


async def test_an_unreadable_store_is_not_asked_again_on_every_request(tmp_path: Path) -> None:
    path = tmp_path / "internal-keys.json"
    path.write_text("{ torn")
    store = Counted(FileKeyStore(path))
    ticks = Ticking()
    ring = KeyRing(store, monotonic=ticks)
    for _ in range(50):
        with pytest.raises(KeyStoreError):
            await ring.get(START)
    assert store.reads == 1
    ticks.value += 1.5
    with pytest.raises(KeyStoreError):
        await ring.get(START)
    assert store.reads == 2


async def test_a_rotation_keeps_the_files_owner(tmp_path: Path) -> None:
    """Run as root (sudo gshare rotate-keys), the new file still belongs to the services' user,
    who must go on reading it."""
    import os

    path = tmp_path / "internal-keys.json"
    store = FileKeyStore(path)
    await load_or_create(store, START)
    owner = (4321, 4321) if os.geteuid() == 0 else (os.getuid(), os.getgid())
    if os.geteuid() == 0:
        os.chown(path, *owner)
    await rotate_now(store, START + timedelta(minutes=1), drop_old=True)
    info = path.stat()
    assert (info.st_uid, info.st_gid) == owner
    assert stat.S_IMODE(info.st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".tmp"] == []


async def test_a_store_that_never_answers_is_an_unreadable_one(tmp_path: Path) -> None:
    """Requests share one read: one that hangs must not hold them all for ever."""
    import asyncio

    class Hanging(Counted):
        async def read(self) -> KeySet | None:
            self.reads += 1
            await asyncio.Event().wait()
            return None

    store = Hanging(FileKeyStore(tmp_path / "internal-keys.json"))
    ring = KeyRing(store, read_timeout=0.2)
    outcomes = await asyncio.gather(*(ring.get(START) for _ in range(20)), return_exceptions=True)
    assert store.reads == 1
    assert all(isinstance(o, TimeoutError) for o in outcomes)
