"""Running GShare's API as its own process for a benchmark, with a bootstrapped admin."""

from __future__ import annotations

import os
import secrets
import subprocess
import time
from pathlib import Path

import httpx

ADMIN_EMAIL = "bench@example.org"
# Random, as `gshare up` generates one: a fixed phrase can fall foul of the password policy.
ADMIN_PASSWORD = secrets.token_urlsafe(18)


def api_env(url: str, data_dir: Path) -> dict[str, str]:
    """This environment without the machine's GSHARE_* settings, pointed at `url`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GSHARE_")}
    env.update(
        GSHARE_DATABASE_URL=url,
        GSHARE_BOOTSTRAP_ADMIN_EMAIL=ADMIN_EMAIL,
        GSHARE_BOOTSTRAP_ADMIN_PASSWORD=ADMIN_PASSWORD,
        GSHARE_LOG_LEVEL="warning",
        GSHARE_DATA_DIR=str(data_dir),
    )
    return env


def bootstrap(url: str) -> None:
    from gshare.cli import bootstrap_admin
    from gshare.kit.settings import Settings

    bootstrap_admin(
        Settings(
            _env_file=None,
            bootstrap_admin_email=ADMIN_EMAIL,  # type: ignore[call-arg]
            bootstrap_admin_password=ADMIN_PASSWORD,
        ),
        url,
    )


def serve(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_ready(url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"server at {url} did not start")


def sign_in(base: str) -> httpx.Response:
    answer = httpx.post(
        f"{base}/api/v1/auth/login", json={"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD}
    )
    answer.raise_for_status()
    return answer
