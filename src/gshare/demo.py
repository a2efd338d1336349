"""`make demo`: everything `make up` runs, plus a local simulated GPU cluster (by default 2 nodes
of 4 A100-80GB cards) and its operator, registered automatically.

    python -m gshare.demo        (GSHARE_DEMO_NODES, GSHARE_DEMO_CARDS change the cluster)
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path

from gshare.cli import (
    _configure_logging,
    bootstrap_admin,
    check_bootstrap_password,
    database,
    migrate,
    serve,
)
from gshare.kit.settings import Settings, get_settings

log = logging.getLogger("gshare.demo")
DEMO_NAME = "demo"
TOKEN_REFRESH_SECONDS = 20 * 60


def register_demo_cluster(url: str, settings: Settings, server: str, kubeconfig: str) -> uuid.UUID:
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
            async with make_sessionmaker(engine)() as session, session.begin():
                cluster = await session.scalar(select(Cluster).where(Cluster.name == DEMO_NAME))
                now = datetime.now(UTC)
                if cluster is None:
                    cluster = Cluster(
                        id=new_id(), name=DEMO_NAME, inventory_sequence=0, created_at=now
                    )
                    session.add(cluster)
                cluster.api_server, cluster.status, cluster.status_message = server, "connected", ""
                cluster.last_contact_at = now
                return cluster.id
        finally:
            await engine.dispose()

    cluster_id = asyncio.run(upsert())
    asyncio.run(FileKubeconfigStore(settings.data_dir / "clusters").put(cluster_id, kubeconfig))
    return cluster_id


def _keep_token_fresh(
    settings: Settings, cluster_id: uuid.UUID, path: Path, stop: threading.Event
) -> None:
    from gshare.clusters.keyfile import load_or_create

    while True:
        now = datetime.now(UTC)
        keys = load_or_create(settings.data_dir / "internal-keys.json", now)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(keys.mint(str(cluster_id), now))
        if stop.wait(TOKEN_REFRESH_SECONDS):
            return


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
    from gshare.devcluster import Cluster, a100_nodes, testenv_bin

    print(
        "  building or reusing the simulated cluster (the first build takes minutes)...", flush=True
    )
    folder = settings.data_dir.resolve() / "demo-cluster"
    shutil.rmtree(folder, ignore_errors=True)
    cluster = Cluster(DEMO_NAME, folder, testenv_bin()).start()
    stop = threading.Event()
    operator: subprocess.Popen[bytes] | None = None
    try:
        cluster.add_gpu_nodes(
            a100_nodes(
                int(os.environ.get("GSHARE_DEMO_NODES", "2")),
                int(os.environ.get("GSHARE_DEMO_CARDS", "4")),
            )
        )
        cluster.add_volumes(50)
        cluster.install_crd()
        cluster.create_namespace("gshare-sessions")
        with database(settings) as url:
            migrate(url)
            bootstrap_admin(settings, url)
            cluster_id = register_demo_cluster(
                url, settings, cluster.server, cluster.embedded_kubeconfig()
            )
            token_file = settings.data_dir.resolve() / "demo-operator-token"
            threading.Thread(
                target=_keep_token_fresh, daemon=True, args=(settings, cluster_id, token_file, stop)
            ).start()
            while not token_file.exists():
                stop.wait(0.05)
            env = {
                **os.environ,
                "KUBECONFIG": str(cluster.kubeconfig),
                "GSHARE_OPERATOR_API_URL": f"http://{settings.host}:{settings.port}",
                "GSHARE_OPERATOR_CLUSTER_ID": str(cluster_id),
                "GSHARE_OPERATOR_TOKEN_FILE": str(token_file),
                "GSHARE_OPERATOR_NAMESPACE": "gshare-sessions",
            }
            operator = subprocess.Popen(
                [sys.executable, "-m", "gshare", "operator"],
                env=env,
                stdout=(folder / "operator.log").open("wb"),
                stderr=subprocess.STDOUT,
            )
            print(
                f"  simulated cluster '{DEMO_NAME}' is up at {cluster.server} (logs in {folder})",
                flush=True,
            )
            serve(settings, url, run_worker=True)
    finally:
        stop.set()
        if operator is not None:
            operator.send_signal(signal.SIGTERM)
            try:
                operator.wait(15)
            except subprocess.TimeoutExpired:
                operator.kill()
        cluster.stop()


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
