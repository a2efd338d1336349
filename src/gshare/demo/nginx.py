"""The demo's nginx process: started with a configuration from `demo.ingress`, reloaded when
that configuration changes, stopped with the demo. Loopback only."""

from __future__ import annotations

import logging
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from gshare.demo.ingress import Layout

log = logging.getLogger("gshare.demo.nginx")
TEMP_FOLDERS = ("body", "proxy", "fastcgi", "uwsgi", "scgi")


def binary() -> str | None:
    """Debian installs nginx in /usr/sbin, which a user's PATH may not name."""
    return shutil.which("nginx") or (
        "/usr/sbin/nginx" if Path("/usr/sbin/nginx").is_file() else None
    )


def layout_for(folder: Path, port: int) -> Layout:
    """nginx started as root runs its workers as `nobody`, which may not reach into `folder`:
    their temporary files then go to a private folder of theirs under the system's temp dir."""
    if os.geteuid() != 0:
        return Layout(folder, port)
    temp = Path(tempfile.mkdtemp(prefix="gshare-nginx-"))
    user = pwd.getpwnam("nobody")
    os.chown(temp, user.pw_uid, user.pw_gid)
    return Layout(folder, port, "nobody nogroup", temp)


class Nginx:
    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.process: subprocess.Popen[bytes] | None = None
        self.text = ""
        self._before_reload: set[int] = set()

    def _command(self, *extra: str) -> list[str]:
        found = binary()
        if found is None:
            raise RuntimeError("nginx is not installed (make demo installs Debian's nginx)")
        folder = self.layout.folder
        return [
            found,
            "-e",
            str(folder / "error.log"),
            "-p",
            str(folder),
            "-c",
            str(self.layout.config),
            *extra,
        ]

    def _write(self, text: str) -> None:
        staged = self.layout.config.with_suffix(".new")
        staged.write_text(text)
        staged.replace(self.layout.config)

    def _check(self) -> None:
        checked = subprocess.run(  # noqa: S603 - nginx with our own configuration
            self._command("-t", "-q"), capture_output=True, text=True, check=False
        )
        if checked.returncode != 0:
            raise RuntimeError(f"nginx refused its configuration: {checked.stderr.strip()}")

    def start(self, text: str, wait_s: float = 15) -> None:
        folder = self.layout.folder
        folder.mkdir(parents=True, exist_ok=True)
        for name in TEMP_FOLDERS:
            path = self.layout.temp / name
            path.mkdir(parents=True, exist_ok=True)
            if self.layout.run_as:
                user = pwd.getpwnam(self.layout.run_as.split()[0])
                os.chown(path, user.pw_uid, user.pw_gid)
                path.chmod(0o700)
        self._write(text)
        self._check()
        self.text = text
        log_file = (folder / "nginx.out").open("ab")
        self.process = subprocess.Popen(  # noqa: S603 - nginx with our own configuration
            with_parent(self._command("-g", "daemon off;")),
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + wait_s
        while not listening(self.layout.port):
            if self.process.poll() is not None:
                error = (folder / "error.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"nginx exited at start: {error}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"nginx did not listen on port {self.layout.port}")
            time.sleep(0.05)

    def apply(self, text: str) -> bool:
        """Reload with `text` if it differs from the running configuration. A configuration
        nginx refuses is logged and the running one kept."""
        if text == self.text or self.process is None:
            return False
        previous = self.layout.config.read_text()
        self._write(text)
        try:
            self._check()
        except RuntimeError as exc:
            log.error("%s; keeping the previous configuration", exc)
            self._write(previous)
            return False
        self._before_reload = self.workers()
        self.process.send_signal(signal.SIGHUP)
        self.text = text
        return True

    def workers(self) -> set[int]:
        """The process ids of the master's workers (and cache helpers) now."""
        if self.process is None:
            return set()
        return children(self.process.pid)

    def wait_reloaded(self, wait_s: float = 15) -> None:
        """Wait until the last reload's workers are the only ones: until then an old worker
        may still take a connection and answer from the previous configuration."""
        deadline = time.monotonic() + wait_s
        while True:
            now = self.workers()
            if now and not now & self._before_reload:
                return
            if time.monotonic() > deadline:
                raise RuntimeError("nginx's old workers did not exit after a reload")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)  # finish the requests in flight, then exit
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.layout.temp_folder is not None:
            shutil.rmtree(self.layout.temp_folder, ignore_errors=True)


def with_parent(argv: list[str]) -> list[str]:
    """`argv`, made to end (SIGTERM) if the demo dies without stopping it, where util-linux's
    setpriv can arrange that: a demo killed outright leaves no nginx or session program."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--", *argv] if setpriv else argv


def children(pid: int) -> set[int]:
    """The ids of the processes whose parent is `pid`, read from /proc."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # it exited while we looked
        # the command name in parentheses may hold spaces; the parent id follows the state
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.add(int(entry.name))
    return found


def listening(port: int) -> bool:
    """Whether something accepts connections on this loopback port."""
    with socket.socket() as probe:
        probe.settimeout(0.2)
        return probe.connect_ex(("127.0.0.1", port)) == 0
