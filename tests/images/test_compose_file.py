"""compose.yaml as Docker Compose v2 reads it: loaded with compose-go, the library Docker Compose
loads files with (hack/compose-config), since Docker Compose itself cannot run here. What
podman-compose runs in tests/images/test_compose.py is what Docker Compose would run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gshare import devcluster
from gshare.devcluster import ROOT

SETTINGS = {
    "POSTGRES_PASSWORD": "a-database-password-0123",
    "GSHARE_BOOTSTRAP_ADMIN_EMAIL": "admin@gshare.local",
    "GSHARE_BOOTSTRAP_ADMIN_PASSWORD": "Another-admin-password-0123",
    "GSHARE_COMPOSE_PORT": "8123",
}


def _load(env_file: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(devcluster.testenv_bin() / "compose-config"),
            str(ROOT / "compose.yaml"),
            str(env_file),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=env_file.parent,
    )


@pytest.fixture
def project(tmp_path: Path) -> dict[str, Any]:
    env_file = tmp_path / ".env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in SETTINGS.items()))
    loaded = _load(env_file)
    assert loaded.returncode == 0, loaded.stderr
    return json.loads(loaded.stdout)  # type: ignore[no-any-return]


def test_the_services_start_in_order_and_wait_for_what_they_need(project: dict[str, Any]) -> None:
    services = project["services"]
    assert set(services) == {"postgres", "migrate", "api", "worker"}
    assert project["name"] == "gshare"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in ("api", "worker"):
        assert services[name]["depends_on"]["migrate"]["condition"] == (
            "service_completed_successfully"
        )


def test_only_the_api_is_published_and_only_on_this_machine(project: dict[str, Any]) -> None:
    published = {name: s.get("ports") for name, s in project["services"].items() if s.get("ports")}
    assert list(published) == ["api"]
    [port] = published["api"]
    assert (port["host_ip"], port["published"], port["target"]) == ("127.0.0.1", "8123", 8000)


def test_every_service_runs_read_only_without_capabilities(project: dict[str, Any]) -> None:
    for name, service in project["services"].items():
        assert service["read_only"] is True, name
        assert service["cap_drop"] == ["ALL"], name
        assert "no-new-privileges:true" in service["security_opt"], name


def test_settings_reach_the_services_from_the_env_file(project: dict[str, Any]) -> None:
    migrate = project["services"]["migrate"]["environment"]
    assert migrate["GSHARE_BOOTSTRAP_ADMIN_PASSWORD"] == SETTINGS["GSHARE_BOOTSTRAP_ADMIN_PASSWORD"]
    url = project["services"]["api"]["environment"]["GSHARE_DATABASE_URL"]
    assert url == f"postgresql://gshare:{SETTINGS['POSTGRES_PASSWORD']}@postgres:5432/gshare"
    assert "GSHARE_BOOTSTRAP_ADMIN_PASSWORD" not in project["services"]["api"]["environment"]


def test_without_the_passwords_docker_compose_names_them(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("GSHARE_COMPOSE_PORT=8123\n")
    loaded = _load(env_file)
    assert loaded.returncode == 1
    assert "set POSTGRES_PASSWORD in .env" in loaded.stderr
    assert "set GSHARE_BOOTSTRAP_ADMIN_PASSWORD in .env" in loaded.stderr
