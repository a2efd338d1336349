"""Every image runs as its own non-root user, and nothing it runs can write its root."""

from __future__ import annotations

import pytest

from tests.containers import image, podman

pytestmark = pytest.mark.usefixtures("images")

USERS = {
    "gshare": 10001,
    "session-jupyterlab": 1000,
    "session-terminal": 1000,
    "session-vscode": 1000,
    "postgres": 999,
}


@pytest.mark.parametrize("name", sorted(USERS))
def test_the_image_runs_as_its_user_on_a_read_only_root(name: str) -> None:
    uid = USERS[name]
    configured = podman("image", "inspect", "--format", "{{.Config.User}}", image(name)).stdout
    assert configured.strip() == f"{uid}:{uid}", "a numeric user, as runAsNonRoot can check"
    probe = podman(
        "run", "--rm", "--read-only", "--entrypoint", "sh", image(name), "-c",
        'id -u; touch /probe 2>&1; touch /usr/probe 2>&1; touch "$HOME/probe" 2>&1; true',
        check=True,
    ).stdout.splitlines()  # fmt: skip
    assert probe[0] == str(uid)
    assert len(probe) == 4, probe
    assert all("Read-only file system" in line for line in probe[1:]), probe
