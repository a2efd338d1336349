"""The capacity API over HTTP: cards and pools, MIG layouts, GPU models and tiers, policies
per scope, the effective policy, the admission preview and the queue; and hostile inputs,
none of which may end in a 500."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy import func, select, update

from gshare.capacity import service
from gshare.capacity.models import AdmissionRequest, Allocation
from gshare.credits.models import CreditHold
from gshare.identity.models import Group, Organization, User
from tests.builders import PASSWORD, Builder, hashed
from tests.capacity.builders import (
    A100,
    CapacityWorld,
    Card,
    admit,
    another_group,
    apply,
    capacity_world,
    card_rows,
    cards,
)

API = "/api/v1"


@dataclass
class World:
    capacity: CapacityWorld
    org_id: uuid.UUID
    root: httpx.AsyncClient
    members: list[httpx.AsyncClient]

    @property
    def group_id(self) -> uuid.UUID:
        return self.capacity.group_id

    def tier(self, name: str) -> str:
        return str(self.capacity.tiers[name].id)


async def _signed_in(build: Builder, user_id: uuid.UUID) -> httpx.AsyncClient:
    """A client signed in as a user the capacity builders made (they have no password)."""
    async with build.sessions() as db, db.begin():
        await db.execute(
            update(User).where(User.id == user_id).values(password_hash=hashed(PASSWORD))
        )
    async with build.sessions() as db:
        user = await db.get(User, user_id)
    assert user is not None
    return await build.signed_in(user)


async def _world(build: Builder, *, n_cards: int = 4, users: int = 2) -> World:
    capacity = await capacity_world(build.sessions, build.clock.now(), n_cards=n_cards, users=users)
    async with build.sessions() as db:
        group = await db.get(Group, capacity.group_id)
    assert group is not None
    root = await build.signed_in(await build.user("Root", super_admin=True))
    members = [await _signed_in(build, u) for u in capacity.user_ids]
    return World(capacity, group.org_id, root, members)


def _error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code, response.text


async def _fill(build: Builder, w: World, user: int, tier: str, count: int) -> list[uuid.UUID]:
    made = []
    for _ in range(count):
        outcome = await admit(
            build.sessions, w.capacity.ask(user, tier), build.clock.now(), w.capacity.settings
        )
        assert outcome.allocation is not None, outcome
        made.append(outcome.request.id)
    return made


async def _counts(build: Builder) -> tuple[int, int, int]:
    async with build.sessions() as db:
        return (
            await db.scalar(select(func.count()).select_from(AdmissionRequest)) or 0,
            await db.scalar(select(func.count()).select_from(Allocation)) or 0,
            await db.scalar(select(func.count()).select_from(CreditHold)) or 0,
        )


# ---- cards, pools and MIG layouts ----------------------------------------------------------


async def test_the_cards_list_shows_carving_occupants_and_free_slots(build: Builder) -> None:
    w = await _world(build)
    await _fill(build, w, 0, "1/4", 2)
    response = await w.root.get(f"{API}/clusters/{w.capacity.cluster_id}/cards")
    assert response.status_code == 200, response.text
    items = response.json()["items"]
    assert len(items) == 4
    carved = [c for c in items if c["carved_tier"] is not None]
    assert len(carved) == 1
    card = carved[0]
    assert (card["pool"], card["carved_tier"], card["carved_slots"], card["free_slots"]) == (
        "hami-core",
        "1/4",
        4,
        2,
    )
    assert sorted(o["slot"] for o in card["occupants"]) == [0, 1]
    assert {o["user_id"] for o in card["occupants"]} == {str(w.capacity.user_ids[0])}
    assert all(o["user_email"].endswith("@example.org") for o in card["occupants"])
    idle = [c for c in items if c["carved_tier"] is None]
    assert all(c["free_slots"] is None and c["occupants"] == [] for c in idle)
    missing = await w.root.get(f"{API}/clusters/{uuid.uuid4()}/cards")
    _error(missing, 404, "cluster_not_found")


async def test_a_busy_card_keeps_its_pool(build: Builder) -> None:
    w = await _world(build, n_cards=1)
    [card_id] = [c.id for c in (await card_rows(build.sessions, w.capacity.cluster_id)).values()]
    await _fill(build, w, 0, "1/8", 1)
    busy = await w.root.put(f"{API}/cards/{card_id}/pool", json={"pool": "mig"})
    _error(busy, 409, "card_busy")
    layout = await w.root.put(
        f"{API}/cards/{card_id}/mig-layout", json={"instances": [{"profile": "7g.80gb"}]}
    )
    _error(layout, 409, "card_busy")


async def test_a_card_moves_to_mig_and_takes_only_layouts_that_fit(build: Builder) -> None:
    w = await _world(build, n_cards=1)
    [card_id] = [c.id for c in (await card_rows(build.sessions, w.capacity.cluster_id)).values()]
    not_mig = await w.root.put(
        f"{API}/cards/{card_id}/mig-layout", json={"instances": [{"profile": "7g.80gb"}]}
    )
    _error(not_mig, 409, "not_mig_pool")
    moved = await w.root.put(f"{API}/cards/{card_id}/pool", json={"pool": "mig"})
    assert moved.status_code == 200, moved.text
    assert moved.json()["pool"] == "mig"
    overlapping = await w.root.put(
        f"{API}/cards/{card_id}/mig-layout",
        json={"instances": [{"profile": "3g.40gb", "start": 0}, {"profile": "4g.40gb"}]},
    )
    _error(overlapping, 422, "invalid_mig_layout")
    assert "overlapping" in overlapping.json()["error"]["message"]
    accepted = await w.root.put(
        f"{API}/cards/{card_id}/mig-layout",
        json={"instances": [{"profile": "3g.40gb"}, {"profile": "4g.40gb"}]},
    )
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["mig_instances"] == [
        {"profile": "4g.40gb", "start": 0, "occupied": False},
        {"profile": "3g.40gb", "start": 4, "occupied": False},
    ]
    choices = await w.root.get(f"{API}/cards/{card_id}/mig-layouts")
    assert choices.status_code == 200, choices.text
    body = choices.json()
    assert "7g.80gb" in body["profiles"]
    assert ["7g.80gb"] in body["layouts"]
    assert all(layout for layout in body["layouts"])
    back = await w.root.put(f"{API}/cards/{card_id}/pool", json={"pool": "hami-core"})
    assert back.status_code == 200, back.text
    assert (back.json()["pool"], back.json()["mig_instances"]) == ("hami-core", [])


async def test_a_model_without_mig_geometry_stays_in_hami_core(build: Builder) -> None:
    w = await _world(build, n_cards=1)
    odd = Card("GPU-ODD", model="Acme-Tensor-24GB", memory_mib=24576, split_count=4)
    await apply(build.sessions, w.capacity.cluster_id, 2, [*cards(1), odd], build.clock.now())
    card_id = (await card_rows(build.sessions, w.capacity.cluster_id))["GPU-ODD"].id
    refused = await w.root.put(f"{API}/cards/{card_id}/pool", json={"pool": "mig"})
    _error(refused, 422, "mig_unsupported")
    choices = await w.root.get(f"{API}/cards/{card_id}/mig-layouts")
    assert choices.status_code == 200, choices.text
    assert choices.json()["layouts"] == []
    for path in ("pool", "mig-layouts"):
        unknown = await w.root.request(
            "PUT" if path == "pool" else "GET",
            f"{API}/cards/{uuid.uuid4()}/{path}",
            json={"pool": "mig"} if path == "pool" else None,
        )
        _error(unknown, 404, "card_not_found")


# ---- GPU models and tiers ------------------------------------------------------------------


async def test_models_and_tiers_are_priced_overridden_reset_and_retired(build: Builder) -> None:
    w = await _world(build, n_cards=1)
    made = await w.root.post(
        f"{API}/gpu-models",
        json={"name": "Acme-X1", "exclusive_price": "10", "memory_mib": 24576, "split_count": 4},
    )
    assert made.status_code == 201, made.text
    model = made.json()
    assert (model["exclusive_price"], model["mig_geometry"], model["tiers"]) == ("10", None, [])
    again = await w.root.post(
        f"{API}/gpu-models",
        json={"name": "Acme-X1", "exclusive_price": "3", "memory_mib": 24576, "split_count": 4},
    )
    _error(again, 409, "already_exists")
    third = await w.root.post(
        f"{API}/gpu-models/{model['id']}/tiers", json={"kind": "fraction", "denominator": 3}
    )
    assert third.status_code == 201, third.text
    # 10 / 3 rounded up to a whole micro-credit.
    assert (third.json()["price_per_hour"], third.json()["price_is_default"]) == ("3.333334", True)
    whole = await w.root.post(
        f"{API}/gpu-models/{model['id']}/tiers",
        json={"kind": "exclusive", "price_per_hour": "12.5"},
    )
    assert whole.status_code == 201, whole.text
    assert (whole.json()["price_per_hour"], whole.json()["price_is_default"]) == ("12.5", False)
    twice = await w.root.post(
        f"{API}/gpu-models/{model['id']}/tiers", json={"kind": "fraction", "denominator": 3}
    )
    _error(twice, 422, "invalid_tier")
    repriced = await w.root.patch(f"{API}/gpu-models/{model['id']}", json={"exclusive_price": "20"})
    assert repriced.status_code == 200, repriced.text
    prices = {t["name"]: t["price_per_hour"] for t in repriced.json()["tiers"]}
    assert prices == {"1/3": "6.666667", "exclusive": "12.5"}
    reset = await w.root.patch(f"{API}/tiers/{whole.json()['id']}", json={"price_per_hour": None})
    assert reset.status_code == 200, reset.text
    assert (reset.json()["price_per_hour"], reset.json()["price_is_default"]) == ("20", True)
    override = await w.root.patch(
        f"{API}/tiers/{third.json()['id']}", json={"price_per_hour": "0.5"}
    )
    assert (override.json()["price_per_hour"], override.json()["price_is_default"]) == (
        "0.5",
        False,
    )
    retired = await w.root.delete(f"{API}/tiers/{third.json()['id']}")
    assert retired.status_code == 204, retired.text
    _error(await w.root.delete(f"{API}/tiers/{third.json()['id']}"), 404, "tier_not_found")
    listed = await w.root.get(f"{API}/gpu-models")
    assert listed.status_code == 200, listed.text
    acme = next(m for m in listed.json()["items"] if m["name"] == "Acme-X1")
    assert {t["name"]: t["retired_at"] is not None for t in acme["tiers"]} == {
        "1/3": True,
        "exclusive": False,
    }
    usable = await w.root.get(f"{API}/tiers")
    assert third.json()["id"] not in {t["id"] for t in usable.json()["items"]}
    unknown = await w.root.post(
        f"{API}/gpu-models", json={"name": "Never-Reported", "exclusive_price": "1"}
    )
    _error(unknown, 422, "model_unknown")


async def test_prices_must_be_plain_amounts(build: Builder) -> None:
    w = await _world(build, n_cards=1)
    model_id = w.capacity.model.id
    for price in ("1.0000001", "-1", "1e3", "abc", "99999999999999999999999", "\uff11"):
        made = await w.root.post(
            f"{API}/gpu-models",
            json={
                "name": f"P-{uuid.uuid4().hex[:6]}",
                "exclusive_price": price,
                "memory_mib": 1,
                "split_count": 1,
            },
        )
        _error(made, 400, "invalid_amount")
        patched = await w.root.patch(
            f"{API}/gpu-models/{model_id}", json={"exclusive_price": price}
        )
        _error(patched, 400, "invalid_amount")
        tier = await w.root.patch(f"{API}/tiers/{w.tier('1/8')}", json={"price_per_hour": price})
        _error(tier, 400, "invalid_amount")


async def test_the_tiers_list_follows_the_callers_effective_policy(build: Builder) -> None:
    w = await _world(build)
    everything = await w.members[0].get(f"{API}/tiers")
    assert {t["name"] for t in everything.json()["items"]} == {"1/8", "1/4", "1/2", "exclusive"}
    group_policy = await w.root.put(
        f"{API}/policies/groups/{w.group_id}", json={"values": {"allowed_tiers": ["1/8", "1/4"]}}
    )
    assert group_policy.status_code == 200, group_policy.text
    narrowed = await w.members[0].get(f"{API}/tiers", params={"group_id": str(w.group_id)})
    assert narrowed.status_code == 200, narrowed.text
    assert {t["name"] for t in narrowed.json()["items"]} == {"1/8", "1/4"}
    await w.root.put(
        f"{API}/policies/users/{w.capacity.user_ids[1]}",
        json={"values": {"allowed_models": ["Some-Other-GPU"]}},
    )
    assert (await w.members[1].get(f"{API}/tiers")).json()["items"] == []
    elsewhere = await w.members[0].get(f"{API}/tiers", params={"group_id": str(uuid.uuid4())})
    _error(elsewhere, 404, "not_in_group")


async def test_the_tiers_list_says_what_is_free_now_and_how_long_the_queue_is(
    build: Builder,
) -> None:
    w = await _world(build, n_cards=2)

    async def listed() -> dict[str, tuple[int, float | None]]:
        response = await w.members[1].get(f"{API}/tiers", params={"group_id": str(w.group_id)})
        assert response.status_code == 200, response.text
        items = response.json()["items"]
        return {t["name"]: (t["free_slots"], t["estimated_wait_seconds"]) for t in items}

    assert await listed() == {
        "1/8": (16, None),
        "1/4": (8, None),
        "1/2": (4, None),
        "exclusive": (2, None),
    }
    await _fill(build, w, 0, "1/4", 1)
    await _fill(build, w, 0, "exclusive", 1)
    now = await listed()
    # One card holds a quarter (three more fit), the other the exclusive session.
    assert {name: free for name, (free, _) in now.items()} == {
        "1/8": 0,
        "1/4": 3,
        "1/2": 0,
        "exclusive": 0,
    }
    assert now["1/4"][1] is None
    waits = {name: wait for name, (_, wait) in now.items() if name != "1/4"}
    assert all(wait is not None and wait > 0 for wait in waits.values()), waits


# ---- policies ------------------------------------------------------------------------------


async def test_each_scope_reads_sets_and_clears_its_policy(build: Builder) -> None:
    w = await _world(build)
    user_id = w.capacity.user_ids[0]
    scopes = {
        "global": f"{API}/policies/global",
        "organization": f"{API}/policies/orgs/{w.org_id}",
        "group": f"{API}/policies/groups/{w.group_id}",
        "user": f"{API}/policies/users/{user_id}",
    }
    for kind, path in scopes.items():
        empty = await w.root.get(path)
        assert empty.status_code == 200, empty.text
        assert (empty.json()["scope"], empty.json()["values"], empty.json()["updated_at"]) == (
            kind,
            {},
            None,
        )
        put = await w.root.put(path, json={"values": {"max_gpu_sessions": 3, "storage_gb": 7}})
        assert put.status_code == 200, put.text
        assert put.json()["values"] == {"max_gpu_sessions": 3, "storage_gb": 7}
        replaced = await w.root.put(path, json={"values": {"queueing_allowed": False}})
        assert (await w.root.get(path)).json()["values"] == {"queueing_allowed": False}
        assert replaced.json()["updated_at"] is not None
        assert (await w.root.delete(path)).status_code == 204
        assert (await w.root.get(path)).json()["values"] == {}
        _error(await w.root.delete(path), 404, "policy_not_found")
    for missing in ("orgs", "groups", "users"):
        _error(
            await w.root.get(f"{API}/policies/{missing}/{uuid.uuid4()}"),
            404,
            f"{missing[:-1] if missing != 'orgs' else 'org'}_not_found",
        )


async def test_invalid_policies_are_refused(build: Builder) -> None:
    w = await _world(build, n_cards=1)
    path = f"{API}/policies/groups/{w.group_id}"
    for values in (
        {"no_such_key": 1},
        {"max_gpu_sessions": -1},
        {"max_gpu_sessions": "three"},
        {"max_gpu_sessions": 2.5},
        {"queue_weight": 0},
        {"queueing_allowed": "yes"},
        {"allowed_tiers": "1/8"},
        {"allowed_tiers": [1, 2]},
        {"idle_timeout_minutes": 10**12},
    ):
        response = await w.root.put(path, json={"values": values})
        assert response.status_code in (400, 422), (values, response.text)
        assert response.status_code < 500
        if response.status_code == 422 and response.json()["error"]["code"] != "invalid_request":
            assert response.json()["error"]["code"] == "invalid_policy", response.text
    assert (await w.root.get(path)).json()["values"] == {}
    for odd in (["x" * 100_000], ["GPU\x00"], [str(i) for i in range(10_000)]):
        response = await w.root.put(path, json={"values": {"allowed_models": odd}})
        assert response.status_code < 500, response.text
    too_many = await w.root.put(path, json={"values": {f"k{i}": 1 for i in range(5000)}})
    assert too_many.status_code == 422, too_many.text


async def test_the_effective_policy_names_where_each_value_came_from(build: Builder) -> None:
    w = await _world(build)
    user_id = w.capacity.user_ids[0]
    await w.root.put(f"{API}/policies/global", json={"values": {"max_gpu_sessions": 5}})
    await w.root.put(f"{API}/policies/orgs/{w.org_id}", json={"values": {"storage_gb": 10}})
    await w.root.put(
        f"{API}/policies/groups/{w.group_id}", json={"values": {"max_gpu_sessions": 3}}
    )
    await w.root.put(f"{API}/policies/users/{user_id}", json={"values": {"queue_weight": 2}})
    for client in (w.root, w.members[0]):
        response = await client.get(f"{API}/users/{user_id}/effective-policy")
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["group_id"] == str(w.group_id)
        found = {v["key"]: (v["value"], v["scope"], v["scope_id"]) for v in body["values"]}
        assert found["max_gpu_sessions"] == (3, "group", str(w.group_id))
        assert found["storage_gb"] == (10, "organization", str(w.org_id))
        assert found["queue_weight"] == (2, "user", str(user_id))
        assert found["allowed_tiers"][1] is None
    # A fellow member does not read another member's policy.
    other = await w.members[1].get(f"{API}/users/{user_id}/effective-policy")
    assert other.status_code == 403, other.text
    elsewhere = await w.root.get(
        f"{API}/users/{user_id}/effective-policy", params={"group_id": str(uuid.uuid4())}
    )
    _error(elsewhere, 404, "not_in_group")


async def test_an_org_admins_user_policy_applies_only_in_their_organization(
    build: Builder,
) -> None:
    """An organization's admin sets a member's own policy while the member is theirs alone;
    the member then joins another organization's group. There, that policy neither loosens the
    other organization's limits nor weighs the member's requests: nothing an organization's
    admins do reaches into another organization. A super admin's applies everywhere."""
    w = await _world(build)
    user_id = w.capacity.user_ids[0]
    async with build.sessions() as db:
        org = await db.get(Organization, w.org_id)
        member = await db.get(User, user_id)
    assert org is not None
    assert member is not None
    olga = await build.user("Olga Org")
    await build.org_admin(olga, org)
    ours = await build.signed_in(olga)
    values = {"queue_weight": 1000, "max_gpu_sessions": 50}
    set_ = await ours.put(f"{API}/policies/users/{user_id}", json={"values": values})
    assert set_.status_code == 200, set_.text
    other = await build.org("Other")
    theirs = await build.group(other, "Theirs")
    await build.member(member, theirs)
    limit = {"values": {"max_gpu_sessions": 1}}
    assert (await w.root.put(f"{API}/policies/groups/{theirs.id}", json=limit)).status_code == 200

    async def effective(group_id: uuid.UUID) -> dict[str, Any]:
        response = await w.root.get(
            f"{API}/users/{user_id}/effective-policy", params={"group_id": str(group_id)}
        )
        assert response.status_code == 200, response.text
        return {v["key"]: (v["value"], v["scope"]) for v in response.json()["values"]}

    there = await effective(theirs.id)
    assert there["max_gpu_sessions"] == (1, "group")
    assert there["queue_weight"] == (1, None)
    here = await effective(w.group_id)
    assert here["max_gpu_sessions"] == (50, "user")
    assert here["queue_weight"] == (1000, "user")
    # The queue and admission read it the same way.
    async with build.sessions() as db:
        many = await service.effective_for_many(db, [(user_id, theirs.id), (user_id, w.group_id)])
    assert many[(user_id, theirs.id)]["max_gpu_sessions"].value == 1
    assert many[(user_id, w.group_id)]["max_gpu_sessions"].value == 50
    # What a super admin sets for the member applies in every organization.
    everywhere = {"values": {"max_gpu_sessions": 7}}
    assert (await w.root.put(f"{API}/policies/users/{user_id}", json=everywhere)).status_code == 200
    assert (await effective(theirs.id))["max_gpu_sessions"] == (7, "user")


async def test_the_preemption_keys_round_trip_and_a_bad_priority_is_refused(
    build: Builder,
) -> None:
    w = await _world(build)
    user_id = w.capacity.user_ids[0]
    path = f"{API}/policies/groups/{w.group_id}"
    values = {"priority": "high", "preemptible": False, "max_wait_minutes": 30}
    put = await w.root.put(path, json={"values": values})
    assert put.status_code == 200, put.text
    assert put.json()["values"] == values
    assert (await w.root.get(path)).json()["values"] == values
    response = await w.root.get(f"{API}/users/{user_id}/effective-policy")
    assert response.status_code == 200, response.text
    found = {v["key"]: (v["value"], v["scope"]) for v in response.json()["values"]}
    assert found["priority"] == ("high", "group")
    assert found["preemptible"] == (False, "group")
    assert found["max_wait_minutes"] == (30, "group")
    assert found["min_runtime_minutes"] == (None, None)
    assert found["preemption_notice_minutes"] == (10, None)
    urgent = await w.root.put(path, json={"values": {"priority": "urgent"}})
    _error(urgent, 422, "invalid_policy")
    assert "priority is one of low, normal, high." in urgent.json()["error"]["message"]
    assert (await w.root.get(path)).json()["values"] == values


# ---- admission preview and the queue -------------------------------------------------------


async def test_the_preview_says_start_with_price_and_hours(build: Builder) -> None:
    w = await _world(build)
    before = await _counts(build)
    response = await w.members[0].post(
        f"{API}/admission/preview", json={"group_id": str(w.group_id), "tier_id": w.tier("1/8")}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["outcome"], body["price_per_hour"], body["available_credits"]) == (
        "start",
        "1",
        "100",
    )
    assert body["hours_affordable"] == 100
    assert body["queue_position"] is None
    cpu = await w.members[0].post(f"{API}/admission/preview", json={"group_id": str(w.group_id)})
    assert (cpu.json()["outcome"], cpu.json()["hours_affordable"]) == ("start", None)
    assert await _counts(build) == before


async def test_the_preview_gives_the_queue_position_and_changes_nothing(build: Builder) -> None:
    w = await _world(build, n_cards=2, users=3)
    await _fill(build, w, 0, "exclusive", 2)
    queued = await admit(
        build.sessions, w.capacity.ask(1, "exclusive"), build.clock.now(), w.capacity.settings
    )
    assert queued.request.status == "queued"
    build.clock.advance(timedelta(minutes=5))  # it has waited longer: it stays ahead
    before = await _counts(build)
    response = await w.members[2].post(
        f"{API}/admission/preview",
        json={"group_id": str(w.group_id), "tier_id": w.tier("exclusive")},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["outcome"] == "queue", body
    assert body["queue_position"] == 2
    assert body["estimated_wait_seconds"] is not None
    assert body["estimated_wait_seconds"] > 0
    assert await _counts(build) == before
    mine = await w.members[2].get(f"{API}/queue")
    assert mine.json()["items"] == []


async def test_the_preview_says_why_not(build: Builder) -> None:
    w = await _world(build, n_cards=1)
    user_id = w.capacity.user_ids[0]
    await w.root.put(f"{API}/policies/users/{user_id}", json={"values": {"allowed_tiers": ["1/8"]}})
    denied = await w.members[0].post(
        f"{API}/admission/preview", json={"group_id": str(w.group_id), "tier_id": w.tier("1/2")}
    )
    assert denied.status_code == 200, denied.text
    assert (
        denied.json()["outcome"],
        denied.json()["policy_key"],
        denied.json()["policy_scope"],
    ) == (
        "policy_denied",
        "allowed_tiers",
        "user",
    )
    made = await w.root.post(
        f"{API}/gpu-models",
        json={"name": "Acme-X1", "exclusive_price": "1", "memory_mib": 24576, "split_count": 4},
    )
    tier = await w.root.post(
        f"{API}/gpu-models/{made.json()['id']}/tiers", json={"kind": "exclusive"}
    )
    nowhere = await w.members[1].post(
        f"{API}/admission/preview",
        json={"group_id": str(w.group_id), "tier_id": tier.json()["id"]},
    )
    assert nowhere.json()["outcome"] == "no_capacity", nowhere.text
    poor = await another_group(build.sessions, build.clock.now(), user_credits=0)
    client = await _signed_in(build, poor.user_ids[0])
    short = await client.post(
        f"{API}/admission/preview",
        json={"group_id": str(poor.group_id), "tier_id": w.tier("1/8")},
    )
    assert short.status_code == 200, short.text
    assert (short.json()["outcome"], short.json()["hours_affordable"]) == (
        "insufficient_credits",
        0,
    )
    # Another organization's group is not the caller's to ask in.
    foreign = await client.post(
        f"{API}/admission/preview", json={"group_id": str(w.group_id), "tier_id": w.tier("1/8")}
    )
    _error(foreign, 404, "not_in_group")
    unknown_tier = await client.post(
        f"{API}/admission/preview",
        json={"group_id": str(poor.group_id), "tier_id": str(uuid.uuid4())},
    )
    _error(unknown_tier, 404, "tier_not_found")


async def test_the_queue_shows_own_requests_admins_see_priorities_and_owners_cancel(
    build: Builder,
) -> None:
    w = await _world(build, n_cards=1, users=2)
    await _fill(build, w, 0, "exclusive", 1)
    queued = await admit(
        build.sessions, w.capacity.ask(1, "exclusive"), build.clock.now(), w.capacity.settings
    )
    assert queued.request.status == "queued"
    request_id = str(queued.request.id)
    mine = await w.members[1].get(f"{API}/queue")
    assert mine.status_code == 200, mine.text
    [item] = mine.json()["items"]
    assert (item["id"], item["status"], item["position"], item["priority"]) == (
        request_id,
        "queued",
        1,
        None,
    )
    _error(await w.members[1].get(f"{API}/queue", params={"scope": "all"}), 403, "forbidden")
    bad_scope = await w.members[1].get(f"{API}/queue", params={"scope": "everything"})
    assert bad_scope.status_code == 422, bad_scope.text
    everyone = await w.root.get(f"{API}/queue", params={"scope": "all"})
    assert everyone.status_code == 200, everyone.text
    by_id = {i["id"]: i for i in everyone.json()["items"]}
    assert by_id[request_id]["priority"] is not None
    assert by_id[request_id]["priority"]["weight"] == 1
    assert len(by_id) == 2
    # Someone else's request is not there for them; the owner withdraws it once.
    _error(await w.members[0].delete(f"{API}/queue/{request_id}"), 404, "request_not_found")
    _error(await w.members[0].delete(f"{API}/queue/{uuid.uuid4()}"), 404, "request_not_found")
    assert (await w.members[1].delete(f"{API}/queue/{request_id}")).status_code == 204
    _error(await w.members[1].delete(f"{API}/queue/{request_id}"), 409, "not_queued")
    [after] = (await w.members[1].get(f"{API}/queue")).json()["items"]
    assert (after["status"], after["position"]) == ("cancelled", None)


# ---- hostile inputs ------------------------------------------------------------------------


async def test_hostile_bodies_never_end_in_a_server_error(build: Builder) -> None:
    w = await _world(build, n_cards=1)
    [card_id] = [c.id for c in (await card_rows(build.sessions, w.capacity.cluster_id)).values()]
    model_id = w.capacity.model.id
    huge = "x" * 200_000
    attempts: list[tuple[str, str, Any]] = [
        ("PUT", f"{API}/cards/{card_id}/pool", {}),
        ("PUT", f"{API}/cards/{card_id}/pool", {"pool": "nvlink"}),
        ("PUT", f"{API}/cards/{card_id}/pool", {"pool": huge}),
        ("PUT", f"{API}/cards/{card_id}/mig-layout", {}),
        ("PUT", f"{API}/cards/{card_id}/mig-layout", {"instances": []}),
        ("PUT", f"{API}/cards/{card_id}/mig-layout", {"instances": [{"profile": "1g\x00"}]}),
        ("PUT", f"{API}/cards/{card_id}/mig-layout", {"instances": [{"profile": huge}]}),
        ("PUT", f"{API}/cards/{card_id}/mig-layout", {"instances": [{"profile": "1g.10gb"}] * 50}),
        ("POST", f"{API}/gpu-models", {}),
        (
            "POST",
            f"{API}/gpu-models",
            {"name": "GPU\x00X", "exclusive_price": "1", "memory_mib": 1, "split_count": 1},
        ),
        ("POST", f"{API}/gpu-models", {"name": huge, "exclusive_price": "1"}),
        ("POST", f"{API}/gpu-models", {"name": "   ", "exclusive_price": "1"}),
        ("POST", f"{API}/gpu-models", {"name": "M", "exclusive_price": "1\x00"}),
        ("POST", f"{API}/gpu-models/{model_id}/tiers", {}),
        ("POST", f"{API}/gpu-models/{model_id}/tiers", {"kind": "mig", "mig_profile": "1g\x00"}),
        ("POST", f"{API}/gpu-models/{model_id}/tiers", {"kind": "mig", "mig_profile": huge}),
        ("POST", f"{API}/gpu-models/{model_id}/tiers", {"kind": "fraction"}),
        ("POST", f"{API}/gpu-models/{model_id}/tiers", {"kind": "fraction", "denominator": 10**9}),
        (
            "POST",
            f"{API}/gpu-models/{model_id}/tiers",
            {"kind": "exclusive", "mig_profile": "1g.10gb"},
        ),
        ("PATCH", f"{API}/tiers/{w.tier('1/8')}", {}),
        ("PUT", f"{API}/policies/global", {}),
        ("PUT", f"{API}/policies/global", {"values": []}),
        ("PUT", f"{API}/policies/global", {"values": {"\x00": 1}}),
        ("POST", f"{API}/admission/preview", {}),
        ("POST", f"{API}/admission/preview", {"group_id": "not-a-uuid"}),
        (
            "POST",
            f"{API}/admission/preview",
            {"group_id": str(w.group_id), "cpu_cores": 1e308, "memory_mib": 2**70},
        ),
    ]
    for method, path, body in attempts:
        response = await w.root.request(method, path, json=body)
        assert 400 <= response.status_code < 500, (method, path, str(body)[:80], response.text)
    for client in (w.root, w.members[0]):
        nul = await client.post(
            f"{API}/admission/preview",
            json={"group_id": str(w.group_id), "tier_id": w.tier("1/8"), "cpu_cores": 0},
        )
        assert nul.status_code in (200, 404), nul.text
    raw = await w.root.put(
        f"{API}/policies/global", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert raw.status_code == 422, raw.text
    big = await w.root.put(
        f"{API}/policies/global",
        content=b'{"values": {"allowed_models": ["' + b"a" * 5_000_000 + b'"]}}',
        headers={"Content-Type": "application/json"},
    )
    assert 400 <= big.status_code < 500, big.text


async def test_the_same_change_sent_twice_at_once_is_applied_once(build: Builder) -> None:
    w = await _world(build, n_cards=1)
    [card_id] = [c.id for c in (await card_rows(build.sessions, w.capacity.cluster_id)).values()]
    path = f"{API}/policies/groups/{w.group_id}"
    body = {"values": {"max_gpu_sessions": 4}}
    puts = await asyncio.gather(*(w.root.put(path, json=body) for _ in range(2)))
    assert [r.status_code for r in puts] == [200, 200], [r.text for r in puts]
    assert (await w.root.get(path)).json()["values"] == {"max_gpu_sessions": 4}
    pools = await asyncio.gather(
        *(w.root.put(f"{API}/cards/{card_id}/pool", json={"pool": "mig"}) for _ in range(2))
    )
    assert [r.status_code for r in pools] == [200, 200], [r.text for r in pools]
    model = {"name": "Acme-X1", "exclusive_price": "4", "memory_mib": 24576, "split_count": 4}
    made = await asyncio.gather(*(w.root.post(f"{API}/gpu-models", json=model) for _ in range(2)))
    assert sorted(r.status_code for r in made) == [201, 409], [r.text for r in made]
    model_id = next(r.json()["id"] for r in made if r.status_code == 201)
    tier = {"kind": "fraction", "denominator": 2}
    tiers = await asyncio.gather(
        *(w.root.post(f"{API}/gpu-models/{model_id}/tiers", json=tier) for _ in range(2))
    )
    assert sorted(r.status_code for r in tiers) in ([201, 409], [201, 422]), [r.text for r in tiers]
    listed = (await w.root.get(f"{API}/gpu-models")).json()["items"]
    acme = next(m for m in listed if m["name"] == "Acme-X1")
    assert [t["name"] for t in acme["tiers"]] == ["1/2"]
    assert A100 in {m["name"] for m in listed}


# ---- found by trying the API as a hostile tenant -------------------------------------------


async def test_an_admin_reads_a_guests_policy_only_in_their_own_group(build: Builder) -> None:
    """A guest from another organization: the host group's admin sees the guest's policy in
    the host group, never in the guest's home group (that is the other organization's)."""
    w = await _world(build)
    home = await another_group(build.sessions, build.clock.now())
    guest_id = home.user_ids[0]
    async with build.sessions() as db:
        guest = await db.get(User, guest_id)
        host_group = await db.get(Group, w.group_id)
    assert guest is not None
    assert host_group is not None
    await build.member(guest, host_group, "guest", build.clock.now() + timedelta(days=30))
    host_admin = await build.user("Host Admin")
    await build.group_admin(host_admin, host_group)
    admin = await build.signed_in(host_admin)
    await w.root.put(
        f"{API}/policies/groups/{home.group_id}", json={"values": {"max_gpu_sessions": 7}}
    )
    own = await admin.get(
        f"{API}/users/{guest_id}/effective-policy", params={"group_id": str(w.group_id)}
    )
    assert own.status_code == 200, own.text
    theirs = await admin.get(
        f"{API}/users/{guest_id}/effective-policy", params={"group_id": str(home.group_id)}
    )
    _error(theirs, 404, "not_in_group")
    assert "7" not in theirs.text


async def test_an_expired_guest_has_no_effective_policy_in_the_group(build: Builder) -> None:
    w = await _world(build)
    visitor = await build.user("Visitor")
    async with build.sessions() as db:
        group = await db.get(Group, w.group_id)
    assert group is not None
    await build.member(visitor, group, "guest", build.clock.now() - timedelta(minutes=1))
    expired = await w.root.get(
        f"{API}/users/{visitor.id}/effective-policy", params={"group_id": str(w.group_id)}
    )
    _error(expired, 404, "not_in_group")


async def test_extreme_policy_numbers_and_invisible_names_are_refused(build: Builder) -> None:
    w = await _world(build)
    path = f"{API}/policies/groups/{w.group_id}"
    for values in (
        {"queue_weight": 10**400},
        {"cpu_cores_total": -(10**400)},
        {"max_gpu_sessions": 10**30},
        {"allowed_tiers": ["1/4\u200b"]},
        {"allowed_models": ["A100\u202e"]},
        {"allowed_models": ["x" * 121]},
    ):
        _error(await w.root.put(path, json={"values": values}), 422, "invalid_policy")


async def test_a_policy_that_sets_nothing_is_none_and_is_deleted_once(build: Builder) -> None:
    w = await _world(build)
    path = f"{API}/policies/orgs/{w.org_id}"
    emptied = await w.root.put(path, json={"values": {}})
    assert emptied.status_code == 200, emptied.text
    assert emptied.json()["values"] == {}
    _error(await w.root.delete(path), 404, "policy_not_found")
    assert (await w.root.put(path, json={"values": {"storage_gb": 5}})).status_code == 200
    twice = await asyncio.gather(w.root.delete(path), w.root.delete(path))
    assert sorted(r.status_code for r in twice) == [204, 404]


async def test_a_tier_under_one_mib_is_refused(build: Builder) -> None:
    w = await _world(build)
    made = await w.root.post(
        f"{API}/gpu-models",
        json={"name": "TINY-1", "exclusive_price": "1", "memory_mib": 1, "split_count": 4},
    )
    assert made.status_code == 201, made.text
    refused = await w.root.post(
        f"{API}/gpu-models/{made.json()['id']}/tiers", json={"kind": "fraction", "denominator": 2}
    )
    _error(refused, 422, "invalid_tier")


async def test_the_preview_queues_when_the_models_cards_are_only_down(build: Builder) -> None:
    w = await _world(build, n_cards=2)
    down = [Card(c.uuid, c.node, healthy=False) for c in cards(2)]
    await apply(build.sessions, w.capacity.cluster_id, 2, down, build.clock.now())
    preview = await w.members[0].post(
        f"{API}/admission/preview", json={"group_id": str(w.group_id), "tier_id": w.tier("1/4")}
    )
    assert preview.status_code == 200, preview.text
    assert preview.json()["outcome"] == "queue", preview.text
    nan = await w.members[0].post(
        f"{API}/admission/preview",
        content=b'{"group_id": "%s", "cpu_cores": NaN}' % str(w.group_id).encode(),
        headers={"content-type": "application/json"},
    )
    assert nan.status_code == 422, nan.text
