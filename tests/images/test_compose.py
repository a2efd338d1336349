"""The Compose path as a user runs it: `make compose-up` (hack/compose.sh up) writes .env once
and starts PostgreSQL, the migrations, the API with the console and the worker; `make smoke`
waits for them; the data survive a stop and start; `make compose-down` drops them."""

from __future__ import annotations

import socket
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from dotenv import dotenv_values

from gshare.devcluster import ROOT, free_port
from tests.containers import engine_env, podman, unique

pytestmark = pytest.mark.usefixtures("images")


class Compose:
    def __init__(self, folder: Path) -> None:
        self.project = unique("compose")
        self.env_file = folder / ".env"
        self.port = free_port()

    def run(self, command: str, *, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = engine_env(
            GSHARE_COMPOSE_ENV=str(self.env_file),
            GSHARE_COMPOSE_PROJECT=self.project,
            GSHARE_COMPOSE_PORT=str(self.port),
        )
        result = subprocess.run(
            ["bash", str(ROOT / "hack" / "compose.sh"), command],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"compose.sh {command}: {result.returncode}\n{result.stderr}")
        return result

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def containers(self) -> list[str]:
        listed = podman(
            "ps", "--all", "--format", "{{.Names}}",
            "--filter", f"label=io.podman.compose.project={self.project}",
        )  # fmt: skip
        return sorted(listed.stdout.split())

    def started(self) -> list[str]:
        """Each server's container and start time: the same after an `up` that changes nothing.
        (The migrations, done, run again on every `up`, as Docker Compose runs them: they find
        the schema current and the first admin made.)"""
        listed = podman(
            "ps", "--all", "--format", "{{.ID}} {{.Names}} {{.StartedAt}}",
            "--filter", f"label=io.podman.compose.project={self.project}",
        )  # fmt: skip
        return sorted(line for line in listed.stdout.splitlines() if "_migrate_" not in line)

    def volumes(self) -> list[str]:
        listed = podman("volume", "ls", "--format", "{{.Name}}")
        return sorted(v for v in listed.stdout.split() if v.startswith(self.project))

    @contextmanager
    def sign_in(self) -> Iterator[httpx.Client]:
        """The first admin, with the email and password .env holds."""
        settings = dotenv_values(self.env_file)
        with httpx.Client(base_url=self.base) as client:
            login = client.post(
                "/api/v1/auth/login",
                json={
                    "email": settings["GSHARE_BOOTSTRAP_ADMIN_EMAIL"],
                    "password": settings["GSHARE_BOOTSTRAP_ADMIN_PASSWORD"],
                },
            )
            assert login.status_code == 200, login.text
            client.headers["X-CSRF-Token"] = login.json()["csrf_token"]
            yield client


@pytest.fixture
def compose(tmp_path: Path) -> Iterator[Compose]:
    stack = Compose(tmp_path)
    try:
        yield stack
    finally:
        stack.run("down", check=False)


@pytest.fixture
def decoy() -> Iterator[None]:
    """A .env beside compose.yaml, which podman-compose would read over the environment: the
    settings file named by GSHARE_COMPOSE_ENV must win. (A developer's own .env serves as it is.)"""
    beside = ROOT / ".env"
    if beside.exists():
        yield
        return
    beside.write_text("POSTGRES_PASSWORD=decoy-password-1234\nGSHARE_COMPOSE_PORT=1\n")
    try:
        yield
    finally:
        beside.unlink()


@pytest.mark.usefixtures("decoy")
def test_up_smoke_stop_up_keeps_the_data_and_down_drops_it(compose: Compose) -> None:
    first = compose.run("up")
    assert f"wrote {compose.env_file}" in first.stderr
    assert stat.S_IMODE(compose.env_file.stat().st_mode) == 0o600
    settings = dotenv_values(compose.env_file)
    assert settings["POSTGRES_PASSWORD"] != "change-me", "new random passwords"
    assert settings["GSHARE_COMPOSE_PORT"] == str(compose.port)

    assert "healthy and ready" in compose.run("smoke").stdout
    names = compose.containers()
    assert len(names) == 4, names  # postgres, migrate (done), api, worker
    console = httpx.get(compose.base + "/", follow_redirects=True)
    assert console.status_code == 200
    assert '<div id="root">' in console.text
    with compose.sign_in() as admin:
        assert admin.post("/api/v1/orgs", json={"name": "Kept"}).status_code == 201

    published = podman("port", f"{compose.project}_api_1").stdout.split()
    assert published == ["8000/tcp", "->", f"127.0.0.1:{compose.port}"], "only on this machine"

    started = compose.started()
    again = compose.run("up")
    assert "wrote" not in again.stderr, ".env is written once"
    assert compose.started() == started, "a second up changes nothing"

    compose.run("stop")
    assert compose.containers() == []
    assert len(compose.volumes()) == 2, "the data stay"
    compose.run("up")
    compose.run("smoke")
    with compose.sign_in() as admin:
        orgs = admin.get("/api/v1/orgs").json()["items"]
        assert [org["name"] for org in orgs] == ["Kept"]

    compose.run("down")
    assert compose.containers() == []
    assert compose.volumes() == []
    networks = podman("network", "ls", "--format", "{{.Name}}").stdout.split()
    assert f"{compose.project}_default" not in networks


def test_a_port_another_program_holds_is_said_plainly(compose: Compose) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", compose.port))
        holder.listen()
        result = compose.run("up", check=False)
    assert result.returncode == 1
    assert f"port {compose.port} on 127.0.0.1 is taken by another program" in result.stderr
    assert "Traceback" not in result.stderr
    assert compose.containers() == [], "nothing started"


def _env_with(compose: Compose, **changes: str) -> None:
    """The settings file as compose-up would write it, with `changes`."""
    settings = {
        "POSTGRES_PASSWORD": "a-database-password-0123",
        "GSHARE_BOOTSTRAP_ADMIN_EMAIL": "admin@gshare.local",
        "GSHARE_BOOTSTRAP_ADMIN_PASSWORD": "Another-admin-password-0123",
        "GSHARE_COMPOSE_PORT": str(compose.port),
    } | changes
    compose.env_file.write_text("".join(f"{k}='{v}'\n" for k, v in settings.items()))


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"GSHARE_COMPOSE_PORT": "eighty"}, "GSHARE_COMPOSE_PORT in "),
        ({"GSHARE_COMPOSE_ADDRESS": "localhost|x"}, "must be an IPv4 address of this machine"),
        ({"GSHARE_COMPOSE_ADDRESS": "::1"}, "must be an IPv4 address of this machine"),
        ({"GSHARE_COMPOSE_PORT": "70000"}, "must be a port number (1 to 65535), not '70000'"),
        ({"POSTGRES_PASSWORD": "p@ss/word:with-url-parts"}, "POSTGRES_PASSWORD in "),
        ({"POSTGRES_PASSWORD": ""}, "POSTGRES_PASSWORD in "),
        ({"GSHARE_BOOTSTRAP_ADMIN_PASSWORD": "change-me"}, "not to the example's"),
    ],
)
def test_settings_that_cannot_work_are_refused_in_one_line(
    compose: Compose, changes: dict[str, str], said: str
) -> None:
    _env_with(compose, **changes)
    for command in ("up", "smoke"):
        result = compose.run(command, check=False)
        assert result.returncode == 2
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        assert said in lines[0]
    assert compose.containers() == [], "nothing started"


def test_smoke_before_any_up_says_what_to_run(compose: Compose) -> None:
    result = compose.run("smoke", check=False)
    assert result.returncode == 2
    assert result.stderr.strip() == f"compose: no {compose.env_file} yet: make compose-up writes it"


def test_a_first_admin_password_the_policy_refuses_is_shown(compose: Compose) -> None:
    _env_with(compose, GSHARE_BOOTSTRAP_ADMIN_PASSWORD="password")
    # up says so when the migrations have already failed; smoke when they fail after it.
    result = compose.run("up", check=False)
    if result.returncode == 0:
        result = compose.run("smoke", check=False)
        assert "smoke: the migrations failed" in result.stderr
    else:
        assert "not started: migrate (exited with status 2)" in result.stderr
    assert result.returncode == 1
    assert "invalid configuration: GSHARE_BOOTSTRAP_ADMIN_PASSWORD" in result.stderr
