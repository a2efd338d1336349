"""The control plane's image run as the chart runs it: its own user, a read-only root, a
PostgreSQL container beside it (Compose's, from Debian's package)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from gshare.devcluster import free_port
from tests.containers import (
    Container,
    answers,
    container,
    image,
    network,
    podman,
    read_only_as_user,
)
from tests.eventually import eventually_sync

pytestmark = pytest.mark.usefixtures("images")

GSHARE_UID = 10001
ADMIN = "admin@gshare.local"


@dataclass
class Database:
    network: str
    url: str


@pytest.fixture(scope="module")
def database() -> Iterator[Database]:
    """PostgreSQL from the postgres image, reachable as `postgres` on a network of its own."""
    password = secrets.token_urlsafe(16)
    with (
        network() as net,
        container(
            image("postgres"),
            options=(
                "--network", net, "--network-alias", "postgres", "--read-only",
                "--tmpfs", "/tmp:rw,mode=1777",
                "--tmpfs", "/var/lib/postgresql/data:rw,U,mode=0700",
                "--env", f"POSTGRES_PASSWORD={password}",
            ),
        ) as pg,
    ):  # fmt: skip
        eventually_sync(
            lambda: pg.exec("pg_isready", "--host=127.0.0.1", check=False).returncode == 0,
            f"PostgreSQL to accept connections\n{pg.logs()}",
            timeout=60,
            interval=0.3,
        )
        yield Database(net, f"postgresql://gshare:{password}@postgres:5432/gshare")


def gshare_options(db: Database, *extra: str) -> tuple[str, ...]:
    return (
        *read_only_as_user(GSHARE_UID),
        "--tmpfs", "/var/lib/gshare:rw,U,mode=0700",
        "--network", db.network,
        "--env", f"GSHARE_DATABASE_URL={db.url}",
        "--env", "GSHARE_DATABASE_WAIT_SECONDS=60",
        *extra,
    )  # fmt: skip


@pytest.fixture(scope="module")
def admin_password(database: Database) -> str:
    """`gshare migrate` in its image: the schema, and the first super admin from its password."""
    password = f"Image-{secrets.token_urlsafe(12)}"
    result = podman(
        "run", "--rm", "--label", "io.gshare.test=1",
        *gshare_options(
            database,
            "--env", f"GSHARE_BOOTSTRAP_ADMIN_EMAIL={ADMIN}",
            "--env", f"GSHARE_BOOTSTRAP_ADMIN_PASSWORD={password}",
        ),
        image("gshare"), "migrate",
        timeout=180,
    )  # fmt: skip
    assert "database schema is up to date" in result.stdout + result.stderr
    return password


@pytest.fixture(scope="module")
def api(database: Database, admin_password: str) -> Iterator[str]:
    port = free_port()
    options = gshare_options(database, "--publish", f"127.0.0.1:{port}:8000")
    with container(image("gshare"), "api", options=options) as api:
        base = f"http://127.0.0.1:{port}"
        eventually_sync(
            lambda: answers(f"{base}/readyz") or not api.running(),
            "the API to be ready",
            timeout=90,
            interval=0.3,
        )
        assert api.running(), api.logs()
        yield base


def test_the_api_is_ready_and_serves_the_console(api: str) -> None:
    assert httpx.get(f"{api}/healthz").status_code == 200
    page = httpx.get(f"{api}/", follow_redirects=True)
    assert page.status_code == 200
    assert '<div id="root">' in page.text, "the console's page, built into the image"
    script = page.text.split('src="', 1)[1].split('"', 1)[0]
    assert httpx.get(f"{api}{script}").status_code == 200, "its scripts are served too"


def test_the_first_admin_signs_in(api: str, admin_password: str) -> None:
    with httpx.Client(base_url=api) as client:
        wrong = client.post("/api/v1/auth/login", json={"email": ADMIN, "password": "nope-nope"})
        assert wrong.status_code == 401
        login = client.post("/api/v1/auth/login", json={"email": ADMIN, "password": admin_password})
        assert login.status_code == 200, login.text
        me = client.get("/api/v1/me")
        assert me.status_code == 200
        assert me.json()["user"]["email"] == ADMIN
        assert me.json()["user"]["is_super_admin"] is True


def _stops_cleanly(process: Container, started: str) -> None:
    eventually_sync(
        lambda: started in process.logs() or not process.running(),
        f"the process to start ({started!r})",
        timeout=60,
        interval=0.3,
    )
    assert process.running(), process.logs()
    begun = time.monotonic()
    assert process.stop(timeout_s=30) == 0, process.logs()
    assert time.monotonic() - begun < 25, "it ended on SIGTERM, not on the SIGKILL after it"


def test_the_worker_starts_and_stops_on_sigterm(database: Database, admin_password: str) -> None:
    with container(image("gshare"), "worker", options=gshare_options(database)) as worker:
        _stops_cleanly(worker, "worker running")


def test_a_server_waits_for_its_database_then_says_why_it_gave_up(database: Database) -> None:
    """Started before PostgreSQL answers (as under Compose), a process waits for
    GSHARE_DATABASE_WAIT_SECONDS, then names what it could not reach."""
    options = (
        *read_only_as_user(GSHARE_UID),
        "--network", database.network,
        "--env", "GSHARE_DATABASE_URL=postgresql://gshare:x@nowhere.invalid:5432/gshare",
        "--env", "GSHARE_DATABASE_WAIT_SECONDS=2",
    )  # fmt: skip
    result = podman(
        "run", "--rm", *options, image("gshare"), "migrate", check=False, timeout=120
    )  # fmt: skip
    assert result.returncode == 2
    assert "gshare: cannot reach the database" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_process_waiting_for_its_database_ends_on_sigterm(database: Database) -> None:
    """As PID 1 in its container, before any server installed a handler, SIGTERM still ends it
    (the kernel spares PID 1 from signals it does not handle)."""
    options = (
        *read_only_as_user(GSHARE_UID),
        "--network", database.network,
        "--env", "GSHARE_DATABASE_URL=postgresql://gshare:x@nowhere.invalid:5432/gshare",
        "--env", "GSHARE_DATABASE_WAIT_SECONDS=600",
    )  # fmt: skip
    with container(image("gshare"), "api", options=options) as waiting:
        eventually_sync(
            lambda: "waiting for the database" in waiting.logs(),
            "the API to wait for its database",
            timeout=60,
        )
        begun = time.monotonic()
        assert waiting.stop(timeout_s=30) == 128 + 15
        assert time.monotonic() - begun < 25, "it ended on SIGTERM, not on the SIGKILL after it"


def test_the_api_ends_cleanly_on_sigterm(database: Database, admin_password: str) -> None:
    port = free_port()
    options = gshare_options(database, "--publish", f"127.0.0.1:{port}:8000")
    with container(image("gshare"), "api", options=options) as api:
        eventually_sync(
            lambda: answers(f"http://127.0.0.1:{port}/readyz") or not api.running(),
            "the API to be ready",
            timeout=90,
            interval=0.3,
        )
        _stops_cleanly(api, "GShare is running")
