"""The process entrypoints, run as a newcomer would run them."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.audit.models import AuditEntry
from gshare.devcluster import free_port
from gshare.identity.models import User
from gshare.kit.embedded_db import EmbeddedPostgres, ensure_database
from gshare.kit.settings import READ_ELSEWHERE, Settings, unknown_variables
from tests.builders import Builder
from tests.eventually import eventually_sync
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


async def test_an_api_started_before_its_migration_waits_for_it(
    postgres: EmbeddedPostgres, tmp_path: Path
) -> None:
    """As under Compose, where the API may start while the migrations still run: with
    GSHARE_DATABASE_WAIT_SECONDS it waits for the schema instead of exiting."""
    await ensure_database(postgres.url(), "cli_waits")
    url, port = postgres.url("cli_waits"), free_port()
    env = clean_env(
        GSHARE_DATABASE_URL=url, GSHARE_PORT=str(port), GSHARE_DATABASE_WAIT_SECONDS="120"
    )
    log = tmp_path / "api.log"
    with log.open("wb") as out:
        api = subprocess.Popen([*GSHARE, "api"], env=env, cwd=tmp_path, stdout=out, stderr=out)
    try:
        eventually_sync(
            lambda: api.poll() is None and b"waiting for the database" in log.read_bytes(),
            "the API to say it waits",
            timeout=60,
        )
        migrated = subprocess.run(
            [*GSHARE, "migrate"], env=clean_env(GSHARE_DATABASE_URL=url), cwd=tmp_path, timeout=120
        )
        assert migrated.returncode == 0
        eventually_sync(
            lambda: _ready(f"http://127.0.0.1:{port}"), "the API to serve after it", timeout=60
        )
    finally:
        api.send_signal(signal.SIGINT)
        api.wait(30)


def _ready(base: str) -> bool:
    try:
        return httpx.get(f"{base}/readyz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def test_a_database_that_never_answers_is_named_after_the_wait(tmp_path: Path) -> None:
    result = subprocess.run(
        [*GSHARE, "migrate"],
        env=clean_env(
            GSHARE_DATABASE_URL=f"postgresql://gshare:x@127.0.0.1:{free_port()}/gshare",
            GSHARE_DATABASE_WAIT_SECONDS="1",
        ),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    said = [line for line in result.stderr.splitlines() if line.startswith("gshare:")]
    assert len(said) == 1, result.stderr
    assert said[0].startswith("gshare: cannot reach the database"), result.stderr
    assert "Traceback" not in result.stderr


def _wait_healthy(base: str, proc: subprocess.Popen[str], deadline_s: float = 60) -> None:
    def ready() -> bool:
        if proc.poll() is not None:
            raise AssertionError(
                f"gshare up exited early: {proc.stdout.read() if proc.stdout else ''}"
            )
        try:
            return httpx.get(f"{base}/readyz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    eventually_sync(ready, "gshare up to become ready", timeout=deadline_s, interval=0.2)


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


def _recover(database_url: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*GSHARE, "recover-admin", *args],
        env=clean_env(GSHARE_DATABASE_URL=database_url),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def _recoveries(sessions: async_sessionmaker[AsyncSession]) -> list[AuditEntry]:
    async with sessions() as db:
        query = select(AuditEntry).where(AuditEntry.action == "user.recover_admin")
        return list(await db.scalars(query.order_by(AuditEntry.id)))


async def test_recover_admin_restores_an_existing_account(
    build: Builder,
    database_url: str,
    sessions: async_sessionmaker[AsyncSession],
    tmp_path: Path,
) -> None:
    user = await build.user("Locked Out")
    old_client = await build.signed_in(user)
    async with sessions() as db, db.begin():
        await db.execute(update(User).where(User.id == user.id).values(active=False))

    new_password = "granite-otter-lullaby-35"
    result = _recover(
        database_url, tmp_path, "--email", user.email.upper(), "--password", new_password
    )
    assert result.returncode == 0, result.stderr
    assert "Super admin recovered." in result.stdout
    assert new_password not in result.stdout, "a chosen password is not echoed"

    assert (await old_client.get("/api/v1/me")).status_code == 401, "old sign-ins end"
    client = await build.signed_in(user, new_password)
    me = (await client.get("/api/v1/me")).json()
    assert me["user"]["is_super_admin"] is True
    assert me["user"]["active"] is True
    assert me["must_change_password"] is True
    [entry] = await _recoveries(sessions)
    assert (entry.actor_id, entry.target_id, entry.outcome) == (None, str(user.id), "allowed")
    assert entry.detail["by"] == "host"
    assert entry.detail["created"] is False


async def test_recover_admin_creates_a_missing_account_with_a_generated_password(
    build: Builder,
    database_url: str,
    sessions: async_sessionmaker[AsyncSession],
    tmp_path: Path,
) -> None:
    result = _recover(database_url, tmp_path, "--email", "rescue@example.org")
    assert result.returncode == 0, result.stderr
    assert "Super admin created." in result.stdout
    password = next(
        line.split(":", 1)[1].strip()
        for line in result.stdout.splitlines()
        if line.strip().startswith("password:")
    )
    async with sessions() as db:
        user = await db.scalar(select(User).where(User.email == "rescue@example.org"))
    assert user is not None
    assert (user.is_super_admin, user.active, user.must_change_password) == (True, True, True)
    assert await build.signed_in(user, password)
    [entry] = await _recoveries(sessions)
    assert entry.detail["created"] is True


async def test_recover_admin_refuses_weak_passwords_and_bad_emails(
    build: Builder,
    database_url: str,
    sessions: async_sessionmaker[AsyncSession],
    tmp_path: Path,
) -> None:
    user = await build.user()
    weak = _recover(database_url, tmp_path, "--email", user.email, "--password", "password123")
    assert weak.returncode == 2
    assert weak.stderr.strip().splitlines()[-1].startswith("gshare: --password:")
    bad = _recover(database_url, tmp_path, "--email", "not an email", "--password", "x")
    assert bad.returncode == 2
    assert "--email" in bad.stderr
    async with sessions() as db:
        stored = await db.get(User, user.id)
    assert stored is not None
    assert stored.is_super_admin is False
    assert await _recoveries(sessions) == []


def test_unknown_gshare_variables_are_named_in_a_warning(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("GSHARE_DATA_DIRR=/tmp/elsewhere\nGSHARE_LOG_LEVEL=info\n")
    result = subprocess.run(
        [*GSHARE, "api"],
        env=clean_env(GSHARE_PROT="9000", GSHARE_PORT="8001", GSHARE_OPERATOR_NAMESPACE="x"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2  # no database URL, after the warnings
    warnings = [line for line in result.stderr.splitlines() if "WARNING" in line]
    assert len(warnings) == 2, result.stderr
    assert "GSHARE_DATA_DIRR (in .env)" in warnings[0]
    assert "did you mean GSHARE_DATA_DIR?" in warnings[0]
    assert "GSHARE_PROT (in the environment)" in warnings[1]
    assert "did you mean GSHARE_PORT?" in warnings[1]


def test_variables_read_by_settings_or_elsewhere_are_not_named() -> None:
    environ = {
        "GSHARE_PORT": "1",
        "gshare_log_level": "info",  # settings ignore case
        "GSHARE_OPERATOR_API_URL": "http://x",
        "GSHARE_SESION_IDLE_TIMEOUT": "60",
        "PATH": "/bin",
    }
    warnings = unknown_variables(environ, env_file=Path("/nonexistent/.env"))
    assert len(warnings) == 1
    assert warnings[0].startswith("GSHARE_SESION_IDLE_TIMEOUT (in the environment)")


def test_every_variable_read_outside_settings_is_known() -> None:
    """A GSHARE_ variable read straight from the environment must not be warned about. Every
    GSHARE_ name the source spells out (read with os.environ, kept in a constant, or passed
    to a child process) is a setting or known to be read elsewhere."""
    source = Path(__file__).parents[1] / "src" / "gshare"
    pattern = re.compile(r"""["'](GSHARE_[A-Z0-9_]+)["']""")
    named = {
        name
        for path in source.rglob("*.py")
        for name in pattern.findall(path.read_text(encoding="utf-8"))
    }
    assert "GSHARE_OPERATOR_API_URL" in named, "the pattern finds the operator's variables"
    settings = {f"GSHARE_{field.upper()}" for field in Settings.model_fields}
    not_variables = {"GSHARE_CSP_NONCE"}  # the console's nonce placeholder
    assert named - settings - not_variables <= READ_ELSEWHERE


def test_rotate_keys_by_hand_can_forget_every_older_key(tmp_path: Path) -> None:
    """After a compromise: nothing the old keys signed verifies any more."""
    import asyncio
    from datetime import UTC, datetime

    from gshare.clusters.keystore import FileKeyStore, load_or_create
    from gshare.clusters.tokens import InvalidToken

    store = FileKeyStore(tmp_path / "data" / "internal-keys.json")
    now = datetime.now(UTC)
    old = asyncio.run(load_or_create(store, now))
    token = old.mint("c1", now)

    def rotate(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*GSHARE, "rotate-keys", *args],
            env=clean_env(GSHARE_DATA_DIR=str(tmp_path / "data")),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )

    kept = rotate()
    assert kept.returncode == 0, kept.stderr
    overlapping = asyncio.run(load_or_create(store, now))
    assert len(overlapping.keys) == 2
    assert overlapping.verify(token, now) == "c1"

    dropped = rotate("--drop-old")
    assert dropped.returncode == 0, dropped.stderr
    assert "every older key is forgotten" in dropped.stdout
    after = asyncio.run(load_or_create(store, now))
    assert len(after.keys) == 1
    assert after.current.kid in dropped.stdout
    with pytest.raises(InvalidToken) as refused:
        after.verify(token, now)
    assert refused.value.reason == "unknown_key"

    (tmp_path / "data" / "internal-keys.json").write_text("{}")
    broken = rotate()
    assert broken.returncode == 1
    assert "holds no readable key set" in broken.stderr


def test_the_access_log_never_holds_a_session_ticket() -> None:
    import logging

    from gshare.cli import _NoTicketsInAccessLog

    # uvicorn's access record: client, method, path with query, HTTP version, status.
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        (
            "127.0.0.1:5000",
            "GET",
            "/api/v1/session-entry?rd=%2Fx%3Fgshare_ticket%3Dabc.def",
            "1.1",
            303,
        ),
        None,
    )
    assert _NoTicketsInAccessLog().filter(record)
    assert "abc.def" not in record.getMessage()
    assert "gshare_ticket%3D[redacted]" in record.getMessage()
    assert record.getMessage().endswith('HTTP/1.1" 303')
