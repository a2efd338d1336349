"""`make demo`: everything `make up` runs, plus a local simulated GPU cluster (by default 2 nodes
of 4 A100-80GB cards) and its operator, registered automatically, and an nginx on loopback that
serves each session's page (a real program on this host) behind the platform's access check.

    python -m gshare.demo        (GSHARE_DEMO_NODES, GSHARE_DEMO_CARDS change the cluster;
                                  GSHARE_DEMO_SESSIONS_PORT is nginx's port, the API's plus one;
                                  GSHARE_DEMO_NODE: auto, real or simulated)

Where this machine can run a real node (root, Debian's containerd, runc, CNI plugins, iptables
and ipset, and the session images from `make images`), the cluster is one real node with the
first node's cards and sessions run as pods from the session images (gshare.devnode); elsewhere
it is kwok's simulated nodes and each session's program runs on this host. The demo says which.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from gshare.cli import (
    _configure_logging,
    admin_email,
    bootstrap_admin,
    check_bootstrap_password,
    database,
    migrate,
    serve,
)
from gshare.demo import loopback
from gshare.kit.settings import Settings, get_settings

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from gshare import devcluster
    from gshare.capacity.tiers import TierSpec
    from gshare.demo.sessionhost import SessionHost

log = logging.getLogger("gshare.demo")
DEMO_NAME = "demo"
# Session pages are served over plain HTTP on *.localhost: browsers resolve those names to
# loopback themselves and treat them as secure origins, so the __Host- access cookie (which
# must be Secure) works without a certificate (docs/explanation/clusters.md).
SESSIONS_DOMAIN = "sessions.localhost"
TOKEN_REFRESH_SECONDS = 20 * 60
XID_FILE = "xid"  # in the demo cluster's folder: cards the DCGM stand-in shows an XID for
DEFAULT_XID = 79  # the GPU has fallen off the bus
CARD_UUID = re.compile(r"GPU-[A-Za-z0-9-]{1,124}")
# A sandboxed runtime class, as gVisor's would be installed: its pods run only on nodes with the
# label. The demo's last node carries it and runs pods in user namespaces.
SANDBOX_CLASS, SANDBOX_LABEL = "gvisor", "gshare.io/sandbox"
DEDICATED_KEY = "gshare.io/dedicated"
MIRROR_SECONDS = 2.0


def register_demo_cluster(
    url: str, settings: Settings, server: str, kubeconfig: str, sessions_domain: str
) -> uuid.UUID:
    """Register (or re-point, since its ports change at every start) the demo cluster."""
    import asyncio

    from sqlalchemy import select

    from gshare.clusters.kubeconfigs import FileKubeconfigStore
    from gshare.clusters.models import Cluster
    from gshare.kit.db import make_engine, make_sessionmaker
    from gshare.kit.ids import new_id

    async def upsert() -> uuid.UUID:
        engine = make_engine(url, pool_size=1)
        try:
            async with make_sessionmaker(engine)() as db, db.begin():
                cluster = await db.scalar(select(Cluster).where(Cluster.name == DEMO_NAME))
                now = datetime.now(UTC)
                if cluster is None:
                    cluster = Cluster(
                        id=new_id(),
                        name=DEMO_NAME,
                        inventory_sequence=0,
                        created_at=now,
                        # The demo's last node runs this class (main below): sandboxed
                        # sessions can be tried at once.
                        sandbox_runtime_class=SANDBOX_CLASS,
                    )
                    db.add(cluster)
                cluster.api_server, cluster.status, cluster.status_message = server, "connected", ""
                cluster.sessions_domain = sessions_domain
                cluster.last_contact_at = now
                return cluster.id
        finally:
            await engine.dispose()

    cluster_id = asyncio.run(upsert())
    asyncio.run(FileKubeconfigStore(settings.data_dir / "clusters").put(cluster_id, kubeconfig))
    return cluster_id


DEMO_ORG, DEMO_GROUP = "Demo Lab", "Research"
DEMO_CREDITS = 1000  # minted into the demo organization
DEMO_ADMIN_CREDITS = 100  # of which the admin gets this much to start sessions with
A100 = "NVIDIA-A100-SXM4-80GB"


async def priced_a100(db: AsyncSession, now: datetime, wanted: list[TierSpec]) -> list[uuid.UUID]:
    """The simulated cards' model, at 8 credits an hour for the whole card, with the `wanted`
    tiers; their ids, in that order."""
    from gshare.capacity import service as capacity
    from gshare.capacity import tiers
    from gshare.capacity.models import GpuModel
    from gshare.credits.amounts import MICRO
    from gshare.kit.ids import new_id

    model = GpuModel(
        id=new_id(),
        name=A100,
        memory_mib=81920,
        split_count=8,
        exclusive_price=8 * MICRO,
        created_at=now,
    )
    db.add(model)
    await db.flush()
    decided = tiers.tier_set(capacity.card_model(model), wanted)
    assert isinstance(decided, tiers.TierSetAccepted), decided
    rows = [capacity.tier_row(model.id, t, now) for t in decided.tiers]
    db.add_all(rows)
    return [r.id for r in rows]


def seed_demo(url: str, email: str) -> None:
    """The first time only: the simulated cards' model priced with its usual tiers, and the
    bootstrap admin in a group of a demo organization with credits, so that sessions can be
    started from the console at once."""
    import asyncio

    from sqlalchemy import func, select

    from gshare.capacity import tiers
    from gshare.capacity.models import GpuModel
    from gshare.credits import operations
    from gshare.credits.amounts import MICRO
    from gshare.identity.models import Group, Membership, Organization, User
    from gshare.kit.db import make_engine, make_sessionmaker
    from gshare.kit.ids import new_id

    async def seed() -> None:
        engine = make_engine(url, pool_size=1)
        try:
            async with make_sessionmaker(engine)() as db, db.begin():
                now = datetime.now(UTC)
                if not await db.scalar(select(func.count()).select_from(GpuModel)):
                    await priced_a100(
                        db, now, [tiers.fraction(4), tiers.fraction(2), tiers.exclusive()]
                    )
                admin = await db.scalar(select(User).where(User.email == email))
                if admin is None or await db.scalar(
                    select(Organization.id).where(Organization.name == DEMO_ORG)
                ):
                    return
                org = Organization(id=new_id(), name=DEMO_ORG, created_at=now)
                group = Group(id=new_id(), org_id=org.id, name=DEMO_GROUP, created_at=now)
                db.add(org)
                await db.flush()
                db.add(group)
                await db.flush()
                db.add(
                    Membership(user_id=admin.id, group_id=group.id, role="member", created_at=now)
                )
                org_wallet = await operations.account_id(db, "org", org.id, now)
                group_wallet = await operations.account_id(db, "group", group.id, now)
                user_wallet = await operations.account_id(db, "user", admin.id, now)
                await operations.mint(
                    db, wallet_id=org_wallet, amount=DEMO_CREDITS * MICRO, now=now
                )
                for source, target, amount in (
                    (org_wallet, group_wallet, DEMO_ADMIN_CREDITS * 2),
                    (group_wallet, user_wallet, DEMO_ADMIN_CREDITS),
                ):
                    await operations.move(
                        db,
                        from_id=source,
                        to_id=target,
                        amount=amount * MICRO,
                        kind="allocation",
                        now=now,
                    )
        finally:
            await engine.dispose()

    asyncio.run(seed())


def raised_xids(text: str) -> dict[str, int]:
    """The XIDs a person asked the stand-in to raise: one card a line, `<card UUID> [XID]` (79
    when left out); a line that is neither is ignored."""
    raised = {}
    for line in text.splitlines():
        words = line.split()
        if not 1 <= len(words) <= 2 or not CARD_UUID.fullmatch(words[0]):
            continue
        xid = words[1] if len(words) == 2 else str(DEFAULT_XID)
        if xid.isdigit() and 0 < int(xid) < 2**31:
            raised[words[0]] = int(xid)
    return raised


def _simulated_dcgm(cluster: devcluster.Cluster, namespace: str, xid_file: Path) -> str:
    """A stand-in for the DCGM exporter, which needs a real GPU: a loopback endpoint serving its
    text format, with every session pod's GPU idle and a little memory in use. The operator
    reads it like the real one, so utilization, peak VRAM and idle pauses (when a policy sets
    an idle timeout) work as on a real cluster. Returns its URL.

    A card named in `xid_file` shows that XID as its last one (`DCGM_FI_DEV_XID_ERRORS`), so
    the operator reports it and the card drains itself; a card taken out of the file shows 0
    again, so writing it back raises the XID anew."""
    named: set[str] = set()

    def xids() -> list[str]:
        try:
            raised = raised_xids(xid_file.read_text())
        except (OSError, UnicodeDecodeError):
            raised = {}
        named.update(raised)
        lines = [
            "# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.",
            "# TYPE DCGM_FI_DEV_XID_ERRORS gauge",
        ]
        for card in sorted(named):
            labels = f'gpu="0",UUID="{card}"'
            lines.append(f"DCGM_FI_DEV_XID_ERRORS{{{labels}}} {raised.get(card, 0)}")
        return lines

    def text() -> str:
        with cluster.client() as client:
            pods = client.get(f"/api/v1/namespaces/{namespace}/pods").json().get("items", [])
        lines = [
            "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).",
            "# TYPE DCGM_FI_DEV_GPU_UTIL gauge",
            "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).",
            "# TYPE DCGM_FI_DEV_FB_USED gauge",
        ]
        for pod in pods:
            meta = pod.get("metadata") or {}
            card = (meta.get("annotations") or {}).get("nvidia.com/use-gpuuuid")
            if not card:
                continue
            labels = f'gpu="0",UUID="{card}",pod="{meta["name"]}",namespace="{namespace}"'
            lines.append(f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} 0")
            lines.append(f"DCGM_FI_DEV_FB_USED{{{labels}}} 512")
        return "\n".join(lines + xids()) + "\n"

    def answer() -> tuple[int, bytes]:
        try:
            return 200, text().encode()
        except Exception:
            return 503, b"the simulated cluster cannot be read\n"

    return loopback.url_of(loopback.serve(answer, "text/plain; version=0.0.4"), "/metrics")


def _mirror_dedications(
    url: str, cluster: devcluster.Cluster, cluster_id: uuid.UUID, stop: threading.Event
) -> None:
    """Do what an administrator does by hand on a real cluster after dedicating a node in the
    console: label and taint it for its tenant, and lift both when the dedication goes, so the
    operator reports the node ready and session pods can require and tolerate it."""
    import asyncio

    from sqlalchemy import select

    from gshare.capacity.models import GpuCard, NodeDedication
    from gshare.kit.db import make_engine, make_sessionmaker

    async def wanted() -> dict[str, str | None]:
        engine = make_engine(url, pool_size=1)
        try:
            async with make_sessionmaker(engine)() as db:
                nodes = set(
                    await db.scalars(
                        select(GpuCard.node).where(GpuCard.cluster_id == cluster_id).distinct()
                    )
                )
                found = list(
                    await db.scalars(
                        select(NodeDedication).where(NodeDedication.cluster_id == cluster_id)
                    )
                )
        finally:
            await engine.dispose()
        whole = next((str(d.tenant_id) for d in found if d.node is None), None)
        by_node = {d.node: str(d.tenant_id) for d in found if d.node is not None}
        return {node: by_node.get(node, whole) for node in nodes}

    applied: dict[str, str | None] = {}
    while not stop.wait(MIRROR_SECONDS):
        try:
            for node, tenant in asyncio.run(wanted()).items():
                if applied.get(node, "unset") == tenant:
                    continue
                taints = (
                    [{"key": DEDICATED_KEY, "value": tenant, "effect": "NoSchedule"}]
                    if tenant
                    else []
                )
                cluster.set_node(node, labels={DEDICATED_KEY: tenant}, taints=taints)
                applied[node] = tenant
        except Exception as exc:  # the database or the cluster going down with the demo
            log.warning("cannot mirror node dedications: %r", exc)


def _keep_token_fresh(
    settings: Settings, cluster_id: uuid.UUID, path: Path, stop: threading.Event
) -> None:
    import asyncio

    from gshare.clusters.keystore import key_store_for, load_or_create

    store = key_store_for(settings)
    while True:
        now = datetime.now(UTC)
        keys = asyncio.run(load_or_create(store, now))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(keys.mint(str(cluster_id), now))
        if stop.wait(TOKEN_REFRESH_SECONDS):
            return


IMAGE_PREFIX, IMAGE_TAG = "localhost/gshare", "dev"  # as `make images` names them


def local_image(name: str) -> str:
    prefix = os.environ.get("GSHARE_IMAGE_PREFIX") or IMAGE_PREFIX
    return f"{prefix}/{name}:{os.environ.get('GSHARE_IMAGE_TAG') or IMAGE_TAG}"


def podman_env() -> dict[str, str]:
    from gshare.devcluster import ROOT

    return {**os.environ, "CONTAINERS_CONF": str(ROOT / "hack" / "containers.conf")}


def real_node_refused() -> str | None:
    """Why the demo's sessions cannot run as real pods here (one line), or None when they can:
    a real node runs on this machine and `make images` has built the session images."""
    from gshare.devnode import unavailable

    reason = unavailable()
    if reason is not None:
        return reason
    for kind in ("jupyterlab", "terminal", "vscode"):
        name = local_image(f"session-{kind}")
        found = subprocess.run(  # noqa: S603 - Debian's podman
            ["podman", "image", "exists", name],  # noqa: S607
            env=podman_env(),
            capture_output=True,
            check=False,
        )
        if found.returncode != 0:
            return f"the image {name} is not built (`make images` builds it)"
    return None


def main() -> None:
    settings = get_settings()
    _configure_logging(settings)
    if shutil.which("go") is None:
        print(
            "gshare demo: the simulated GPU cluster is built from Go modules, and Go is not "
            "installed (see https://go.dev/doc/install)",
            file=sys.stderr,
        )
        raise SystemExit(2)
    check_bootstrap_password(settings)
    from gshare.demo.nginx import Nginx, binary, layout_for
    from gshare.demo.sessionhost import SessionHost
    from gshare.devcluster import Cluster, a100_nodes, testenv_bin
    from gshare.devnode import RealNode, session_images

    if binary() is None:
        print(
            "gshare demo: session pages are served by Debian's nginx, which is not installed "
            "(`make demo` installs it)",
            file=sys.stderr,
        )
        raise SystemExit(2)

    print(
        "  building or reusing the simulated cluster (the first build takes minutes)...", flush=True
    )
    folder = settings.data_dir.resolve() / "demo-cluster"
    shutil.rmtree(folder, ignore_errors=True)
    cluster = Cluster(DEMO_NAME, folder, testenv_bin()).start()
    stop = threading.Event()
    operator: subprocess.Popen[bytes] | None = None
    sessions_port = int(os.environ.get("GSHARE_DEMO_SESSIONS_PORT") or settings.port + 1)
    host: SessionHost | None = None
    real: RealNode | None = None
    try:
        cluster_nodes = a100_nodes(
            int(os.environ.get("GSHARE_DEMO_NODES", "2")),
            int(os.environ.get("GSHARE_DEMO_CARDS", "4")),
        )
        wanted = os.environ.get("GSHARE_DEMO_NODE") or "auto"
        why_simulated = "GSHARE_DEMO_NODE is simulated" if wanted == "simulated" else None
        why_simulated = why_simulated or real_node_refused()
        if wanted == "real" and why_simulated is not None:
            raise SystemExit(f"gshare demo: GSHARE_DEMO_NODE is real, but {why_simulated}")
        if why_simulated is None:
            # One real node with the first node's cards; the pods run from the session images.
            cluster_nodes = cluster_nodes[:1]
            print("  starting a real node (kubelet, containerd, runc) for the sessions...")
            real = RealNode(cluster, cluster_nodes[0].name, cluster_nodes[0].cards).start()
            real.load_images(session_images(local_image), podman_env())
            real.start_provisioner(local_image("session-terminal"))
            mode = (
                f"sessions run as real pods on node {real.name} (kubelet, containerd and runc "
                "on this host; no GPU: a device plugin stand-in counts the card shares)"
            )
        else:
            cluster.add_gpu_nodes(cluster_nodes)
            mode = f"sessions run as programs on this host, not as pods: {why_simulated}"
        nodes = [n.name for n in cluster_nodes]
        if len(nodes) > 1:
            cluster.add_runtime_class(SANDBOX_CLASS, "runsc", {SANDBOX_LABEL: SANDBOX_CLASS})
            cluster.set_node(nodes[-1], labels={SANDBOX_LABEL: SANDBOX_CLASS}, user_namespaces=True)
        cluster.install_crd()
        cluster.create_namespace(settings.sessions_namespace)
        with database(settings) as url:
            migrate(url)
            bootstrap_admin(settings, url)
            seed_demo(url, admin_email(settings))
            cluster_id = register_demo_cluster(
                url,
                settings,
                cluster.server,
                cluster.embedded_kubeconfig(),
                f"{SESSIONS_DOMAIN}:{sessions_port}",
            )
            token_file = settings.data_dir.resolve() / "demo-operator-token"
            threading.Thread(
                target=_keep_token_fresh, daemon=True, args=(settings, cluster_id, token_file, stop)
            ).start()
            while not token_file.exists():
                stop.wait(0.05)
            threading.Thread(
                target=_mirror_dedications, daemon=True, args=(url, cluster, cluster_id, stop)
            ).start()
            env = {
                **os.environ,
                "KUBECONFIG": str(cluster.kubeconfig),
                "GSHARE_OPERATOR_API_URL": f"http://{settings.host}:{settings.port}",
                "GSHARE_OPERATOR_CLUSTER_ID": str(cluster_id),
                "GSHARE_OPERATOR_TOKEN_FILE": str(token_file),
                "GSHARE_OPERATOR_NAMESPACE": settings.sessions_namespace,
                "GSHARE_OPERATOR_METRICS_URL": _simulated_dcgm(
                    cluster, settings.sessions_namespace, folder / XID_FILE
                ),
                "GSHARE_OPERATOR_METRICS_SOURCE": "dcgm",
                "GSHARE_SESSIONS_DOMAIN": SESSIONS_DOMAIN,
                "GSHARE_SESSION_AUTH_URL": (
                    f"http://{settings.host}:{settings.port}/internal/v1/session-access"
                ),
                "GSHARE_SESSION_SIGNIN_URL": (
                    f"http://{settings.host}:{settings.port}/api/v1/session-entry"
                ),
            }
            operator = subprocess.Popen(
                [sys.executable, "-m", "gshare", "operator"],
                env=env,
                stdout=(folder / "operator.log").open("wb"),
                stderr=subprocess.STDOUT,
            )
            host = SessionHost(
                cluster,
                settings.sessions_namespace,
                folder / "sessions",
                settings.data_dir.resolve() / "demo-volumes",
                Nginx(layout_for(folder / "ingress", sessions_port)),
                real_nodes=frozenset({real.name}) if real is not None else frozenset(),
            )
            host.start()
            print(
                f"  cluster '{DEMO_NAME}' is up at {cluster.server} (logs in {folder})\n"
                f"  {mode}\n"
                f"  session pages: http://<session>.{SESSIONS_DOMAIN}:{sessions_port}/ "
                "through nginx and the access check\n"
                f"  sign in as {admin_email(settings)} with the "
                "password printed the first time (or GSHARE_BOOTSTRAP_ADMIN_PASSWORD), start a "
                "session under Sessions and click Open\n"
                f"  a card raises XID {DEFAULT_XID} (and drains itself) when you write its UUID "
                f"to {folder / XID_FILE}, e.g. `echo GPU-gpu0-00-a100 > {folder / XID_FILE}`\n"
                + (
                    f"  isolation: node {nodes[-1]} runs the sandboxed RuntimeClass "
                    f"'{SANDBOX_CLASS}' and user namespaces; "
                    if len(nodes) > 1
                    else "  "
                )
                + "a node dedicated under Admin > Isolation is labelled and tainted for its "
                "tenant here",
                flush=True,
            )
            serve(settings, url, run_worker=True)
    finally:
        stop.set()
        if host is not None:
            host.stop()
        if operator is not None:
            operator.send_signal(signal.SIGTERM)
            try:
                operator.wait(15)
            except subprocess.TimeoutExpired:
                operator.kill()
        if real is not None:
            real.stop()
        cluster.stop()
