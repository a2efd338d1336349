"""Isolation levels on the real database and over HTTP: nodes dedicated to a tenant, levels
that need what nodes report, refusals of levels nothing can meet, the incidents operators
report and an organization's audit view; and what a hostile tenant or an anonymous caller may
not do."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select, text

from gshare.capacity import admission, service
from gshare.capacity.models import IsolationIncident, NodeDedication
from gshare.capacity.schemas import InventoryReport
from gshare.identity.models import Group
from gshare.sessions import resource
from tests.builders import Builder
from tests.capacity.builders import (
    A100,
    A100_MIB,
    admit,
    another_group,
    capacity_world,
    dequeue,
    release,
)
from tests.capacity.test_api import _signed_in
from tests.eventually import eventually
from tests.sessions.world import session_world

API = "/api/v1"


def _node(name: str, uuids: list[str], **traits: Any) -> dict[str, Any]:
    cards = [
        {
            "uuid": u,
            "model": A100,
            "memory_mib": A100_MIB,
            "cores": 100,
            "split_count": 8,
            "numa": 0,
            "healthy": True,
        }
        for u in uuids
    ]
    return {"name": name, "cards": cards, **traits}


async def _report(build: Builder, cluster_id: uuid.UUID, sequence: int, *nodes: Any) -> None:
    body = InventoryReport.model_validate({"sequence": sequence, "nodes": list(nodes)})
    async with build.sessions() as db, db.begin():
        await service.apply_inventory(db, cluster_id, body, build.clock.now())


# Three nodes of two cards: a plain one, one that runs user namespaces and gVisor, and one an
# admin labelled and tainted for a tenant.
PLAIN = _node("plain", ["GPU-P0", "GPU-P1"])
STRONG = _node("strong", ["GPU-S0", "GPU-S1"], user_namespaces=True, runtime_classes=["gvisor"])


def _labelled(label: str | None) -> dict[str, Any]:
    return _node(
        "private",
        ["GPU-D0", "GPU-D1"],
        dedicated_label=label,
        dedicated_tainted=label is not None,
    )


async def _world(build: Builder) -> dict[str, Any]:
    now = build.clock.now()
    capacity = await capacity_world(build.sessions, now, n_cards=0, users=2)
    await _report(build, capacity.cluster_id, 2, PLAIN, STRONG, _labelled(None))
    async with build.sessions() as db:
        group = await db.get(Group, capacity.group_id)
    assert group is not None
    root = await build.signed_in(await build.user("Root", super_admin=True))
    hostile = await another_group(build.sessions, now, users=1)
    return {
        "capacity": capacity,
        "org_id": group.org_id,
        "root": root,
        "hostile": hostile,
        "member": await _signed_in(build, capacity.user_ids[0]),
        "stranger": await _signed_in(build, hostile.user_ids[0]),
    }


async def _card_node(build: Builder, request_id: uuid.UUID) -> str:
    async with build.sessions() as db:
        allocation = await admission.allocation_of(db, request_id)
        assert allocation is not None
        found = await admission.assignment(db, allocation)
    assert found is not None
    return found.node


async def _boundary(build: Builder, request_id: uuid.UUID) -> dict[str, Any]:
    async with build.sessions() as db:
        allocation = await admission.allocation_of(db, request_id)
    assert allocation is not None
    assert allocation.boundary is not None
    return allocation.boundary


def _spec(boundary: dict[str, Any]) -> dict[str, Any]:
    """The spec of a running session's resource with this boundary."""
    made = resource.resource(
        session_id=uuid.uuid4(),
        owner_id=uuid.uuid4(),
        session_type="terminal",
        image="x",
        cpu_millicores=1000,
        memory_mib=1024,
        desired_state="Running",
        card=None,
        mounts=[],
        namespace="gshare-sessions",
        boundary=boundary,
    )
    return dict(made["spec"])


def _ask(w: dict[str, Any], user: int, tier: str = "exclusive") -> admission.Ask:
    return w["capacity"].ask(user, tier)


async def _dedicate_private(w: dict[str, Any]) -> Any:
    """The super admin dedicates the node "private" to the tenant's organization."""
    made = await w["root"].post(
        f"{API}/isolation/dedications",
        json={
            "cluster_id": str(w["capacity"].cluster_id),
            "node": "private",
            "organization_id": str(w["org_id"]),
        },
    )
    assert made.status_code == 201, made.text
    return made


async def test_a_dedicated_node_takes_only_its_tenants_sessions(build: Builder) -> None:
    w = await _world(build)
    capacity, root, org_id = w["capacity"], w["root"], w["org_id"]
    made = await _dedicate_private(w)
    assert made.json()["label"] == str(org_id)
    # The tenant's capacity views count its node; everyone else's do not see it.
    group = capacity.group_id
    mine = (await w["member"].get(f"{API}/tiers", params={"group_id": str(group)})).json()
    theirs = (await w["stranger"].get(f"{API}/tiers")).json()
    assert {t["name"]: t["free_slots"] for t in mine["items"]}["exclusive"] == 6
    assert {t["name"]: t["free_slots"] for t in theirs["items"]}["exclusive"] == 4
    # A hostile tenant fills every card it may: four, never the private two.
    stranger = w["hostile"]
    now, settings = build.clock.now(), capacity.settings

    def hostile() -> admission.Ask:
        exclusive = capacity.tiers["exclusive"].id
        return admission.Ask(uuid.uuid4(), stranger.user_ids[0], stranger.group_id, exclusive)

    placed = []
    for _ in range(4):
        outcome = await admit(build.sessions, hostile(), now, settings)
        assert outcome.allocation is not None
        placed.append(outcome.request.id)
    nodes = [await _card_node(build, r) for r in placed]
    assert sorted(nodes) == ["plain", "plain", "strong", "strong"]
    # The tenant's own session may use its node whatever its level, and its pod is told to.
    mine = await admit(build.sessions, _ask(w, 0), now, settings)
    assert mine.allocation is not None
    assert await _card_node(build, mine.request.id) == "private"
    assert (await _boundary(build, mine.request.id))["isolation"] == {
        "level": "shared",
        "userNamespaces": False,
        "dedicatedTo": str(org_id),
    }
    # A fifth waits, and the queue never gives it the tenant's free card.
    fifth = await admit(build.sessions, hostile(), now, settings)
    assert fifth.allocation is None
    summary = await dequeue(build.sessions, build.clock.now(), settings)
    assert fifth.request.id not in summary.admitted
    # The node listing says the label and taint are missing until the operator sees them.
    nodes_out = (await root.get(f"{API}/isolation/nodes")).json()["items"]
    private = next(n for n in nodes_out if n["node"] == "private")
    assert private["dedication"]["organization_id"] == str(org_id)
    assert private["ready"] is False
    await _report(build, capacity.cluster_id, 3, PLAIN, STRONG, _labelled(str(org_id)))
    nodes_out = (await root.get(f"{API}/isolation/nodes")).json()["items"]
    assert next(n for n in nodes_out if n["node"] == "private")["ready"] is True
    assert next(n for n in nodes_out if n["node"] == "plain")["ready"] is True


async def test_a_dedicated_level_runs_only_on_its_nodes_and_waits_for_them(
    build: Builder,
) -> None:
    w = await _world(build)
    capacity, root, org_id = w["capacity"], w["root"], w["org_id"]
    # Without a dedicated node, the level is refused when set.
    refused = await root.put(
        f"{API}/policies/orgs/{org_id}", json={"values": {"isolation": "dedicated"}}
    )
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["code"] == "isolation_unmet"
    assert "dedicated to your organization" in refused.json()["error"]["message"]
    made = await root.post(
        f"{API}/isolation/dedications",
        json={
            "cluster_id": str(capacity.cluster_id),
            "node": "private",
            "group_id": str(capacity.group_id),
        },
    )
    assert made.status_code == 201, made.text
    # Dedicated to the group, the level is met for the group, not for the whole organization.
    refused = await root.put(
        f"{API}/policies/orgs/{org_id}", json={"values": {"isolation": "dedicated"}}
    )
    assert refused.status_code == 409, refused.text
    ok = await root.put(
        f"{API}/policies/groups/{capacity.group_id}", json={"values": {"isolation": "dedicated"}}
    )
    assert ok.status_code == 200, ok.text
    now, settings = build.clock.now(), capacity.settings
    first = await admit(build.sessions, _ask(w, 0), now, settings)
    second = await admit(build.sessions, _ask(w, 1), now, settings)
    third = await admit(build.sessions, _ask(w, 0), now, settings)
    assert first.allocation is not None
    assert second.allocation is not None
    assert {
        await _card_node(build, first.request.id),
        await _card_node(build, second.request.id),
    } == {"private"}
    # Four shared cards are free, yet the third waits for the group's own.
    assert third.allocation is None
    assert third.request.status == "queued"
    assert (await _boundary(build, first.request.id))["isolation"]["dedicatedTo"] == str(
        capacity.group_id
    )
    # The node is not given back while the group's sessions run there: their pods require it.
    dedication = made.json()["id"]
    busy = await root.delete(f"{API}/isolation/dedications/{dedication}")
    assert (busy.status_code, busy.json()["error"]["code"]) == (409, "node_in_use")
    for running in (first, second):
        await release(build.sessions, running.request.id, build.clock.now())
    # The dedication withdrawn, the level is met nowhere: the waiting request is refused.
    assert (await root.delete(f"{API}/isolation/dedications/{dedication}")).status_code == 204
    summary = await dequeue(build.sessions, build.clock.now(), settings)
    assert third.request.id in summary.refused
    # And a new one is refused at once, with the reason.
    with pytest.raises(admission.IsolationUnmet, match="dedicated to your organization or group"):
        async with build.sessions() as db, db.begin():
            await admission.admit(db, _ask(w, 1), build.clock.now(), settings)


async def test_user_namespaced_and_sandboxed_sessions_run_only_where_the_node_offers_it(
    build: Builder,
) -> None:
    w = await _world(build)
    capacity, root, org_id = w["capacity"], w["root"], w["org_id"]
    # The node reports gVisor, but the cluster names no sandbox class yet: refused.
    refused = await root.put(
        f"{API}/policies/orgs/{org_id}", json={"values": {"isolation": "sandboxed"}}
    )
    assert refused.status_code == 409, refused.text
    cluster = capacity.cluster_id
    put = await root.put(
        f"{API}/clusters/{cluster}/isolation", json={"sandbox_runtime_class": "gvisor"}
    )
    assert put.status_code == 200, put.text
    assert put.json()["sandbox_runtime_class"] == "gvisor"
    for level in ("sandboxed", "user-namespaced"):
        ok = await root.put(
            f"{API}/policies/groups/{capacity.group_id}", json={"values": {"isolation": level}}
        )
        assert ok.status_code == 200, ok.text
        outcome = await admit(
            build.sessions, _ask(w, 0, "1/8"), build.clock.now(), capacity.settings
        )
        assert outcome.allocation is not None
        assert await _card_node(build, outcome.request.id) == "strong"
        isolation = (await _boundary(build, outcome.request.id))["isolation"]
        assert isolation["level"] == level
        assert isolation["userNamespaces"] is (level == "user-namespaced")
        assert isolation.get("runtimeClassName") == ("gvisor" if level == "sandboxed" else None)
    # The resource the operator gets carries the level; a shared one carries nothing new.
    spec = _spec(
        {
            "isolation": {
                "level": "sandboxed",
                "userNamespaces": False,
                "runtimeClassName": "gvisor",
            },
            "network": {"egress": "listed", "cidrs": ["10.0.0.0/8"]},
        }
    )
    assert spec["isolation"]["runtimeClassName"] == "gvisor"
    assert spec["network"] == {"egress": "listed", "cidrs": ["10.0.0.0/8"]}
    plain = _spec(
        {"isolation": {"level": "shared", "userNamespaces": False}, "network": {"egress": "open"}}
    )
    assert "isolation" not in plain
    assert "network" not in plain


async def test_only_a_super_admin_manages_isolation_and_tenants_see_only_their_own(
    build: Builder,
) -> None:
    w = await _world(build)
    capacity, root, org_id = w["capacity"], w["root"], w["org_id"]
    body = {
        "cluster_id": str(capacity.cluster_id),
        "node": "private",
        "organization_id": str(org_id),
    }
    anonymous = build.anonymous()
    for client, status in ((anonymous, 401), (w["member"], 403), (w["stranger"], 403)):
        assert (await client.post(f"{API}/isolation/dedications", json=body)).status_code == status
        assert (await client.get(f"{API}/isolation/nodes")).status_code == status
        response = await client.put(
            f"{API}/clusters/{capacity.cluster_id}/isolation", json={"user_namespaces": True}
        )
        assert response.status_code == status
        assert (await client.get(f"{API}/orgs/{org_id}/isolation")).status_code == status
    # Hostile and extreme inputs: each refused with a clear error, nothing written.
    cases: list[dict[str, Any]] = [
        {**body, "organization_id": None},
        {**body, "group_id": str(capacity.group_id)},
        {**body, "node": "x" * 300},
        {**body, "node": "private\x00"},
        {**body, "node": ""},
        {**body, "cluster_id": "not-a-uuid"},
    ]
    for bad in cases:
        response = await root.post(f"{API}/isolation/dedications", json=bad)
        assert response.status_code == 422, (bad, response.text)
    unknown = [
        {**body, "cluster_id": str(uuid.uuid4())},
        {**body, "node": "nowhere"},
        {**body, "organization_id": str(uuid.uuid4())},
    ]
    for bad in unknown:
        assert (await root.post(f"{API}/isolation/dedications", json=bad)).status_code == 404
    for bad_class in ("GVisor", "a" * 254, "gvisor\x00", "", "-x"):
        response = await root.put(
            f"{API}/clusters/{capacity.cluster_id}/isolation",
            json={"sandbox_runtime_class": bad_class},
        )
        assert response.status_code == 422, bad_class
    for bad_policy in ({"isolation": "dedicated "}, {"egress_cidrs": ["300.0.0.0/8"]}):
        response = await root.put(f"{API}/policies/orgs/{org_id}", json={"values": bad_policy})
        assert response.status_code == 422, bad_policy
    # A dedicated level is a tenant's: not for everyone, nor one user.
    response = await root.put(f"{API}/policies/global", json={"values": {"isolation": "dedicated"}})
    assert response.status_code == 422
    # The same dedication twice at once: one is made, the other refused.
    first, second = await asyncio.gather(
        root.post(f"{API}/isolation/dedications", json=body),
        root.post(f"{API}/isolation/dedications", json=body),
    )
    assert sorted([first.status_code, second.status_code]) == [201, 409]
    async with build.sessions() as db:
        assert await db.scalar(select(func.count()).select_from(NodeDedication)) == 1


async def test_a_node_in_use_by_another_tenant_is_not_dedicated_until_it_is_free(
    build: Builder,
) -> None:
    w = await _world(build)
    capacity, root, org_id = w["capacity"], w["root"], w["org_id"]
    stranger = w["hostile"]
    held = []
    for _ in range(6):  # the whole cluster, all three nodes
        ask = admission.Ask(
            uuid.uuid4(), stranger.user_ids[0], stranger.group_id, capacity.tiers["exclusive"].id
        )
        outcome = await admit(build.sessions, ask, build.clock.now(), capacity.settings)
        if outcome.allocation is not None:
            held.append(outcome.request.id)
    body = {
        "cluster_id": str(capacity.cluster_id),
        "node": "private",
        "organization_id": str(org_id),
    }
    refused = await root.post(f"{API}/isolation/dedications", json=body)
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "node_in_use"
    for request_id in held:
        await release(build.sessions, request_id, build.clock.now())
    # Nor while the tenant's own session holds a card there: its pod was made for a node
    # nobody owned, and would be outside its level once the node is tainted.
    mine = [
        await admit(build.sessions, _ask(w, n % 2), build.clock.now(), capacity.settings)
        for n in range(6)
    ]
    assert all(m.allocation is not None for m in mine)
    assert "private" in {await _card_node(build, m.request.id) for m in mine}
    refused = await root.post(f"{API}/isolation/dedications", json=body)
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "node_in_use")
    for m in mine:
        await release(build.sessions, m.request.id, build.clock.now())
    assert (await root.post(f"{API}/isolation/dedications", json=body)).status_code == 201


async def test_an_operators_drift_report_is_an_incident_once_in_the_org_view(
    build: Builder,
) -> None:
    world = await session_world(build)
    root = await build.signed_in(await build.user("Root", super_admin=True))
    async with build.sessions() as db:
        group = await db.get(Group, world.group_id)
    assert group is not None
    org_id = group.org_id
    made = await world.running()
    drift = {
        "reason": "the pod does not run in a user namespace",
        "node": "gpu-node-0",
        "pod": "0b5c",
        "at": build.clock.now().isoformat(),
    }
    first = await world.report(made["id"], "Running", drift=drift)
    assert first.status_code == 200, first.text
    # A repeat with a newer sequence, and the first replayed: still one incident.
    assert (await world.report(made["id"], "Running", drift=drift)).status_code == 200
    replayed = await world.report(made["id"], "Running", drift=drift, sequence=1)
    assert replayed.status_code == 200
    async with build.sessions() as db:
        assert await db.scalar(select(func.count()).select_from(IsolationIncident)) == 1
    view = await root.get(f"{API}/orgs/{org_id}/isolation")
    assert view.status_code == 200, view.text
    assert [i["reason"] for i in view.json()["incidents"]] == [drift["reason"]]
    assert [(p["node"], p["sessions"]) for p in view.json()["placed"]] == [("gpu-node-0", 1)]
    assert view.json()["level"] == "shared"
    # A member of the organization is not its admin; nor is another organization's user.
    assert (await world.members[0].get(f"{API}/orgs/{org_id}/isolation")).status_code == 403
    # Hostile reports: a NUL byte, a huge reason, a time beyond any calendar: refused, not stored.
    for bad in (
        {**drift, "reason": "x\x00"},
        {**drift, "reason": "x" * 501},
        {**drift, "at": "99999-01-01T00:00:00Z"},
        {**drift, "pod": ""},
    ):
        response = await world.report(made["id"], "Running", drift=bad)
        assert response.status_code == 422, bad
    async with build.sessions() as db:
        assert await db.scalar(select(func.count()).select_from(IsolationIncident)) == 1


async def test_a_node_dedicated_while_a_hostile_admission_commits_holds_no_hostile_session(
    build: Builder,
) -> None:
    """The dedication waits for the admission that holds the node's card, then sees it and is
    refused: no instant lets another tenant's session onto a dedicated node."""
    w = await _world(build)
    capacity, root, org_id = w["capacity"], w["root"], w["org_id"]
    stranger = w["hostile"]
    body = {
        "cluster_id": str(capacity.cluster_id),
        "node": "private",
        "organization_id": str(org_id),
    }
    async with build.sessions() as db, db.begin():
        taken = []
        for _ in range(6):  # every card, the private two too, not committed yet
            ask = admission.Ask(
                uuid.uuid4(),
                stranger.user_ids[0],
                stranger.group_id,
                capacity.tiers["exclusive"].id,
            )
            outcome = await admission.admit(db, ask, build.clock.now(), capacity.settings)
            assert outcome.allocation is not None
            taken.append(outcome.request.id)
        dedicating = await _dedicating_waits(build, root, body, "the cards' locks")
    answer = await dedicating
    assert answer.status_code == 409, answer.text
    assert answer.json()["error"]["code"] == "node_in_use"
    assert "private" in [await _card_node(build, r) for r in taken]


async def test_a_cluster_dedicated_while_a_session_without_a_gpu_commits_is_refused(
    build: Builder,
) -> None:
    """A session without a card, placed on a cluster not yet dedicated, holds the cluster's
    dedications still until it commits: the whole-cluster dedication then sees it."""
    w = await _world(build)
    capacity, root, org_id = w["capacity"], w["root"], w["org_id"]
    stranger = w["hostile"]
    body = {"cluster_id": str(capacity.cluster_id), "organization_id": str(org_id)}
    async with build.sessions() as db, db.begin():
        ask = admission.Ask(uuid.uuid4(), stranger.user_ids[0], stranger.group_id, None)
        outcome = await admission.admit(db, ask, build.clock.now(), capacity.settings)
        assert outcome.allocation is not None
        dedicating = await _dedicating_waits(build, root, body, "the session being placed")
    answer = await dedicating
    assert (answer.status_code, answer.json()["error"]["code"]) == (409, "node_in_use")


async def _dedicating_waits(
    build: Builder, root: Any, body: dict[str, Any], what: str
) -> asyncio.Task[Any]:
    """Send the dedication, and return once it waits on a lock (for `what`)."""
    dedicating = asyncio.create_task(root.post(f"{API}/isolation/dedications", json=body))

    async def waits() -> bool | None:
        async with build.sessions() as look:
            found = await look.scalar(_WAITING_ON_A_LOCK)
        assert not dedicating.done(), dedicating.result().text
        return True if found else None

    await eventually(waits, f"the dedication to wait for {what}")
    return dedicating


_WAITING_ON_A_LOCK = text(
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
    "AND wait_event_type = 'Lock'"
)


async def test_a_session_without_a_gpu_runs_at_its_level_or_not_at_all(build: Builder) -> None:
    w = await _world(build)
    capacity, root, org_id = w["capacity"], w["root"], w["org_id"]
    group, cluster = capacity.group_id, capacity.cluster_id
    now, settings = build.clock.now(), capacity.settings
    running: list[uuid.UUID] = []

    async def cpu_boundary(level: str) -> dict[str, Any]:
        ok = await root.put(f"{API}/policies/groups/{group}", json={"values": {"isolation": level}})
        assert ok.status_code == 200, ok.text
        outcome = await admit(build.sessions, capacity.ask(0, None), now, settings)
        assert outcome.allocation is not None
        running.append(outcome.request.id)
        return await _boundary(build, outcome.request.id)

    put = await root.put(
        f"{API}/clusters/{cluster}/isolation", json={"sandbox_runtime_class": "gvisor"}
    )
    assert put.status_code == 200, put.text
    sandboxed = await cpu_boundary("sandboxed")
    assert sandboxed["isolation"]["runtimeClassName"] == "gvisor"
    assert sandboxed["cluster"] == str(cluster)
    made = await root.post(
        f"{API}/isolation/dedications",
        json={"cluster_id": str(cluster), "node": "private", "group_id": str(group)},
    )
    assert made.status_code == 201, made.text
    assert (await cpu_boundary("dedicated"))["isolation"]["dedicatedTo"] == str(group)
    # User namespaces for a pod the cluster's scheduler places need the admin's word for
    # every node: one node reporting them is not enough.
    ok = await root.put(
        f"{API}/policies/groups/{group}", json={"values": {"isolation": "user-namespaced"}}
    )
    assert ok.status_code == 200, ok.text
    with pytest.raises(admission.IsolationUnmet, match="without a GPU"):
        await admit(build.sessions, capacity.ask(0, None), now, settings)
    # The node is not given back while a session without a GPU requires the group's nodes,
    # nor the cluster dedicated whole while sessions without a GPU run there.
    give_back = f"{API}/isolation/dedications/{made.json()['id']}"
    busy = await root.delete(give_back)
    assert (busy.status_code, busy.json()["error"]["code"]) == (409, "node_in_use")
    assert "1 session(s) without a card" in busy.json()["error"]["message"]
    # With another node of the group's on the cluster, that session still has one.
    second = await root.post(
        f"{API}/isolation/dedications",
        json={"cluster_id": str(cluster), "node": "strong", "group_id": str(group)},
    )
    assert second.status_code == 201, second.text
    assert (await root.delete(give_back)).status_code == 204
    give_back = f"{API}/isolation/dedications/{second.json()['id']}"
    busy = await root.delete(give_back)
    assert (busy.status_code, busy.json()["error"]["code"]) == (409, "node_in_use")
    whole_cluster = {"cluster_id": str(cluster), "organization_id": str(org_id)}
    for request_id in running[1:]:
        await release(build.sessions, request_id, now)
    assert (await root.delete(give_back)).status_code == 204
    busy = await root.post(f"{API}/isolation/dedications", json=whole_cluster)
    assert (busy.status_code, busy.json()["error"]["code"]) == (409, "node_in_use")
    await release(build.sessions, running[0], now)
    # A cluster dedicated whole to an organization runs no one else's session without a GPU.
    whole = await root.post(f"{API}/isolation/dedications", json=whole_cluster)
    assert whole.status_code == 201, whole.text
    stranger = w["hostile"]
    ask = admission.Ask(uuid.uuid4(), stranger.user_ids[0], stranger.group_id, None)
    with pytest.raises(admission.IsolationUnmet):
        await admit(build.sessions, ask, now, settings)
    # The organization's own shared session there tolerates the cluster's taint.
    shared = await cpu_boundary("shared")
    assert shared["isolation"]["dedicatedTo"] == str(org_id)


async def test_one_finding_is_one_incident_whatever_time_the_operator_gives(
    build: Builder,
) -> None:
    world = await session_world(build)
    made = await world.running()
    drift = {
        "reason": "the pod does not run in a user namespace",
        "node": "gpu-node-0",
        "pod": "0b5c",
        "at": (build.clock.now() + timedelta(hours=2)).isoformat(),  # its clock ahead
    }
    for _ in range(3):
        build.clock.advance(timedelta(seconds=30))
        assert (await world.report(made["id"], "Running", drift=drift)).status_code == 200
    async with build.sessions() as db:
        assert await db.scalar(select(func.count()).select_from(IsolationIncident)) == 1


async def test_a_stranger_learns_nothing_of_which_organizations_exist(build: Builder) -> None:
    w = await _world(build)
    existing = await w["stranger"].get(f"{API}/orgs/{w['org_id']}/isolation")
    unknown = await w["stranger"].get(f"{API}/orgs/{uuid.uuid4()}/isolation")
    assert existing.status_code == unknown.status_code == 403
    assert (await w["root"].get(f"{API}/orgs/{uuid.uuid4()}/isolation")).status_code == 404


async def test_a_node_and_its_cluster_are_never_dedicated_to_two_tenants(build: Builder) -> None:
    w = await _world(build)
    capacity, root, org_id = w["capacity"], w["root"], w["org_id"]
    cluster, stranger = str(capacity.cluster_id), w["hostile"]
    whole = await root.post(
        f"{API}/isolation/dedications", json={"cluster_id": cluster, "organization_id": str(org_id)}
    )
    assert whole.status_code == 201, whole.text
    # Neither the organization's own group nor another tenant gets a node of it.
    mine = await root.post(
        f"{API}/isolation/dedications",
        json={"cluster_id": cluster, "node": "private", "group_id": str(capacity.group_id)},
    )
    assert mine.status_code == 409
    other = await root.post(
        f"{API}/isolation/dedications",
        json={"cluster_id": cluster, "node": "plain", "group_id": str(stranger.group_id)},
    )
    assert other.status_code == 409
    assert other.json()["error"]["code"] == "already_dedicated"
    assert (
        await root.delete(f"{API}/isolation/dedications/{whole.json()['id']}")
    ).status_code == 204
    node = await root.post(
        f"{API}/isolation/dedications",
        json={"cluster_id": cluster, "node": "plain", "group_id": str(stranger.group_id)},
    )
    assert node.status_code == 201, node.text
    refused = await root.post(
        f"{API}/isolation/dedications", json={"cluster_id": cluster, "organization_id": str(org_id)}
    )
    assert refused.status_code == 409


async def test_the_preview_says_when_a_level_cannot_be_met(build: Builder) -> None:
    w = await _world(build)
    capacity, root, member = w["capacity"], w["root"], w["member"]
    group = str(capacity.group_id)
    ok = await root.put(
        f"{API}/policies/groups/{group}", json={"values": {"isolation": "user-namespaced"}}
    )
    assert ok.status_code == 200, ok.text
    gpu = {"group_id": group, "tier_id": str(capacity.tiers["1/8"].id)}
    answer = (await member.post(f"{API}/admission/preview", json=gpu)).json()
    assert answer["outcome"] == "start"  # the node with user namespaces has room
    # Without a GPU, the pod may land on any node: the cluster must vouch for all of them.
    answer = (await member.post(f"{API}/admission/preview", json={"group_id": group})).json()
    assert answer["outcome"] == "no_capacity"
    assert "without a GPU" in answer["message"]
    made = await root.post(
        f"{API}/isolation/dedications",
        json={"cluster_id": str(capacity.cluster_id), "node": "private", "group_id": group},
    )
    assert made.status_code == 201, made.text
    ok = await root.put(
        f"{API}/policies/groups/{group}", json={"values": {"isolation": "dedicated"}}
    )
    assert ok.status_code == 200, ok.text
    assert (
        await root.delete(f"{API}/isolation/dedications/{made.json()['id']}")
    ).status_code == 204
    answer = (await member.post(f"{API}/admission/preview", json=gpu)).json()
    assert answer["outcome"] == "no_capacity"
    assert "dedicated to your organization or group" in answer["message"]


async def test_bookings_and_their_calendar_count_a_dedicated_node_for_its_tenant_only(
    build: Builder,
) -> None:
    """Dedicated cards are in their tenant's booking capacity and in no one else's: another
    tenant cannot book them, and its calendar does not show them."""
    w = await _world(build)
    capacity, root = w["capacity"], w["root"]
    await _dedicate_private(w)
    starts = (build.clock.now() + timedelta(days=2)).replace(microsecond=0)
    window = {"starts_at": starts.isoformat(), "ends_at": (starts + timedelta(hours=2)).isoformat()}
    day = {
        "starts_at": (starts - timedelta(hours=1)).isoformat(),
        "ends_at": (starts + timedelta(hours=3)).isoformat(),
    }

    def book(group_id: uuid.UUID, count: int) -> dict[str, Any]:
        tier = str(capacity.tiers["exclusive"].id)
        body = {"group_id": str(group_id), "tier_id": tier, "count": count, "title": "class"}
        return body | window

    async def calendar(client: Any) -> tuple[int, list[tuple[int, int]]]:
        found = await client.get(f"{API}/bookings/calendar", params={"model": A100, **day})
        assert found.status_code == 200, found.text
        [cards] = found.json()["resources"]
        return cards["capacity"], [(s["booked"], s["free"]) for s in cards["steps"]]

    # The tenant books two cards first: they may be its own, so they take none of the four
    # the other tenant may use, and the other tenant's calendar shows all four free.
    assert (await root.post(f"{API}/bookings", json=book(capacity.group_id, 2))).status_code == 201
    assert await calendar(w["stranger"]) == (4, [(0, 4)])
    # The other tenant books those four, and not a fifth: the private node's. It is told of
    # the cards it may use only.
    hostile = w["hostile"].group_id
    assert (await root.post(f"{API}/bookings", json=book(hostile, 4))).status_code == 201
    refused = await root.post(f"{API}/bookings", json=book(hostile, 1))
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "booking_conflict")
    assert "4 of 4 are booked" in refused.json()["error"]["message"]
    assert await calendar(w["stranger"]) == (4, [(0, 4), (4, 0), (0, 4)])
    # The tenant may use all six, and all six are booked.
    refused = await root.post(f"{API}/bookings", json=book(capacity.group_id, 1))
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "booking_conflict")
    assert await calendar(w["member"]) == (6, [(0, 6), (6, 0), (0, 6)])
    assert await calendar(root) == (6, [(0, 6), (6, 0), (0, 6)])


async def test_a_tenant_waiting_for_its_own_cards_holds_no_one_else_back(build: Builder) -> None:
    """A dedicated tenant waits for its own full cards: another tenant still sees the shared
    cards free, is told it would start, and starts at once, ahead of no one."""
    w = await _world(build)
    capacity, root = w["capacity"], w["root"]
    await _dedicate_private(w)
    group = str(capacity.group_id)
    ok = await root.put(
        f"{API}/policies/groups/{group}", json={"values": {"isolation": "dedicated"}}
    )
    assert ok.status_code == 200, ok.text
    now, settings = build.clock.now(), capacity.settings
    for n in range(2):
        assert (await admit(build.sessions, _ask(w, n), now, settings)).allocation is not None
    waiter = await admit(build.sessions, _ask(w, 0), now, settings)
    assert waiter.allocation is None
    exclusive = str(capacity.tiers["exclusive"].id)

    async def free(client: Any, group_id: str) -> int:
        tiers = (await client.get(f"{API}/tiers", params={"group_id": group_id})).json()["items"]
        return int(next(t["free_slots"] for t in tiers if t["id"] == exclusive))

    hostile = w["hostile"]
    assert await free(w["member"], group) == 0
    assert await free(w["stranger"], str(hostile.group_id)) == 4
    body = {"group_id": str(hostile.group_id), "tier_id": exclusive}
    preview = (await w["stranger"].post(f"{API}/admission/preview", json=body)).json()
    assert preview["outcome"] == "start", preview
    ask = admission.Ask(
        uuid.uuid4(), hostile.user_ids[0], hostile.group_id, capacity.tiers["exclusive"].id
    )
    assert (await admit(build.sessions, ask, now, settings)).allocation is not None
