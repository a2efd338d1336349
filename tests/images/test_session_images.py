"""Each session image runs the operator's command for it (manifests.COMMANDS) as the operator's
pods run it: uid 1000, a read-only root, /tmp and ~/.cache of their own, the home volume at
/home/gshare; its page answers on 8080 and what it writes in the home stays on the volume."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from gshare.devcluster import free_port
from gshare.operator.manifests import APP_PORT, COMMANDS
from tests.containers import Container, container, image, owned_dir, read_only_as_user
from tests.eventually import eventually_sync

pytestmark = pytest.mark.usefixtures("images")

USER = 1000
IMAGES = {
    "jupyterlab": "session-jupyterlab",
    "terminal": "session-terminal",
    "vscode": "session-vscode",
}


@contextmanager
def _serve(session_type: str, home: Path) -> Iterator[tuple[Container, str]]:
    port = free_port()
    options = (
        *read_only_as_user(USER),
        "--tmpfs", "/home/gshare/.cache:rw,U,mode=0700",
        "--volume", f"{owned_dir(home, USER)}:/home/gshare",
        "--publish", f"127.0.0.1:{port}:{APP_PORT}",
        "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
    )  # fmt: skip
    with container(image(IMAGES[session_type]), *COMMANDS[session_type], options=options) as c:
        base = f"http://127.0.0.1:{port}"

        def page() -> bool:
            if not c.running():
                raise AssertionError(f"the {session_type} program exited:\n{c.logs()}")
            try:
                return httpx.get(f"{base}/", timeout=3, follow_redirects=True).status_code == 200
            except httpx.HTTPError:
                return False

        eventually_sync(page, f"the {session_type} page", timeout=90, interval=0.3)
        yield c, base


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def test_jupyterlab_serves_its_api_and_keeps_a_notebook_on_the_volume(home: Path) -> None:
    with _serve("jupyterlab", home) as (lab, base), httpx.Client(base_url=base) as client:
        api = client.get("/api")
        assert api.status_code == 200
        assert "version" in api.json()
        assert "JupyterLab" in client.get("/lab").text
        # What the page sends with every change: the _xsrf cookie /lab set, as a header.
        client.headers["X-XSRFToken"] = client.cookies["_xsrf"]
        notebook = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        put = client.put(
            "/api/contents/kept.ipynb",
            json={"type": "notebook", "format": "json", "content": notebook},
        )
        assert put.status_code in (200, 201), put.text
        kernel = client.post("/api/kernels", json={"name": "python3"})
        assert kernel.status_code == 201, f"a kernel starts on a read-only root: {kernel.text}"
        lab.stop()
    assert (home / "kept.ipynb").is_file(), "the notebook is on the volume after the container"


def test_terminal_serves_ttyd_and_a_shell_that_writes_the_home(home: Path) -> None:
    with _serve("terminal", home) as (terminal, base):
        page = httpx.get(f"{base}/")
        assert "ttyd" in page.text.lower()
        assert (
            terminal.exec("bash", "-lc", "echo kept > ~/kept.txt && id -u").stdout.strip() == "1000"
        )
        terminal.stop()
    assert (home / "kept.txt").read_text() == "kept\n"


def test_vscode_serves_code_server_with_its_state_on_the_volume(home: Path) -> None:
    with _serve("vscode", home) as (code, base):
        page = httpx.get(f"{base}/", follow_redirects=True)
        assert "vscode" in page.text.lower() or "code-server" in page.text.lower()
        code.exec("sh", "-c", "echo kept > /home/gshare/kept.txt")
        code.stop()
    assert (home / "kept.txt").read_text() == "kept\n"
    # code-server keeps its own state in the home (settings, extensions), not on the root.
    assert (home / ".local" / "share" / "code-server").is_dir()


def test_every_session_type_the_operator_runs_has_an_image() -> None:
    assert set(COMMANDS) == set(IMAGES)
