"""`make test-docker` runs the backend's tests in a throw-away container and leaves nothing on
this machine (its console half runs the same way; `make test` runs the console's tests itself)."""

from __future__ import annotations

import subprocess

import pytest

from gshare.devcluster import ROOT
from tests.containers import engine_env

pytestmark = pytest.mark.usefixtures("images")


def _tree() -> str:
    """Every file git sees in the work tree, ignored ones included, with its state."""
    return subprocess.run(
        ["git", "status", "--porcelain", "--ignored", "--untracked-files=all"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_backend_tests_run_in_a_container_and_write_nothing_here() -> None:
    before = _tree()
    result = subprocess.run(
        # A real database test: the embedded PostgreSQL starts inside the container.
        ["bash", str(ROOT / "hack" / "test-docker.sh"), "backend", "tests/kit/test_db.py", "-q"],
        env=engine_env(),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert " passed" in result.stdout
    assert "failed" not in result.stdout
    assert _tree() == before, "nothing written in the work tree"
