"""The process entrypoints, run as a newcomer would run them."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx

from gshare.devcluster import free_port
from gshare.kit.embedded_db import EmbeddedPostgres, ensure_database
from tests.processes import clean_env

GSHARE = [sys.executable, "-m", "gshare"]


def test_invalid_configuration_stops_with_one_clear_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [*GSHARE, "migrate"],
        env=clean_env(GSHARE_PORT="eighty"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("gshare: invalid configuration: GSHARE_PORT:")


def test_api_needs_a_database_url(tmp_path: Path) -> None:
    result = subprocess.run(
        [*GSHARE, "api"], env=clean_env(), cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "GSHARE_DATABASE_URL" in result.stderr


async def test_api_refuses_an_unmigrated_database(
    postgres: EmbeddedPostgres, tmp_path: Path
) -> None:
    await ensure_database(postgres.url(), "cli_unmigrated")
    result = subprocess.run(
        [*GSHARE, "api"],
        env=clean_env(
            GSHARE_DATABASE_URL=postgres.url("cli_unmigrated"), GSHARE_PORT=str(free_port())
        ),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 3
    assert "run `gshare migrate`" in result.stderr


def _wait_healthy(base: str, proc: subprocess.Popen[str], deadline_s: float = 60) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(
                f"gshare up exited early: {proc.stdout.read() if proc.stdout else ''}"
            )
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError("gshare up did not become ready")


def _run_up(data: Path, port: int) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [*GSHARE, "up"],
        env=clean_env(GSHARE_DATA_DIR=str(data), GSHARE_PORT=str(port), PYTHONUNBUFFERED="1"),
        cwd=data.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    _wait_healthy(base, proc)
    return proc, base


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    return out


def _postgres_running(data: Path) -> bool:
    pid_file = data / "postgres" / "postmaster.pid"
    if not pid_file.exists():
        return False
    pid = int(pid_file.read_text().splitlines()[0])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_up_runs_everything_and_a_second_up_finds_the_same_data(tmp_path: Path) -> None:
    data = tmp_path / "state"
    port = free_port()
    proc, base = _run_up(data, port)
    try:
        secret = data / "bootstrap-admin.txt"
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600
        email, password = (line.split(": ", 1)[1] for line in secret.read_text().splitlines())
        login = httpx.post(f"{base}/api/v1/auth/login", json={"email": email, "password": password})
        assert login.status_code == 200
        assert login.json()["user"]["is_super_admin"] is True
        token = login.json()["csrf_token"]
        created = httpx.post(
            f"{base}/api/v1/orgs",
            json={"name": "Persisted"},
            cookies=login.cookies,
            headers={"X-CSRF-Token": token},
        )
        assert created.status_code == 201
    finally:
        first_output = _stop(proc)
    assert proc.returncode == 0, first_output
    assert password in first_output  # printed once
    assert f"http://127.0.0.1:{port}" in first_output
    assert not _postgres_running(data), "Ctrl-C must stop PostgreSQL too"

    proc, base = _run_up(data, port)
    try:
        login = httpx.post(f"{base}/api/v1/auth/login", json={"email": email, "password": password})
        assert login.status_code == 200, "a restart must not reset the admin"
        orgs = httpx.get(f"{base}/api/v1/orgs", cookies=login.cookies).json()["items"]
        assert [o["name"] for o in orgs] == ["Persisted"]
    finally:
        second_output = _stop(proc)
    assert password not in second_output
    assert not _postgres_running(data)


def test_migrate_creates_the_configured_first_admin_once(tmp_path: Path) -> None:
    env = clean_env(
        GSHARE_DATA_DIR=str(tmp_path / "state"),
        GSHARE_BOOTSTRAP_ADMIN_EMAIL="root@example.org",
        GSHARE_BOOTSTRAP_ADMIN_PASSWORD="marble-falcon-ridge-27",
    )
    first = subprocess.run(
        [*GSHARE, "migrate"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert first.returncode == 0, first.stderr
    assert "created the first super admin root@example.org" in first.stderr
    assert not (tmp_path / "state" / "bootstrap-admin.txt").exists()
    again = subprocess.run(
        [*GSHARE, "migrate"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0
    assert "created the first super admin" not in again.stderr


def test_a_weak_bootstrap_password_is_refused(tmp_path: Path) -> None:
    result = subprocess.run(
        [*GSHARE, "migrate"],
        env=clean_env(
            GSHARE_DATA_DIR=str(tmp_path / "s"), GSHARE_BOOTSTRAP_ADMIN_PASSWORD="admin12345"
        ),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith("gshare: invalid configuration: GSHARE_BOOTSTRAP_ADMIN_PASSWORD:")
    )
