"""Isolation levels on a real API server with simulated GPU nodes: a real operator reports what
each node offers (user namespaces, the RuntimeClasses it can run, its dedication label and
taint); 500 random admissions of three tenants, eight at a time, keep each tenant where its
level allows; and the pods made for a dedicated node schedule there only for its tenant, so the
boundary holds even where the control plane would be wrong."""

from __future__ import annotations

import asyncio
import random
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select, text, update

from gshare.capacity import admission
from gshare.capacity.models import GpuNode, NodeDedication
from gshare.clusters.models import Cluster as ClusterRow
from gshare.devcluster import Cluster, a100_nodes
from gshare.identity.models import Group
from gshare.operator import manifests
from gshare.operator.manifests import GpuAssignment, IsolationSpec, OperatorConfig, SessionSpec
from tests.capacity.builders import another_group, capacity_world, set_policy
from tests.eventually import eventually
from tests.kube.test_operator import NAMESPACE, _reporting

DEDICATED = manifests.DEDICATED_KEY
SANDBOX_LABEL = "gshare.io/sandbox"

# Each held allocation's tenant, level and the node its card is on.
_HELD = text(
    "SELECT a.group_id, g.org_id, c.node, a.boundary FROM gpu_allocations a "
    "JOIN gpu_cards c ON c.id = a.card_id JOIN groups g ON g.id = a.group_id "
    "WHERE a.status <> 'released' AND c.cluster_id = :cluster"
)


def _setup(kube: Cluster, hospital: uuid.UUID) -> None:
    """Three nodes of two cards: a plain one, one with gVisor and user namespaces, and one the
    administrator labelled and tainted for the hospital."""
    kube.install_crd()
    kube.create_namespace(NAMESPACE)
    kube.add_gpu_nodes(a100_nodes(3, 2, prefix="iso"))
    kube.add_runtime_class("gvisor", "runsc", {SANDBOX_LABEL: "gvisor"})
    kube.set_node("iso-1", labels={SANDBOX_LABEL: "gvisor"}, user_namespaces=True)
    taint = {"key": DEDICATED, "value": str(hospital), "effect": "NoSchedule"}
    kube.set_node("iso-2", labels={DEDICATED: str(hospital)}, taints=[taint])


async def test_what_nodes_offer_is_reported_and_500_admissions_keep_tenants_apart(
    second_kube: Cluster, database_url: str, sessions: Any, tmp_path: Path
) -> None:
    now = datetime.now(UTC)
    hospital = await capacity_world(sessions, now, n_cards=0, users=2, user_credits=10_000)
    async with sessions() as db:
        group = await db.get(Group, hospital.group_id)
    assert group is not None
    hospital_org = group.org_id
    hostile = await another_group(sessions, now, users=2, user_credits=10_000)
    course = await another_group(sessions, now, users=2, user_credits=10_000)
    _setup(second_kube, hospital_org)
    async with _reporting(second_kube, database_url, sessions, tmp_path) as (cluster_id, _):

        async def reported() -> dict[str, GpuNode] | None:
            async with sessions() as db:
                rows = await db.scalars(select(GpuNode).where(GpuNode.cluster_id == cluster_id))
                found = {n.name: n for n in rows if n.name.startswith("iso-")}
            return found if len(found) == 3 and found["iso-2"].dedicated_tainted else None

        nodes = await eventually(reported, "the operator to report its nodes' traits", timeout=60)
        assert (nodes["iso-1"].user_namespaces, nodes["iso-1"].runtime_classes) == (
            True,
            ["gvisor"],
        )
        assert (nodes["iso-0"].user_namespaces, nodes["iso-0"].runtime_classes) == (False, [])
        assert nodes["iso-2"].dedicated_label == str(hospital_org)
        assert not nodes["iso-0"].dedicated_tainted
        async with sessions() as db, db.begin():
            await db.execute(
                update(ClusterRow)
                .where(ClusterRow.id == cluster_id)
                .values(sandbox_runtime_class="gvisor")
            )
            db.add(
                NodeDedication(
                    id=uuid.uuid4(),
                    cluster_id=cluster_id,
                    node="iso-2",
                    organization_id=hospital_org,
                    created_by=hospital.user_ids[0],
                    created_at=now,
                )
            )
        await set_policy(sessions, now, "organization", hospital_org, {"isolation": "dedicated"})
        await set_policy(sessions, now, "group", course.group_id, {"isolation": "sandboxed"})
        tiers = [hospital.tiers[name].id for name in ("1/8", "1/4", "1/2", "exclusive")]
        askers = [
            ("hospital", hospital.group_id, hospital.user_ids),
            ("hostile", hostile.group_id, hostile.user_ids),
            ("course", course.group_id, course.user_ids),
        ]
        rng = random.Random(28)
        held: list[uuid.UUID] = []
        seen: set[str] = set()

        async def one() -> None:
            who, group_id, users = rng.choice(askers)
            ask = admission.Ask(uuid.uuid4(), rng.choice(users), group_id, rng.choice(tiers))
            async with sessions() as db, db.begin():
                try:
                    outcome = await admission.admit(db, ask, datetime.now(UTC), hospital.settings)
                except admission.NoCapacity:
                    return
            if outcome.allocation is not None:
                held.append(ask.request_id)
                seen.add(who)

        for _ in range(500 // 8):
            await asyncio.gather(*(one() for _ in range(8)))
            async with sessions() as db:
                rows = (await db.execute(_HELD, {"cluster": cluster_id})).all()
            for row in rows:
                level = ((row.boundary or {}).get("isolation") or {}).get("level", "shared")
                mine = row.org_id == hospital_org
                # The hospital's node holds only the hospital's sessions; the hospital's
                # sessions run only there; the course's only where gVisor runs.
                assert (row.node == "iso-2") == mine, row
                if row.group_id == course.group_id:
                    assert row.node == "iso-1", row
                    assert level == "sandboxed", row
            # Some sessions end, so the next admissions find room again.
            rng.shuffle(held)
            async with sessions() as db, db.begin():
                for request_id in held[: len(held) // 2]:
                    await admission.release(db, request_id, datetime.now(UTC), reason="stopped")
            del held[: len(held) // 2]
        assert seen == {"hospital", "hostile", "course"}


async def test_a_pod_for_a_dedicated_node_schedules_there_only_for_its_tenant(
    second_kube: Cluster,
) -> None:
    """kube-scheduler itself keeps the boundary: the tenant's pod tolerates the node's taint
    and requires its label; another tenant's pod sent to that node by mistake stays pending."""
    tenant = str(uuid.uuid4())
    second_kube.install_crd()
    second_kube.create_namespace(NAMESPACE)
    second_kube.add_gpu_nodes(a100_nodes(1, 1, prefix="own"))
    taint = {"key": DEDICATED, "value": tenant, "effect": "NoSchedule"}
    second_kube.set_node("own-0", labels={DEDICATED: tenant}, taints=[taint])
    config = OperatorConfig(namespace=NAMESPACE, scheduler_name="default-scheduler")

    def pod(name: str, isolation: IsolationSpec) -> dict[str, Any]:
        spec = SessionSpec(
            session_id=name,
            owner_id="o",
            session_type="terminal",
            image="registry.example/terminal:1",
            cpu_millicores=100,
            memory_mib=128,
            gpu=GpuAssignment(node="own-0", card_uuid="GPU-own0-00-a100"),
            isolation=isolation,
        )
        made = manifests.pod(spec, config, manifests.owner_reference("x", "y"))
        del made["metadata"]["ownerReferences"]  # no resource stands behind these pods
        return made

    mine = pod("mine", IsolationSpec(level="dedicated", dedicated_to=tenant))
    theirs = pod("theirs", IsolationSpec())
    pods = f"/api/v1/namespaces/{NAMESPACE}/pods"

    async def node_ready() -> bool | None:
        with second_kube.client() as client:
            found = client.get("/api/v1/nodes/own-0").json()
        conditions = found.get("status", {}).get("conditions") or []
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
        return True if ready and found["spec"].get("taints") else None

    await eventually(node_ready, "the node to be ready, with its taint", timeout=60)
    with second_kube.client() as client:
        for made in (mine, theirs):
            client.post(pods, json=made).raise_for_status()

    def scheduling(name: str) -> tuple[str, str]:
        """The pod's node, and why it is not scheduled (empty once it is)."""
        with second_kube.client() as client:
            found = client.get(f"{pods}/{manifests.resource_name(name)}").json()
        conditions = found.get("status", {}).get("conditions", [])
        why = next((c for c in conditions if c["type"] == "PodScheduled"), {})
        return found["spec"].get("nodeName", ""), why.get("message", "")

    async def placed() -> bool | None:
        node, _ = scheduling("mine")
        return True if node == "own-0" else None

    async def refused() -> bool | None:
        node, why = scheduling("theirs")
        assert node == "", "another tenant's pod was scheduled onto a dedicated node"
        return True if "untolerated taint" in why else None

    await eventually(placed, "the tenant's pod to schedule on its node", timeout=60)
    await eventually(refused, "the other pod to be refused by the node's taint", timeout=60)
