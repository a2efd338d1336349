"""Real containers in tests: podman with the project's settings, and the images `make images`
builds (hack/images.sh), built once per run and cached by podman's layer cache."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from gshare.devcluster import ROOT

CONF = ROOT / "hack" / "containers.conf"
PREFIX = "localhost/gshare"
TAG = "dev"
# Every container and network a test makes carries it, so a run can clear what it left.
LABEL = "io.gshare.test=1"


def engine_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GSHARE_")}
    env |= {"CONTAINERS_CONF": str(CONF), **extra}
    return env


def podman(
    *args: str, check: bool = True, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        ["podman", *args], env=engine_env(), capture_output=True, text=True, timeout=timeout
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"podman {' '.join(args)} failed ({result.returncode}):\n{result.stderr}"
        )
    return result


def image(name: str) -> str:
    return f"{PREFIX}/{name}:{TAG}"


def need_root(what: str) -> None:
    """Root is what `what` needs: outside CI a run without it skips, saying so; in CI, where
    root is given, the test goes on and fails with the real reason rather than skip."""
    if os.geteuid() != 0 and not os.environ.get("CI"):
        pytest.skip(f"{what} needs root; this run is not root")


def build_images() -> None:
    """Every image, as `make images` builds it, or a failure naming why."""
    need_root("building and running the images (podman, runc)")
    result = subprocess.run(
        ["bash", str(ROOT / "hack" / "images.sh")],
        env=engine_env(GSHARE_IMAGE_TAG=TAG),
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if result.returncode != 0:
        raise AssertionError(f"hack/images.sh failed:\n{result.stderr[-6000:]}")


def unique(prefix: str) -> str:
    return f"gshare-test-{prefix}-{uuid.uuid4().hex[:8]}"


@dataclass
class Container:
    name: str

    def logs(self) -> str:
        result = podman("logs", self.name, check=False)
        return result.stdout + result.stderr

    def exec(self, *command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return podman("exec", self.name, *command, check=check)

    def stop(self, timeout_s: int = 30) -> int:
        """SIGTERM, then its exit code (SIGKILL only after `timeout_s`)."""
        podman("stop", "--time", str(timeout_s), self.name, timeout=timeout_s + 60)
        return int(podman("inspect", "--format", "{{.State.ExitCode}}", self.name).stdout)

    def running(self) -> bool:
        state = podman("inspect", "--format", "{{.State.Running}}", self.name, check=False)
        return state.stdout.strip() == "true"


@contextmanager
def container(image_ref: str, *args: str, options: tuple[str, ...] = ()) -> Iterator[Container]:
    """A detached container of `image_ref` running `args`, removed afterwards."""
    name = unique("c")
    podman("run", "--detach", "--name", name, "--label", LABEL, *options, image_ref, *args)
    try:
        yield Container(name)
    finally:
        podman("rm", "--force", "--time", "5", name, check=False)


@contextmanager
def network() -> Iterator[str]:
    name = unique("net")
    podman("network", "create", "--label", LABEL, name)
    try:
        yield name
    finally:
        podman("network", "rm", "--force", name, check=False)


def answers(url: str, expect: int = 200) -> bool:
    try:
        return httpx.get(url, timeout=3).status_code == expect
    except httpx.HTTPError:
        return False


def read_only_as_user(uid: int) -> tuple[str, ...]:
    """How the chart and the operator run every image: its user, a read-only root, /tmp."""
    return ("--read-only", "--user", f"{uid}:{uid}", "--tmpfs", "/tmp:rw,mode=1777")


def owned_dir(path: Path, uid: int) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, uid, uid)
    return path
