"""The real node's pure parts: the pause image it makes, the mounts it would sweep, the images
it copies in. Running it is tests/node's."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

from gshare import devnode


def test_the_pause_image_is_an_oci_archive_containerd_names(tmp_path: Path) -> None:
    program = tmp_path / "pause"
    program.write_bytes(b"\x7fELF not really")
    made = devnode.pause_archive(program, "x/pause:abc")
    with tarfile.open(fileobj=io.BytesIO(made)) as archive:
        _check_archive(archive, program)


def _check_archive(archive: tarfile.TarFile, program: Path) -> None:
    names = archive.getnames()
    assert "oci-layout" in names
    index = json.load(archive.extractfile("index.json"))  # type: ignore[arg-type]
    (entry,) = index["manifests"]
    assert entry["annotations"]["io.containerd.image.name"] == "x/pause:abc"

    def blob(digest: str) -> bytes:
        data = archive.extractfile(f"blobs/sha256/{digest.split(':')[1]}").read()  # type: ignore[union-attr]
        assert hashlib.sha256(data).hexdigest() == digest.split(":")[1]  # content-addressed
        return data

    manifest = json.loads(blob(entry["digest"]))
    config = json.loads(blob(manifest["config"]["digest"]))
    assert config["config"]["Entrypoint"] == ["/pause"]
    assert config["config"]["User"] == "65535:65535"  # not root, like the upstream pause
    with tarfile.open(fileobj=io.BytesIO(blob(manifest["layers"][0]["digest"]))) as layer:
        member = layer.getmember("pause")
        assert member.mode == 0o755
        assert layer.extractfile(member).read() == program.read_bytes()  # type: ignore[union-attr]
    assert config["rootfs"]["diff_ids"] == [manifest["layers"][0]["digest"]]


def test_the_sweep_finds_mounts_below_its_folders_deepest_first() -> None:
    found = devnode.mounts_under(Path("/proc"))
    assert "/proc" in found
    assert found == sorted(found, key=lambda p: p.count("/"), reverse=True)
    assert devnode.mounts_under(Path("/nonexistent-gshare")) == []


def test_the_catalog_references_each_session_image() -> None:
    images = devnode.session_images(lambda name: f"local/{name}:dev")
    assert images == {
        "local/session-jupyterlab:dev": ["ghcr.io/gshare/session-jupyterlab:1"],
        "local/session-terminal:dev": ["ghcr.io/gshare/session-terminal:1"],
        "local/session-vscode:dev": ["ghcr.io/gshare/session-vscode:1"],
    }
