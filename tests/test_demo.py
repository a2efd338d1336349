"""`make demo`: the platform, a simulated GPU cluster and its operator, registered and reporting."""

from __future__ import annotations

import signal
import stat
import subprocess
import sys
from pathlib import Path

import httpx

from gshare.cli import DEFAULT_ADMIN_EMAIL
from gshare.devcluster import free_port
from tests.eventually import eventually_sync
from tests.processes import clean_env


def test_the_demo_shows_a_registered_cluster_with_its_cards(tmp_path: Path) -> None:
    port = free_port()
    data = tmp_path / "state"
    env = clean_env()
    env |= {
        "GSHARE_DATA_DIR": str(data),
        "GSHARE_PORT": str(port),
        # A port of its own for nginx: the API's plus one (the default) may be the source port
        # of any connection on this machine just then.
        "GSHARE_DEMO_SESSIONS_PORT": str(free_port()),
        "PYTHONUNBUFFERED": "1",
        # No GSHARE_BOOTSTRAP_ADMIN_EMAIL, as on a newcomer's machine: the default admin is
        # the one the demo seeds into its organization.
        "GSHARE_BOOTSTRAP_ADMIN_PASSWORD": "harbor-quilt-saffron-64",
        "GSHARE_OPERATOR_METRICS_INTERVAL": "5",
        # The run's one real node belongs to tests/node; this demo runs its simulated nodes.
        "GSHARE_DEMO_NODE": "simulated",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "gshare.demo"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=10) as client:

            def signed_in_with_cards() -> tuple[httpx.Response, dict] | None:
                assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
                try:
                    login = client.post(
                        "/api/v1/auth/login",
                        json={"email": DEFAULT_ADMIN_EMAIL, "password": "harbor-quilt-saffron-64"},
                    )
                except httpx.HTTPError:
                    return None
                if login.status_code == 200:
                    items = client.get("/api/v1/clusters").json()["items"]
                    if items and items[0]["cards"] == 8:
                        return login, items[0]
                return None

            login, cluster = eventually_sync(
                signed_in_with_cards,
                "the demo cluster to show its cards",
                timeout=180,
                interval=0.5,
            )
            assert (cluster["name"], cluster["nodes"], cluster["healthy_cards"]) == ("demo", 2, 8)
            _a_session_runs_and_stops(client, login.json()["csrf_token"])
            _a_node_is_dedicated_and_another_runs_gvisor(client, cluster["id"])
        assert stat.S_IMODE((data / "demo-operator-token").stat().st_mode) == 0o600
    finally:
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=60)
        # Shown with a failure: what the demo's control plane, worker and operator logged.
        print(output[-20000:])
    assert proc.returncode == 0, output[-3000:]
    assert "cluster 'demo' is up" in output
    # It says which mode it runs in, and why.
    assert "sessions run as programs on this host, not as pods: GSHARE_DEMO_NODE is simulated" in (
        output
    )
    leftovers = subprocess.run(
        ["pgrep", "-f", str(data / "demo-cluster")], capture_output=True, text=True
    )
    assert leftovers.stdout.strip() == "", "the demo left cluster processes running"


def _a_session_runs_and_stops(client: httpx.Client, csrf: str) -> None:
    """The demo's admin is in a funded group and the simulated cards' model is priced: a
    quarter-card JupyterLab starts, runs and stops."""
    client.headers["X-CSRF-Token"] = csrf
    me = client.get("/api/v1/me").json()
    group_id = me["memberships"][0]["group_id"]
    tier = next(t for t in client.get("/api/v1/tiers").json()["items"] if t["name"] == "1/4")
    image = next(
        i
        for i in client.get("/api/v1/catalog").json()["items"]
        if i["session_type"] == "jupyterlab"
    )
    created = client.post(
        "/api/v1/sessions",
        json={
            "session_type": "jupyterlab",
            "image_id": image["id"],
            "group_id": group_id,
            "tier_id": tier["id"],
        },
    )
    assert created.status_code == 201, created.text
    path = f"/api/v1/sessions/{created.json()['id']}"

    seen: list[dict] = []

    def reaches(state: str) -> dict:
        def in_state() -> dict | None:
            found = client.get(path).json()
            seen.append(found)
            return dict(found) if found["state"] == state else None

        try:
            return eventually_sync(
                in_state, f"the session to become {state}", timeout=120, interval=0.5
            )
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the session last read {seen[-1]!r}") from None

    assert reaches("running")["can_open"] is True
    # The simulated DCGM exporter's readings reach the session through the operator.

    def peak_seen() -> dict | None:
        found = client.get(path).json()
        return found if found["peak_vram_mib"] == 512 else None

    eventually_sync(peak_seen, "the session's peak VRAM reading", timeout=60, interval=0.5)
    assert client.post(f"{path}/stop").status_code == 200
    assert reaches("stopped")["billing"] is False


def _a_node_is_dedicated_and_another_runs_gvisor(client: httpx.Client, cluster_id: str) -> None:
    """The demo's last node runs the sandbox RuntimeClass and user namespaces, as its operator
    reports; a node dedicated in the console is labelled and tainted for its tenant by the demo,
    and its operator reports it ready."""

    def nodes() -> dict[str, dict]:
        return {n["node"]: n for n in client.get("/api/v1/isolation/nodes").json()["items"]}

    def sandboxed() -> dict | None:
        found = nodes().get("gpu-1")
        return found if found and found["runtime_classes"] == ["gvisor"] else None

    assert eventually_sync(sandboxed, "gpu-1 to report gVisor", timeout=60)["user_namespaces"]
    assert client.get(f"/api/v1/clusters/{cluster_id}").json()["sandbox_runtime_class"] == "gvisor"
    org_id = client.get("/api/v1/me").json()["memberships"][0]["org_id"]
    made = client.post(
        "/api/v1/isolation/dedications",
        json={"cluster_id": cluster_id, "node": "gpu-0", "organization_id": org_id},
    )
    assert made.status_code == 201, made.text

    def ready() -> dict | None:
        found = nodes()["gpu-0"]
        return found if found["ready"] and found["dedicated_tainted"] else None

    assert (
        eventually_sync(ready, "gpu-0 labelled and tainted", timeout=60)["dedicated_label"]
        == org_id
    )
