"""What the demo reads from a session pod (built by the operator's own manifest builder) and
what it runs for each session type."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gshare.demo import programs
from gshare.demo.sessionhost import home_claim, runs, session_type
from gshare.operator import manifests
from tests.eventually import eventually_sync


def _pod(kind: str = "jupyterlab", *volumes: manifests.Volume) -> dict:
    spec = manifests.SessionSpec(
        session_id="0b9d6f8e-7a41-4c1e-9a56-3e1f0c2d4b5a",
        owner_id="7",
        session_type=kind,  # type: ignore[arg-type]
        image="img:1",
        cpu_millicores=500,
        memory_mib=512,
        volumes=volumes,
    )
    return manifests.pod(spec, manifests.OperatorConfig(), manifests.owner_reference("s", "u"))


HOME = manifests.Volume("home-0", "home", "/home/gshare", claim_name="vol-1", keep=True)
SHARED = manifests.Volume("shared-1", "shared", "/shared/data", "ReadWriteMany", claim_name="vol-2")


def test_the_home_folder_is_the_claim_mounted_at_home() -> None:
    assert home_claim(_pod("jupyterlab", SHARED, HOME)) == "vol-1"
    assert home_claim(_pod("jupyterlab", SHARED)) is None
    assert home_claim({"spec": {}}) is None


@pytest.mark.parametrize("kind", ["jupyterlab", "terminal", "vscode"])
def test_the_session_type_is_read_from_the_pods_command(kind: str) -> None:
    assert session_type(_pod(kind)) == kind


def test_a_pod_with_another_command_has_no_known_type() -> None:
    pod = _pod()
    pod["spec"]["containers"][0]["command"] = ["sh", "-c", "sleep 1"]
    assert session_type(pod) == "unknown"


def test_only_a_running_pod_not_being_deleted_gets_a_program() -> None:
    pod = _pod()
    assert not runs(pod)
    pod["status"] = {"phase": "Running"}
    assert runs(pod)
    pod["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    assert not runs(pod)
    assert not runs({"metadata": {}, "status": {"phase": "Pending"}})


@pytest.mark.parametrize("kind", ["jupyterlab", "terminal"])
def test_jupyter_listens_on_loopback_without_authentication_in_the_home_folder(
    kind: str, tmp_path: Path
) -> None:
    program = programs.program_for(kind, 43210, tmp_path)
    assert program.message == ""
    assert "--ServerApp.ip=127.0.0.1" in program.argv
    assert "--ServerApp.port=43210" in program.argv
    assert "--IdentityProvider.token=" in program.argv
    assert f"--ServerApp.root_dir={tmp_path}" in program.argv
    assert program.env["HOME"] == str(tmp_path)
    assert Path(program.argv[0]).is_file(), "make test installs the demo's JupyterLab"


def test_vscode_without_code_server_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GSHARE_DEMO_CODE_SERVER", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    program = programs.program_for("vscode", 43210, tmp_path)
    assert program.argv == ()
    assert "code-server" in program.message
    assert "Node 24" in program.message


def test_vscode_with_code_server_binds_loopback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GSHARE_DEMO_CODE_SERVER", "/opt/code-server/bin/code-server")
    program = programs.program_for("vscode", 43210, tmp_path)
    assert program.argv == (
        "/opt/code-server/bin/code-server",
        "--bind-addr",
        "127.0.0.1:43210",
        "--auth",
        "none",
        str(tmp_path),
    )


def test_a_program_ends_when_the_demo_is_killed_outright(tmp_path: Path) -> None:
    """The demo starts its programs so that they end with it, even on SIGKILL."""
    marker = tmp_path / "child.pid"
    parent = subprocess.Popen(  # a stand-in for the demo: starts a program, then waits
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time; from gshare.demo.nginx import with_parent; "
            "p = subprocess.Popen(with_parent(['sleep', '300'])); "
            f"open({str(marker)!r}, 'w').write(str(p.pid)); time.sleep(300)",
        ]
    )
    child = int(
        eventually_sync(
            lambda: marker.exists() and marker.read_text(),
            "the stand-in to start its program",
            timeout=30,
            interval=0.05,
        )
    )
    # The program is running once setpriv has set its parent-death signal and run it: before
    # that, a parent killed at once would outrun the arrangement itself.
    eventually_sync(
        lambda: _command(child) == "sleep",
        "the program to be running",
        timeout=30,
        interval=0.05,
    )
    parent.kill()
    parent.wait()
    eventually_sync(
        lambda: not Path(f"/proc/{child}").exists() or "Z" in _state(child),
        "the program to end with the demo",
        timeout=30,
        interval=0.05,
    )


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"
