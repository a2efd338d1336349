"""Sessions as real pods: the API, a worker and the operator as processes, a real node's kubelet
running the session images (gshare.devnode), and the demo's nginx in front, configured from the
operator's Ingress. What the simulated nodes cannot show is checked here: the page a user opens
is the program in the pod, only its owner gets in, and the home volume outlives a pause."""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select, update

from gshare.capacity.models import GpuCard
from gshare.clusters.models import Cluster as ClusterRow
from gshare.demo import loopback
from gshare.demo.nginx import Nginx, layout_for
from gshare.demo.sessionhost import SessionHost
from gshare.devcluster import free_port
from gshare.devnode import POD_CIDR, RealNode, host_address, program_archive
from gshare.events.models import Notification
from gshare.operator.manifests import SESSION_LABEL
from gshare.sessions.access import ACCESS_COOKIE
from gshare.sessions.models import CatalogImage, Volume
from tests.builders import PASSWORD
from tests.capacity.builders import set_policy
from tests.credits.builders import assert_ledger_clean
from tests.eventually import eventually, eventually_sync
from tests.kube.test_operator import NAMESPACE, OperatorProcess, _reporting
from tests.kube.test_sessions import Member, _member, kube_get

IMAGES = {
    "jupyterlab": "6f0c1e0a-5b1e-4c53-9b65-3f4a1d9e0001",
    "vscode": "6f0c1e0a-5b1e-4c53-9b65-3f4a1d9e0002",
    "terminal": "6f0c1e0a-5b1e-4c53-9b65-3f4a1d9e0003",
}
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
POLICIES = f"/apis/networking.k8s.io/v1/namespaces/{NAMESPACE}/networkpolicies"
SESSIONS = f"/apis/gshare.io/v1alpha1/namespaces/{NAMESPACE}/gsharesessions"
DOMAIN = "sessions.localhost"


# The worker's settings to pause an idle session as soon as its timeout passes, unwarned.
IDLE_CHECKS = {"GSHARE_IDLE_WARNING_MINUTES": "0", "GSHARE_IDLE_CHECK_INTERVAL_SECONDS": "1"}


class Exporter:
    """A local HTTP endpoint serving DCGM exporter text, as the exporter prints it with its
    Kubernetes pod mapping; `text` is what it serves now."""

    def __init__(self) -> None:
        self.text = "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
        self.server = loopback.serve(lambda: (200, self.text.encode()), "text/plain; version=0.0.4")
        self.url = loopback.url_of(self.server, "/metrics")

    @property
    def operator_env(self) -> dict[str, str]:
        """The operator's settings to read it every five seconds."""
        return {
            "GSHARE_OPERATOR_METRICS_URL": self.url,
            "GSHARE_OPERATOR_METRICS_SOURCE": "dcgm",
            "GSHARE_OPERATOR_METRICS_INTERVAL": "5",
        }

    def busy(self) -> None:
        """No sample for any session: nobody is idle."""
        self.text = "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"

    def idle(self, session_id: str, card: str) -> None:
        labels = f'gpu="0",UUID="{card}",pod="session-{session_id}",namespace="{NAMESPACE}"'
        self.text = (
            "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
            "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
            f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} 0\n"
            "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).\n"
            "# TYPE DCGM_FI_DEV_FB_USED gauge\n"
            f"DCGM_FI_DEV_FB_USED{{{labels}}} 1536\n"
        )


@dataclass
class Platform:
    """The control plane and the session pages' nginx, for one test."""

    api: str
    pages_port: int
    node: RealNode

    async def signed_in(self, member: Member) -> httpx.AsyncClient:
        client = httpx.AsyncClient(base_url=self.api, timeout=30)
        login = await client.post(
            "/api/v1/auth/login", json={"email": member.email, "password": PASSWORD}
        )
        assert login.status_code == 200, login.text
        client.headers["X-CSRF-Token"] = login.json()["csrf_token"]
        return client

    def page(self, session_id: str) -> httpx.AsyncClient:
        """A browser's view of a session's host, through nginx on loopback."""
        return httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{self.pages_port}",
            headers={"Host": f"{session_id}.{DOMAIN}:{self.pages_port}"},
            timeout=30,
        )


@asynccontextmanager
async def platform(
    node: RealNode,
    database_url: str,
    sessions: Any,
    tmp_path: Path,
    operator: OperatorProcess | None = None,
    *,
    operator_env: dict[str, str] | None = None,
    worker_env: dict[str, str] | None = None,
) -> AsyncIterator[Platform]:
    kube = node.cluster
    kube.install_crd()
    kube.create_namespace(NAMESPACE)
    pages_port = free_port()
    host = SessionHost(
        kube,
        NAMESPACE,
        tmp_path / "programs",
        tmp_path / "volumes",
        Nginx(layout_for(tmp_path / "ingress", pages_port)),
        real_nodes=frozenset({node.name}),
    )
    host.start()

    def operator_settings(api: str) -> dict[str, str]:
        return {
            "GSHARE_SESSIONS_DOMAIN": DOMAIN,
            "GSHARE_SESSION_AUTH_URL": f"{api}/internal/v1/session-access",
            "GSHARE_SESSION_SIGNIN_URL": f"{api}/api/v1/session-entry",
            **(operator_env or {}),
        }

    try:
        async with _reporting(
            kube,
            database_url,
            sessions,
            tmp_path,
            worker=True,
            operator_env=operator_settings,
            worker_env=worker_env,
            operator=operator,
        ) as (cluster_id, api):
            async with sessions() as db, db.begin():
                await db.execute(
                    update(ClusterRow)
                    .where(ClusterRow.id == cluster_id)
                    .values(sessions_domain=f"{DOMAIN}:{pages_port}")
                )

            async def reported() -> bool:
                async with sessions() as db:
                    return bool(await db.scalar(select(func.count()).select_from(GpuCard)))

            await eventually(reported, "the node's card in the inventory", timeout=60)
            yield Platform(api, pages_port, node)
    finally:
        host.stop()
        _clear(node)


def _clear(node: RealNode) -> None:
    """Delete every session resource a test left and wait for their pods to go: the next test
    starts on an empty node with a control plane of its own."""
    with node.cluster.client() as client:
        client.delete(SESSIONS)

        def gone() -> bool:
            listed = client.get(PODS, params={"labelSelector": SESSION_LABEL}).json()
            return not listed.get("items")

        eventually_sync(gone, "the test's session pods to go", timeout=120, interval=0.5)


async def start(
    console: httpx.AsyncClient,
    member: Member,
    kind: str,
    name: str,
    *,
    image_id: str | None = None,
    **more: Any,
) -> Callable[[], Awaitable[dict[str, Any]]]:
    created = await console.post(
        "/api/v1/sessions",
        json={
            **more,
            "name": name,
            "session_type": kind,
            "image_id": image_id or IMAGES[kind],
            "group_id": str(member.group_id),
            "tier_id": str(member.tiers["1/4"]),
            "home_size_gib": 1,
            # The node has this machine's two cores: a quarter each lets several run at once.
            "cpu_millicores": 250,
            "memory_mib": 1024,
        },
    )
    assert created.status_code == 201, created.text
    sid = created.json()["id"]

    async def read() -> dict[str, Any]:
        found = await console.get(f"/api/v1/sessions/{sid}")
        assert found.status_code == 200, found.text
        return dict(found.json())

    return read


async def in_state(read: Callable[[], Awaitable[dict[str, Any]]], *states: str) -> dict[str, Any]:
    """The session once it is in one of `states`; failing at once where it ended otherwise."""
    seen: list[dict[str, Any]] = []

    async def check() -> dict[str, Any] | None:
        found = await read()
        seen[:] = [found]
        assert found["state"] not in ("failed", "stopped") or found["state"] in states, found
        return found if found["state"] in states else None

    try:
        what = f"the session to be {' or '.join(states)}"
        return await eventually(check, what, timeout=240, interval=0.5)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the session: {seen}") from None


async def enter(platform: Platform, console: httpx.AsyncClient, session_id: str) -> str:
    """The owner's way in, as a browser takes it: the console's entry link (a ticket), which the
    access check answers with the session's cookie and a trip to the API and back. Returns the
    cookie."""
    entry = await console.post(f"/api/v1/sessions/{session_id}/entry")
    assert entry.status_code == 200, entry.text
    link = httpx.URL(entry.json()["url"])
    assert link.host == f"{session_id}.{DOMAIN}"
    async with platform.page(session_id) as page:
        first = await page.get(f"/?{link.query.decode()}")
    assert first.status_code == 302, first.text
    assert first.headers["location"].startswith(f"{platform.api}/api/v1/session-entry?rd=")
    cookie = first.cookies.get(ACCESS_COOKIE)
    assert cookie
    return cookie


def cookies(access: str, **more: str) -> dict[str, str]:
    """The Cookie header a browser sends the session's host."""
    jar = {ACCESS_COOKIE: access, **more}
    return {"Cookie": "; ".join(f"{k}={v}" for k, v in jar.items())}


async def answers(page: httpx.AsyncClient, path: str, cookie: str) -> httpx.Response | None:
    """The program's answer at `path` once the pod is ready behind nginx (503 until then)."""
    found = await page.get(path, headers=cookies(cookie))
    return None if found.status_code in (502, 503) else found


async def test_a_jupyterlab_pod_serves_its_owner_alone_and_keeps_its_files_over_an_idle_pause(
    real_node: RealNode, database_url: str, sessions: Any, tmp_path: Path
) -> None:
    owner = await _member(sessions)
    stranger = await _member(sessions, price=False)
    await set_policy(
        sessions, datetime.now(UTC), "group", owner.group_id, {"idle_timeout_minutes": 1}
    )
    exporter = Exporter()
    async with platform(
        real_node,
        database_url,
        sessions,
        tmp_path,
        operator_env=exporter.operator_env,
        worker_env=IDLE_CHECKS,
    ) as stack:
        console = await stack.signed_in(owner)
        read = await start(console, owner, "jupyterlab", "notebook")
        running = await in_state(read, "running")
        sid = running["id"]
        pod = kube_get(real_node.cluster, f"{PODS}/session-{sid}")
        assert pod is not None
        assert pod["spec"]["nodeName"] == real_node.name
        assert pod["status"]["podIP"].startswith("10.250.")
        env = {e["name"] for e in pod["spec"]["containers"][0].get("env") or []}
        assert "HOME" in env

        cookie = await enter(stack, console, sid)
        async with stack.page(sid) as page:
            lab = await eventually(
                lambda: answers(page, "/api/status", cookie), "JupyterLab to answer", timeout=120
            )
            assert lab.status_code == 200, lab.text
            assert "started" in lab.json()
            # Written through JupyterLab's own contents API, into the home volume.
            xsrf = (await page.get("/lab", headers=cookies(cookie))).cookies.get("_xsrf")
            assert xsrf
            written = await page.put(
                "/api/contents/kept.txt",
                headers={"X-XSRFToken": xsrf, **cookies(cookie, _xsrf=xsrf)},
                content=json.dumps({"type": "file", "format": "text", "content": "still here"}),
            )
            assert written.status_code in (200, 201), written.text

            # Nobody else gets in: not anonymously, not with a link of their own.
            anonymous = await page.get("/api/status")
            assert anonymous.status_code == 302
            assert "session-entry" in anonymous.headers["location"]
            other = await stack.signed_in(stranger)
            refused = await other.post(f"/api/v1/sessions/{sid}/entry")
            assert refused.status_code in (403, 404), refused.text
            forged = await page.get("/api/status", headers=cookies("x" * 40))
            assert forged.status_code in (302, 401, 403)
            await other.aclose()

        # Its card idle, as the DCGM exporter (a stand-in speaking its text) says: the worker
        # pauses it once the group's idle timeout, a minute, has passed.
        exporter.idle(sid, pod["metadata"]["annotations"]["nvidia.com/use-gpuuuid"])
        paused = await in_state(read, "paused")
        exporter.busy()
        into_pause = [t for t in paused["transitions"] if t["to_state"] == "pausing"]
        assert "idle" in into_pause[-1]["reason"], paused["transitions"]
        assert paused["billing"] is False
        assert paused["peak_vram_mib"] == 1536  # as the exporter reported it
        async with sessions() as db:
            told = set(
                await db.scalars(
                    select(Notification.kind).where(Notification.user_id == running["owner_id"])
                )
            )
        assert {"session.idle", "session.paused.idle"} <= told
        await eventually(
            lambda: kube_get(real_node.cluster, f"{PODS}/session-{sid}") is None,
            "the pod to be gone",
            timeout=60,
        )
        resumed = await console.post(f"/api/v1/sessions/{sid}/resume")
        assert resumed.status_code == 200, resumed.text
        await in_state(read, "running")
        cookie = await enter(stack, console, sid)
        async with stack.page(sid) as page:
            kept = await eventually(
                lambda: answers(page, "/api/contents/kept.txt?content=1", cookie),
                "the resumed JupyterLab to answer",
                timeout=120,
            )
            assert kept.status_code == 200, kept.text
            assert kept.json()["content"] == "still here"

        stopped = await console.post(f"/api/v1/sessions/{sid}/stop")
        assert stopped.status_code == 200, stopped.text
        await in_state(read, "stopped")
        await console.aclose()
    exporter.server.shutdown()


async def test_terminal_and_vscode_pods_serve_their_pages(
    real_node: RealNode, database_url: str, sessions: Any, tmp_path: Path
) -> None:
    owner = await _member(sessions)
    async with platform(real_node, database_url, sessions, tmp_path) as stack:
        console = await stack.signed_in(owner)
        reads = {
            kind: await start(console, owner, kind, f"{kind}-{uuid.uuid4().hex[:4]}")
            for kind in ("terminal", "vscode")
        }
        for kind, read in reads.items():
            sid = (await in_state(read, "running"))["id"]
            cookie = await enter(stack, console, sid)
            async with stack.page(sid) as page:
                found = await eventually(
                    lambda page=page, cookie=cookie: answers(page, "/", cookie),
                    f"the {kind} page",
                    timeout=180,
                )
            assert found.status_code == 200, (kind, found.status_code, found.text[:300])
            marker = "ttyd" if kind == "terminal" else "code-server"
            assert marker in found.text.lower(), (kind, found.text[:300])
            stopped = await console.post(f"/api/v1/sessions/{sid}/stop")
            assert stopped.status_code == 200, stopped.text
        await console.aclose()


async def test_a_session_whose_image_needs_root_fails_with_the_reason_its_owner_sees(
    real_node: RealNode, database_url: str, sessions: Any, tmp_path: Path
) -> None:
    """An image made to run as root with a writable root filesystem (a small program in an
    image of its own, built here): the kubelet runs it as the restricted level says, as user
    1000 on a read-only root, so it exits; the session fails within its start timeout with
    the cluster's words, and nothing is left held or billed."""
    reference = f"localhost/gshare/needs-root:{uuid.uuid4().hex[:8]}"
    real_node.ctr(
        "images",
        "import",
        "-",
        stdin=program_archive(real_node.cluster.bin / "needs-root", reference, "/ttyd", "0:0"),
    )
    image_id = uuid.uuid4()
    await stored(
        sessions,
        CatalogImage(
            id=image_id,
            session_type="terminal",
            name=f"root-{image_id.hex[:6]}",
            reference=reference,
            created_at=datetime.now(UTC),
        ),
    )
    owner = await _member(sessions)
    worker_env = {
        "GSHARE_SESSION_START_TIMEOUT_MINUTES": "0.5",
        "GSHARE_SESSION_RECONCILE_INTERVAL_SECONDS": "1",
    }
    async with platform(
        real_node, database_url, sessions, tmp_path, worker_env=worker_env
    ) as stack:
        console = await stack.signed_in(owner)
        read = await start(console, owner, "terminal", "rooted", image_id=str(image_id))
        sid = (await read())["id"]

        def exited() -> dict[str, Any] | None:
            pod = kube_get(real_node.cluster, f"{PODS}/session-{sid}") or {}
            statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
            return (statuses[0].get("lastState") or {}).get("terminated")

        ended = await eventually(exited, "the program to exit", timeout=120)
        assert ended["exitCode"] == 1, ended
        # What the program said, through the API server from the kubelet: the level held.
        with real_node.cluster.client() as client:
            said = client.get(f"{PODS}/session-{sid}/log", params={"previous": "true"})
        assert said.status_code == 200, said.text
        assert "runs as user 1000, not root" in said.text, said.text
        assert "read-only file system" in said.text, said.text
        failed = await in_state(read, "failed")
        assert "did not start within 0.5 minutes" in failed["state_reason"], failed
        assert "CrashLoopBackOff" in failed["state_reason"] or "Error" in failed["state_reason"]
        warnings = [s for s in failed["startup_steps"] if s["step"] == "warning"]
        assert any("exit code 1" in w["message"] for w in warnings), failed["startup_steps"]
        assert failed["billing"] is False
        await console.aclose()
    await assert_ledger_clean(sessions)


@contextmanager
def outside_hosts() -> Iterator[tuple[str, str]]:
    """Two addresses outside the cluster with a TCP server on them: a network namespace of its
    own (held by a process, so nothing is mounted) behind a veth pair that this host routes, as
    hosts on the internet would be. Yields both as `address:port`."""
    near = f"gso{uuid.uuid4().hex[:8]}"
    holder = subprocess.Popen(["unshare", "--net", "sleep", "infinity"])
    inside = ["nsenter", f"--net=/proc/{holder.pid}/ns/net"]
    server = None
    try:
        eventually_sync(
            lambda: os.readlink(f"/proc/{holder.pid}/ns/net") != os.readlink("/proc/self/ns/net"),
            "the namespace",
            timeout=10,
        )
        for command in (
            ["ip", "link", "add", near, "type", "veth", "peer", "name", f"{near}p"],
            ["ip", "link", "set", f"{near}p", "netns", str(holder.pid)],
            ["ip", "addr", "add", "198.51.100.1/29", "dev", near],
            ["ip", "link", "set", near, "up"],
            [*inside, "ip", "addr", "add", "198.51.100.2/29", "dev", f"{near}p"],
            [*inside, "ip", "addr", "add", "198.51.100.3/29", "dev", f"{near}p"],
            [*inside, "ip", "link", "set", f"{near}p", "up"],
            [*inside, "ip", "route", "add", "default", "via", "198.51.100.1"],
        ):
            subprocess.run(command, check=True, capture_output=True)
        server = subprocess.Popen(
            [*inside, sys.executable, "-m", "http.server", "--bind", "0.0.0.0", "8000"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        hosts = ("198.51.100.2", "198.51.100.3")
        for host in hosts:
            eventually_sync(
                lambda host=host: _listens(host, 8000), "the outside server to listen", timeout=30
            )
        yield (f"{hosts[0]}:8000", f"{hosts[1]}:8000")
    finally:
        for proc in (server, holder):
            if proc is not None:
                proc.kill()
                proc.wait()
        subprocess.run(["ip", "link", "delete", near], check=False, capture_output=True)


def _listens(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), 1).close()
    except OSError:
        return False
    return True


def run_in(node: RealNode, pod: dict[str, Any], *argv: str) -> str:
    """What `argv` prints, run in the pod's session container (as the container runs: its
    user, its root filesystem, its seccomp profile) through the node's containerd; a failure
    raises RuntimeError."""
    container = pod["status"]["containerStatuses"][0]["containerID"].removeprefix("containerd://")
    return node.ctr(
        "tasks", "exec", "--exec-id", f"probe-{uuid.uuid4().hex[:8]}", container, *argv, timeout=30
    ).strip()


def connects(node: RealNode, pod: dict[str, Any], address: str) -> bool:
    """Whether the pod's session container opens a TCP connection to `address` (host:port)
    within three seconds."""
    host, port = address.rsplit(":", 1)
    try:
        run_in(node, pod, "timeout", "3", "bash", "-c", f"exec 3<>/dev/tcp/{host}/{port}")
    except RuntimeError:
        return False
    return True


@contextmanager
def node_listener() -> Iterator[int]:
    """A TCP server on every address of this host (the node), as a node's exporter or its
    kubelet would listen. Yields its port."""
    server = socket.create_server(("0.0.0.0", 0))
    server.listen(16)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


async def shared_volume(sessions: Any, group_id: uuid.UUID, name: str, mode: str) -> str:
    """A shared volume of the group, as its admin makes one (see the catalog's tests)."""
    volume_id = uuid.uuid4()
    await stored(
        sessions,
        Volume(
            id=volume_id,
            kind="shared",
            group_id=group_id,
            name=name,
            size_gib=1,
            access_mode=mode,
            created_at=datetime.now(UTC),
        ),
    )
    return str(volume_id)


async def stored(sessions: Any, row: Any) -> None:
    """`row` written in a transaction of its own."""
    async with sessions() as db, db.begin():
        db.add(row)


async def test_sessions_keep_their_level_share_group_volumes_and_reach_no_other_pod_nor_node(
    real_node: RealNode, database_url: str, sessions: Any, tmp_path: Path
) -> None:
    owner = await _member(sessions)
    team = await shared_volume(sessions, owner.group_id, "team", "ReadWriteMany")
    datasets = await shared_volume(sessions, owner.group_id, "datasets", "ReadOnlyMany")
    closed = await _member(sessions, price=False)
    await set_policy(sessions, datetime.now(UTC), "group", closed.group_id, {"egress": "none"})
    closed = Member(closed.email, closed.group_id, owner.tiers)
    # `listed`: one of the two outside hosts, and the node's address (which stays cut out).
    fenced = await _member(sessions, price=False)
    await set_policy(
        sessions,
        datetime.now(UTC),
        "group",
        fenced.group_id,
        {"egress": "listed", "egress_cidrs": ["198.51.100.2/32", f"{host_address()}/32"]},
    )
    fenced = Member(fenced.email, fenced.group_id, owner.tiers)
    async with platform(real_node, database_url, sessions, tmp_path) as stack:
        pods = []
        for member, volumes in (
            (owner, [team, datasets]),
            (owner, [team]),
            (closed, []),
            (fenced, []),
        ):
            console = await stack.signed_in(member)
            read = await start(
                console,
                member,
                "terminal",
                f"t-{uuid.uuid4().hex[:4]}",
                shared_volume_ids=volumes,
            )
            sid = (await in_state(read, "running"))["id"]

            def ready(sid: str = sid) -> dict[str, Any] | None:
                pod = kube_get(real_node.cluster, f"{PODS}/session-{sid}")
                statuses = ((pod or {}).get("status") or {}).get("containerStatuses") or []
                return pod if statuses and statuses[0].get("ready") else None

            pods.append(await eventually(ready, "the pod to be ready", timeout=120))
            await console.aclose()
        first, second, shut, listed = pods

        # The restricted level, as the real kubelet and runc made the container.
        assert run_in(real_node, first, "id", "-u") == "1000"
        status = dict(
            line.split(":\t", 1)
            for line in run_in(real_node, first, "cat", "/proc/self/status").splitlines()
            if ":\t" in line
        )
        assert status["NoNewPrivs"].strip() == "1"
        assert status["Seccomp"].strip() == "2"  # a filter: RuntimeDefault
        assert int(status["CapEff"], 16) == 0
        with pytest.raises(RuntimeError, match="Read-only file system"):
            run_in(real_node, first, "touch", "/root-probe")

        # The group's volumes: one to share, written by one session and read by the other;
        # one mounted read-only.
        run_in(real_node, first, "bash", "-c", "echo from-first > /shared/team/note")
        assert run_in(real_node, second, "cat", "/shared/team/note") == "from-first"
        with pytest.raises(RuntimeError, match="Read-only file system"):
            run_in(real_node, first, "touch", "/shared/datasets/probe")
        assert "datasets" not in run_in(real_node, second, "ls", "/shared")

        second_page = f"{second['status']['podIP']}:8080"
        gateway = str(ipaddress.ip_network(POD_CIDR).network_address + 1)
        with outside_hosts() as (outside, elsewhere), node_listener() as port:
            assert connects(real_node, first, outside), "open egress reaches outside"
            assert connects(real_node, first, elsewhere), "open egress reaches outside"
            # No session reaches another's port, of the same owner or not.
            assert not connects(real_node, first, second_page)
            assert not connects(real_node, shut, second_page)
            assert not connects(real_node, listed, second_page)
            # `egress: none` reaches nothing, where `open` reached the same hosts.
            assert not connects(real_node, shut, outside)
            # `listed` reaches what it lists, and nothing else outside.
            assert connects(real_node, listed, outside)
            assert not connects(real_node, listed, elsewhere)
            # Nor the node itself, at its address or as the pods' gateway, under `open` or
            # where a list names it.
            node_addresses = (f"{host_address()}:{port}", f"{gateway}:{port}")
            for address in node_addresses:
                assert not connects(real_node, first, address), address
                assert not connects(real_node, listed, address), address
            # Which is the policy's doing: without it, the same pod reaches the node.
            with real_node.cluster.client() as client:
                gone = client.delete(
                    f"{POLICIES}/session-{first['metadata']['labels'][SESSION_LABEL]}"
                )
                assert gone.status_code == 200, gone.text
            for address in node_addresses:
                eventually_sync(
                    lambda address=address: connects(real_node, first, address),
                    f"the node at {address} without the policy",
                    timeout=60,
                )


async def test_an_operator_killed_while_real_pods_run_loses_and_duplicates_nothing(
    real_node: RealNode, database_url: str, sessions: Any, tmp_path: Path
) -> None:
    owner = await _member(sessions)
    operator = OperatorProcess()
    async with platform(real_node, database_url, sessions, tmp_path, operator) as stack:
        console = await stack.signed_in(owner)
        reads = [
            await start(console, owner, "terminal", f"kept-{n}-{uuid.uuid4().hex[:4]}")
            for n in range(2)
        ]
        first, second = [(await in_state(read, "running"))["id"] for read in reads]
        uids = {
            sid: kube_get(real_node.cluster, f"{PODS}/session-{sid}")["metadata"]["uid"]  # type: ignore[index]
            for sid in (first, second)
        }
        assert operator.process is not None
        operator.process.kill()
        operator.process.wait()
        # While no operator runs, one session is paused; the other is left alone.
        paused = await console.post(f"/api/v1/sessions/{first}/pause")
        assert paused.status_code == 200, paused.text
        operator.restart()
        await in_state(reads[0], "paused")
        await eventually(
            lambda: kube_get(real_node.cluster, f"{PODS}/session-{first}") is None,
            "the paused session's pod to go",
            timeout=60,
        )
        kept = kube_get(real_node.cluster, f"{PODS}/session-{second}")
        assert kept is not None
        assert kept["metadata"]["uid"] == uids[second], "the running pod was made anew"
        assert (await reads[1]())["state"] == "running"
        with real_node.cluster.client() as client:
            listed = client.get(PODS, params={"labelSelector": SESSION_LABEL}).json()
        names = [p["metadata"]["name"] for p in listed["items"]]
        assert names == [f"session-{second}"], names
        cookie = await enter(stack, console, second)
        async with stack.page(second) as page:
            found = await eventually(lambda: answers(page, "/", cookie), "the page", timeout=60)
        assert found.status_code == 200
        for sid, read in zip((first, second), reads, strict=True):
            stopped = await console.post(f"/api/v1/sessions/{sid}/stop")
            assert stopped.status_code == 200, stopped.text
            await in_state(read, "stopped")
        await console.aclose()
    await assert_ledger_clean(sessions)
