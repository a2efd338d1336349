"""What the demo runs on the host for each session type, in place of the catalog's images.

Like the images, each program listens on one port (here a free loopback one), has no
authentication of its own (the ingress's access check guards it) and works in the session's
home folder:

- `jupyterlab`: JupyterLab, from the demo's own virtual environment (`make demo` installs it).
- `terminal`: Jupyter Notebook's terminal page (one full-page terminal, made when first
  opened). The terminal image runs ttyd, which is not packaged here; this is a real shell in
  the browser all the same.
- `vscode`: code-server when it is installed (it needs Node 24); otherwise a page that says so.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from gshare.devcluster import ROOT

SESSIONS_VENV = ROOT / ".cache" / "demo" / "sessions"
NO_VSCODE = (
    "VS Code in the browser (code-server) is not installed on this machine, so this demo "
    "session has nothing to show. code-server needs Node 24: install it with `npm install "
    "--global code-server`, then restart `make demo`. JupyterLab and terminal sessions work "
    "without it."
)


@dataclass(frozen=True)
class Program:
    """A command to start, or, when `message` is set, a page to serve in its place."""

    argv: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    message: str = ""


def jupyter() -> str | None:
    found = os.environ.get("GSHARE_DEMO_JUPYTER") or str(SESSIONS_VENV / "bin" / "jupyter")
    return found if Path(found).is_file() else shutil.which("jupyter")


def code_server() -> str | None:
    return os.environ.get("GSHARE_DEMO_CODE_SERVER") or shutil.which("code-server")


def _jupyter(app: str, port: int, home: Path) -> tuple[str, ...]:
    """`jupyter lab` or `jupyter notebook` on `port`, working in `home`."""
    found = jupyter()
    if found is None:
        raise LookupError("JupyterLab is not installed: run `make demo-deps`")
    argv = [
        found,
        app,
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        # No authentication of its own, as in the image: nginx's access check guards it.
        "--IdentityProvider.token=",
        "--ServerApp.password=",
        # Requests arrive with the session's host name, not a loopback one.
        "--ServerApp.allow_remote_access=True",
        f"--ServerApp.root_dir={home}",
    ]
    if app == "lab":
        # The demo's machine may have no way out; nothing should try.
        argv.append("--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate")
    else:
        argv.append("--JupyterNotebookApp.default_url=/terminals/1")
    if os.geteuid() == 0:
        # The demo runs as whoever started it; the image runs as an unprivileged user.
        argv.append("--allow-root")
    return tuple(argv)


def program_for(session_type: str, port: int, home: Path) -> Program:
    """The program for a session of this type, listening on `port`, working in `home`."""
    env = {
        "HOME": str(home),
        "SHELL": "/bin/bash",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
        "JUPYTER_RUNTIME_DIR": str(home / ".local" / "share" / "jupyter" / "runtime"),
    }
    if session_type == "jupyterlab":
        return Program(_jupyter("lab", port, home), env)
    if session_type == "terminal":
        return Program(_jupyter("notebook", port, home), env)
    if session_type == "vscode":
        found = code_server()
        if found is None:
            return Program(message=NO_VSCODE)
        argv = (found, "--bind-addr", f"127.0.0.1:{port}", "--auth", "none", str(home))
        return Program(argv, env)
    return Program(message=f"The demo has no program for sessions of type {session_type!r}.")
