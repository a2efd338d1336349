"""Every image runs as its own non-root user, which cannot change what the image runs, and
nothing it runs can write its root as the chart runs it."""

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
    # The image itself: its user cannot change what it runs, even on a writable root.
    own = podman(
        "run", "--rm", "--entrypoint", "sh", image(name), "-c",
        "id -u; for d in / /usr /usr/bin /opt /etc; do touch $d/probe 2>&1; done; true",
    ).stdout.splitlines()  # fmt: skip
    assert own[0] == str(uid)
    assert len(own) == 6, own
    assert all("Permission denied" in line for line in own[1:]), own
    # As the chart runs it: not even its home is writable, only the volumes it is given.
    read_only = podman(
        "run", "--rm", "--read-only", "--entrypoint", "sh", image(name), "-c",
        'touch "$HOME/probe" 2>&1; true',
    ).stdout  # fmt: skip
    assert "Read-only file system" in read_only
