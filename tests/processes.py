"""Running GShare's own processes in tests, as an operator would run them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from gshare.devcluster import free_port
from tests.eventually import eventually_sync


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without any GSHARE_* setting of the machine, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GSHARE_")}
    env.update(extra)
    return env


def start_api(
    database_url: str, data_dir: Path, *, console_dir: Path | None = None, **settings: str
) -> tuple[subprocess.Popen[bytes], str]:
    """A real `gshare api` process on a free port, once /readyz answers; returns it and its URL.
    `settings` are extra GSHARE_* variables."""
    port = free_port()
    env = clean_env(
        GSHARE_DATABASE_URL=database_url,
        GSHARE_PORT=str(port),
        GSHARE_DATA_DIR=str(data_dir),
        GSHARE_LOG_LEVEL="warning",
        **settings,
    )
    if console_dir is not None:
        env["GSHARE_CONSOLE_DIR"] = str(console_dir)
    proc = subprocess.Popen([sys.executable, "-m", "gshare", "api"], env=env, cwd=data_dir.parent)
    base = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            return httpx.get(f"{base}/readyz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        eventually_sync(ready, "the API to start", timeout=30, interval=0.2)
    except BaseException:
        proc.kill()
        raise
    return proc, base


def start_worker(database_url: str, data_dir: Path, **settings: str) -> subprocess.Popen[bytes]:
    """A real `gshare worker` process; `settings` are extra GSHARE_* variables."""
    env = clean_env(
        GSHARE_DATABASE_URL=database_url,
        GSHARE_DATA_DIR=str(data_dir),
        GSHARE_LOG_LEVEL="warning",
        **settings,
    )
    return subprocess.Popen(
        [sys.executable, "-m", "gshare", "worker"], env=env, cwd=data_dir.parent
    )


def stop(*procs: subprocess.Popen[bytes]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
