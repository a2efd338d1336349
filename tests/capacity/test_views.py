"""A cluster's cards list loads what it shows in batches, and says which cards are draining
(held empty for a starving request)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.builders import Builder
from tests.capacity.builders import admit, apply, capacity_world, cards, dequeue
from tests.credits.test_views import counted

API = "/api/v1"


# The app's event relay shares the engine and numbers events on its own schedule.
_RELAY = ("event_relay", "pg_notify", "FROM events", "UPDATE events")


async def _listed(
    client: httpx.AsyncClient, engine: AsyncEngine, cluster_id: object
) -> tuple[list[dict[str, Any]], list[str]]:
    with counted(engine) as statements:
        response = await client.get(f"{API}/clusters/{cluster_id}/cards")
    assert response.status_code == 200, response.text
    own = [s for s in statements if not any(mark in s for mark in _RELAY)]
    return response.json()["items"], own


async def test_the_cards_list_runs_the_same_statements_for_any_number_of_cards(
    build: Builder, engine: AsyncEngine
) -> None:
    now = build.clock.now()
    w = await capacity_world(build.sessions, now, n_cards=2, users=2)
    for user in (0, 1):
        placed = await admit(build.sessions, w.ask(user, "1/4"), now, w.settings)
        assert placed.allocation is not None, placed
    root = await build.signed_in(await build.user("Root", super_admin=True))
    few, few_statements = await _listed(root, engine, w.cluster_id)

    assert await apply(build.sessions, w.cluster_id, 2, cards(40), now)
    for user in (0, 1):
        placed = await admit(build.sessions, w.ask(user, "exclusive"), now, w.settings)
        assert placed.allocation is not None, placed
    many, many_statements = await _listed(root, engine, w.cluster_id)

    assert (len(few), len(many)) == (2, 40)
    assert sum(len(c["occupants"]) for c in many) == 4
    assert len(few_statements) == len(many_statements), (few_statements, many_statements)


async def test_a_card_held_for_a_starving_request_is_draining(build: Builder) -> None:
    t0 = build.clock.now()
    w = await capacity_world(build.sessions, t0, n_cards=2, users=2)
    quarters = [await admit(build.sessions, w.ask(0, "1/4"), t0, w.settings) for _ in range(5)]
    lone = quarters[4].allocation
    assert lone is not None
    whole = await admit(build.sessions, w.ask(1, "exclusive"), t0, w.settings)
    assert whole.request.status == "queued"
    root = await build.signed_in(await build.user("Root", super_admin=True))

    before = (await root.get(f"{API}/clusters/{w.cluster_id}/cards")).json()["items"]
    assert [c["draining"] for c in before] == [False, False]

    starving = t0 + timedelta(minutes=w.settings.starvation_limit_minutes + 1)
    summary = await dequeue(build.sessions, starving, w.settings)
    assert summary.reserved == {lone.card_id: whole.request.id}

    after = (await root.get(f"{API}/clusters/{w.cluster_id}/cards")).json()["items"]
    assert {c["id"]: c["draining"] for c in after} == {
        str(c["id"]): str(c["id"]) == str(lone.card_id) for c in after
    }
    assert sum(c["draining"] for c in after) == 1
