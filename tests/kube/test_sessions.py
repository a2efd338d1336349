"""Sessions end to end on a real control plane: the API, a worker and the operator as processes
against a real API server with simulated GPU nodes. A session is admitted on a card, its pod
runs, it is metered, paused (pod gone, volume kept, card back, billing stopped), resumed on a
card again and stopped (resource gone, everything settled, the ledger clean)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select, update

from gshare.capacity.models import GpuCard
from gshare.credits import repository as credits
from gshare.credits.models import CreditHold
from gshare.devcluster import Cluster, free_port
from gshare.identity.models import User
from gshare.sessions.models import InteractiveSession
from tests.builders import PASSWORD, hashed
from tests.capacity.builders import priced_model
from tests.credits.builders import assert_ledger_clean, funded_wallets
from tests.eventually import eventually
from tests.kube.test_operator import NAMESPACE, _reporting, registered
from tests.scrape import parse, value

JUPYTER_IMAGE = "6f0c1e0a-5b1e-4c53-9b65-3f4a1d9e0001"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
CLAIMS = f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims"
SESSIONS = f"/apis/gshare.io/v1alpha1/namespaces/{NAMESPACE}/gsharesessions"


@dataclass(frozen=True)
class Member:
    email: str
    group_id: uuid.UUID
    tiers: dict[str, uuid.UUID]


async def _member(sessions, *, price: bool = True) -> Member:
    """A member of a group with 100 credits, and (with `price`) the A100 model priced with
    tiers."""
    now = datetime.now(UTC)
    wallets = await funded_wallets(sessions, now, users=1)
    async with sessions() as db, db.begin():
        tiers = (await priced_model(db, now))[1] if price else {}

        user_wallet = await credits.wallet(db, wallets.users[0])
        group_wallet = await credits.wallet(db, wallets.group)
        assert user_wallet is not None
        assert group_wallet is not None
        user_id, group_id = user_wallet.owner_id, group_wallet.owner_id
        assert user_id is not None
        assert group_id is not None
        await db.execute(
            update(User).where(User.id == user_id).values(password_hash=hashed(PASSWORD))
        )
        email = (await db.scalars(select(User.email).where(User.id == user_id))).one()
    return Member(email, group_id, {name: t.id for name, t in tiers.items()})


async def test_a_session_runs_pauses_resumes_and_stops_on_a_real_cluster(
    kube: Cluster, database_url: str, sessions, tmp_path: Path
) -> None:
    kube.install_crd()
    kube.create_namespace(NAMESPACE)
    member = await _member(sessions)
    metrics_port = free_port()
    worker_env = {"GSHARE_METRICS_PORT": str(metrics_port)}
    async with _reporting(
        kube, database_url, sessions, tmp_path, worker=True, worker_env=worker_env
    ) as (_, base):

        async def cards() -> int:
            async with sessions() as db:
                return len((await db.scalars(select(GpuCard))).all())

        await eventually(lambda: _at_least(cards, 8), "the inventory", timeout=60)
        async with httpx.AsyncClient(base_url=base, timeout=10) as api:
            login = await api.post(
                "/api/v1/auth/login", json={"email": member.email, "password": PASSWORD}
            )
            assert login.status_code == 200, login.text
            api.headers["X-CSRF-Token"] = login.json()["csrf_token"]

            async def session() -> dict[str, Any]:
                response = await api.get(f"/api/v1/sessions/{sid}")
                assert response.status_code == 200, response.text
                return dict(response.json())

            async def in_state(state: str) -> Callable[[], Awaitable[dict[str, Any] | None]]:
                async def check() -> dict[str, Any] | None:
                    found = await session()
                    return found if found["state"] == state else None

                return check

            created = await api.post(
                "/api/v1/sessions",
                json={
                    "name": "notebook",
                    "session_type": "jupyterlab",
                    "image_id": JUPYTER_IMAGE,
                    "group_id": str(member.group_id),
                    "tier_id": str(member.tiers["1/4"]),
                    "home_size_gib": 5,
                },
            )
            assert created.status_code == 201, created.text
            sid = created.json()["id"]
            name = f"session-{sid}"
            running = await eventually(await in_state("running"), "the session to run", timeout=60)
            assert running["can_open"] is True
            assert running["billing"] is True
            pod = kube_get(kube, f"{PODS}/{name}")
            assert pod is not None
            first_card = pod["metadata"]["annotations"]["nvidia.com/use-gpuuuid"]
            home_claim = running["volumes"][0]["volume_id"]
            assert kube_get(kube, f"{CLAIMS}/vol-{home_claim}") is not None

            # The worker meters it while it runs.
            await eventually(lambda: _cost_above_zero(session), "metering", timeout=60)

            paused = await api.post(f"/api/v1/sessions/{sid}/pause")
            assert paused.status_code == 200, paused.text
            assert paused.json()["billing"] is False
            await eventually(await in_state("paused"), "the pause", timeout=60)
            assert kube_get(kube, f"{PODS}/{name}") is None
            assert kube_get(kube, f"{CLAIMS}/vol-{home_claim}") is not None  # volume kept
            cost = (await session())["cost"]
            # Past two whole metering ticks (the first may have begun before the pause), a paused
            # session still costs nothing.
            ticks = await _metering_ticks(metrics_port)
            await eventually(
                lambda: _ticked_past(metrics_port, ticks + 3), "three metering ticks", timeout=60
            )
            assert (await session())["cost"] == cost

            resumed = await api.post(f"/api/v1/sessions/{sid}/resume")
            assert resumed.status_code == 200, resumed.text
            await eventually(await in_state("running"), "the resume", timeout=60)
            pod = kube_get(kube, f"{PODS}/{name}")
            assert pod is not None
            assert pod["metadata"]["annotations"]["nvidia.com/use-gpuuuid"].startswith("GPU-")
            assert first_card.startswith("GPU-")

            stopped = await api.post(f"/api/v1/sessions/{sid}/stop")
            assert stopped.status_code == 200, stopped.text
            await eventually(await in_state("stopped"), "the stop", timeout=60)
            assert kube_get(kube, f"{SESSIONS}/{name}") is None or _deleting(
                kube_get(kube, f"{SESSIONS}/{name}")
            )
    async with sessions() as db:
        holds = (
            await db.scalars(select(CreditHold).where(CreditHold.session_id == uuid.UUID(sid)))
        ).all()
        row = await db.get(InteractiveSession, uuid.UUID(sid))
    assert row is not None
    assert row.hold_id is None
    assert len(holds) == 2
    assert all(h.status == "settled" for h in holds)
    assert sum(h.captured for h in holds) == row.cost > 0
    await assert_ledger_clean(sessions)


async def _at_least(count: Callable[[], Awaitable[int]], wanted: int) -> bool:
    return await count() >= wanted


async def _metering_ticks(metrics_port: int) -> float:
    """Ticks of the worker process's metering loop, from its metrics endpoint (read without
    a time limit of httpx's own: the page's content is what counts)."""
    async with httpx.AsyncClient(timeout=60) as client:
        response = await client.get(f"http://127.0.0.1:{metrics_port}/metrics")
    response.raise_for_status()
    return value(parse(response.text), "gshare_worker_loop_runs_total", loop="metering")


async def _ticked_past(metrics_port: int, ticks: float) -> bool:
    return await _metering_ticks(metrics_port) >= ticks


async def _cost_above_zero(read: Callable[[], Awaitable[dict[str, Any]]]) -> bool:
    return (await read())["cost"] != "0"


def _deleting(found: dict[str, Any] | None) -> bool:
    return bool(found and found["metadata"].get("deletionTimestamp"))


def kube_get(kube: Cluster, path: str) -> dict[str, Any] | None:
    with kube.client() as client:
        response = client.get(path)
    if response.status_code == 404:
        return None
    response.raise_for_status()
    return dict(response.json())


async def test_resources_without_a_session_are_listed_for_the_admins(
    kube: Cluster, sessions, tmp_path: Path
) -> None:
    from gshare.clusters.kubeconfigs import FileKubeconfigStore
    from gshare.clusters.models import Cluster as ClusterRow
    from gshare.sessions import tasks

    kube.install_crd()
    kube.create_namespace(NAMESPACE)
    now = datetime.now(UTC)
    store = FileKubeconfigStore(tmp_path / "clusters")
    cluster = await registered(kube, sessions, store, now)
    stray = str(uuid.uuid4())
    body = {
        "apiVersion": "gshare.io/v1alpha1",
        "kind": "GShareSession",
        "metadata": {"name": f"session-{stray}"},
        "spec": {
            "sessionId": stray,
            "ownerId": str(uuid.uuid4()),
            "sessionType": "terminal",
            "image": "registry.example/gshare/terminal:1",
            "cpuMillicores": 500,
            "memoryMiB": 512,
            "desiredState": "Paused",
        },
    }
    with kube.client() as client:
        client.post(SESSIONS, json=body).raise_for_status()
    try:
        found = await tasks.scan_orphans(sessions, store, now, namespace=NAMESPACE)
        assert found >= 1
        async with sessions() as db:
            row = await db.get(ClusterRow, cluster.id)
        assert row is not None
        assert f"session-{stray}" in row.orphans
        assert row.orphans_at == now
    finally:
        with kube.client() as client:
            client.delete(f"{SESSIONS}/session-{stray}")
