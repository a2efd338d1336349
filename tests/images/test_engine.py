"""A machine that cannot run the images gets one line saying what to do, never a stack trace."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from gshare.devcluster import ROOT
from tests.containers import need_root

SCRIPTS = ["images.sh", "compose.sh"]


def _as_nobody(script: str, path: str) -> subprocess.CompletedProcess[str]:
    need_root("becoming another user")
    return subprocess.run(
        [
            shutil.which("runuser") or "/usr/sbin/runuser",
            "-u",
            "nobody",
            "--",
            "/bin/bash",
            str(ROOT / "hack" / script),
            "up",
        ],
        env={"PATH": path, "HOME": "/nonexistent"},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("script", SCRIPTS)
def test_without_the_engine_it_names_the_packages(script: str) -> None:
    # A folder the other user can read (pytest's own are private to root), with the few tools
    # the scripts use before they look for the engine.
    bin_dir = Path(tempfile.mkdtemp(prefix="gshare-bin-"))
    bin_dir.chmod(0o755)
    for tool in ("dirname", "sed", "sort", "cut", "sha256sum", "cat"):
        (bin_dir / tool).symlink_to(shutil.which(tool) or f"/usr/bin/{tool}")
    try:
        result = _as_nobody(script, str(bin_dir))
    finally:
        shutil.rmtree(bin_dir)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "engine: podman runc debootstrap podman-compose missing; as root on Debian: "
        "apt-get install podman runc debootstrap podman-compose"
    ]


@pytest.mark.parametrize("script", SCRIPTS)
def test_without_root_it_says_so(script: str) -> None:
    result = _as_nobody(script, "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1
    assert "run as root" in result.stderr
