"""Inventory reports on the real database: cards appearing, changing, going unhealthy or
missing (their allocations lost, their slots still taken), replays, and cards coming back."""

from __future__ import annotations

import dataclasses

from sqlalchemy import text

from gshare.capacity import service
from gshare.capacity.models import GpuCard
from gshare.identity.authz import Context
from tests.capacity.builders import (
    Card,
    add_cluster,
    admit,
    allocations_of,
    apply,
    capacity_world,
    card_rows,
    cards,
    dequeue,
    release,
    super_admin,
)


def _without(reported: list[Card], gone: str) -> list[Card]:
    return [c for c in reported if c.uuid != gone]


def _changed(reported: list[Card], which: str, **fields: object) -> list[Card]:
    return [dataclasses.replace(c, **fields) if c.uuid == which else c for c in reported]  # type: ignore[arg-type]


def _by_id(found: dict[str, GpuCard]) -> dict[object, GpuCard]:
    return {c.id: c for c in found.values()}


async def test_new_cards_appear_and_an_older_report_changes_nothing(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=2)
    assert set(await card_rows(sessions, w.cluster_id)) == {"GPU-00000", "GPU-00001"}

    assert await apply(sessions, w.cluster_id, 5, cards(4), now) is True
    found = await card_rows(sessions, w.cluster_id)
    assert set(found) == {f"GPU-{i:05d}" for i in range(4)}
    assert all(c.healthy and not c.missing for c in found.values())

    assert await apply(sessions, w.cluster_id, 3, cards(1), now) is False
    assert await apply(sessions, w.cluster_id, 5, cards(1), now) is False
    replayed = await card_rows(sessions, w.cluster_id)
    assert {u: c.missing for u, c in replayed.items()} == dict.fromkeys(found, False)
    whole = [await admit(sessions, w.ask(i % 2, "exclusive"), now, w.settings) for i in range(4)]
    assert len({o.allocation.card_id for o in whole if o.allocation}) == 4


async def test_a_card_changing_model_or_memory_loses_what_it_held(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=2)
    held = await admit(sessions, w.ask(0, "exclusive"), now, w.settings)
    assert held.allocation is not None
    found = _by_id(await card_rows(sessions, w.cluster_id))
    busy = found[held.allocation.card_id].uuid
    idle = next(c.uuid for c in found.values() if c.uuid != busy)

    reported = _changed(cards(2), busy, memory_mib=40960)
    reported = _changed(reported, idle, model="NVIDIA-H100-80GB-HBM3")
    assert await apply(sessions, w.cluster_id, 2, reported, now)
    after = await card_rows(sessions, w.cluster_id)
    assert after[busy].memory_mib == 40960
    assert after[idle].model == "NVIDIA-H100-80GB-HBM3"
    [lost] = await allocations_of(sessions, held.request.id)
    assert lost.status == "lost"
    assert lost.live_card_id == after[busy].id

    # the lost allocation still holds its card, and the other card is no A100 any more
    waiting = await admit(sessions, w.ask(1, "exclusive"), now, w.settings)
    assert waiting.allocation is None
    assert waiting.request.status == "queued"


async def test_an_unhealthy_card_takes_no_new_allocation(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=2)
    assert await apply(
        sessions, w.cluster_id, 2, _changed(cards(2), "GPU-00000", healthy=False), now
    )
    sick = (await card_rows(sessions, w.cluster_id))["GPU-00000"]
    assert not sick.healthy

    small = [await admit(sessions, w.ask(0, "1/8"), now, w.settings) for _ in range(2)]
    assert {o.allocation.card_id for o in small if o.allocation} == {
        (await card_rows(sessions, w.cluster_id))["GPU-00001"].id
    }
    whole = await admit(sessions, w.ask(1, "exclusive"), now, w.settings)
    assert whole.request.status == "queued"
    assert (await dequeue(sessions, now, w.settings)).admitted == []

    assert await apply(sessions, w.cluster_id, 3, cards(2), now)
    summary = await dequeue(sessions, now, w.settings)
    assert summary.admitted == [whole.request.id]
    [placed] = await allocations_of(sessions, whole.request.id)
    assert placed.card_id == sick.id


async def test_a_card_missing_without_allocations_comes_back(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=2)
    assert await apply(sessions, w.cluster_id, 2, _without(cards(2), "GPU-00000"), now)
    found = await card_rows(sessions, w.cluster_id)
    assert found["GPU-00000"].missing
    assert not found["GPU-00001"].missing

    first = await admit(sessions, w.ask(0, "exclusive"), now, w.settings)
    assert first.allocation is not None
    assert first.allocation.card_id == found["GPU-00001"].id
    second = await admit(sessions, w.ask(1, "exclusive"), now, w.settings)
    assert second.request.status == "queued"

    assert await apply(sessions, w.cluster_id, 3, cards(2), now)
    assert not (await card_rows(sessions, w.cluster_id))["GPU-00000"].missing
    summary = await dequeue(sessions, now, w.settings)
    assert summary.admitted == [second.request.id]
    [placed] = await allocations_of(sessions, second.request.id)
    assert placed.card_id == found["GPU-00000"].id


async def test_a_missing_cards_allocations_are_lost_and_keep_their_slot(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=2, users=3)
    held = await admit(sessions, w.ask(0, "exclusive"), now, w.settings)
    assert held.allocation is not None
    found = _by_id(await card_rows(sessions, w.cluster_id))
    gone = found[held.allocation.card_id]
    other = next(c for c in found.values() if c.id != gone.id)

    assert await apply(sessions, w.cluster_id, 2, _without(cards(2), gone.uuid), now)
    assert (await card_rows(sessions, w.cluster_id))[gone.uuid].missing
    [lost] = await allocations_of(sessions, held.request.id)
    assert lost.status == "lost"

    assert await apply(sessions, w.cluster_id, 3, cards(2), now)
    back = (await card_rows(sessions, w.cluster_id))[gone.uuid]
    assert not back.missing
    assert back.carved_tier_id == w.tiers["exclusive"].id
    [still] = await allocations_of(sessions, held.request.id)
    assert still.status == "lost"

    first = await admit(sessions, w.ask(1, "exclusive"), now, w.settings)
    assert first.allocation is not None
    assert first.allocation.card_id == other.id
    second = await admit(sessions, w.ask(2, "exclusive"), now, w.settings)
    assert second.allocation is None
    assert second.request.status == "queued"

    released = await release(sessions, held.request.id, now)
    assert released is not None
    assert released.status == "released"
    summary = await dequeue(sessions, now, w.settings)
    assert summary.admitted == [second.request.id]
    [placed] = await allocations_of(sessions, second.request.id)
    assert placed.card_id == gone.id


async def test_one_report_changes_adds_and_loses_cards_at_once(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=3)
    reported = _changed(_without(cards(3), "GPU-00002"), "GPU-00000", healthy=False)
    reported.append(Card("GPU-00009", "gpu-node-1"))
    assert await apply(sessions, w.cluster_id, 2, reported, now)
    found = await card_rows(sessions, w.cluster_id)
    assert {u: (c.healthy, c.missing) for u, c in found.items()} == {
        "GPU-00000": (False, False),
        "GPU-00001": (True, False),
        "GPU-00002": (True, True),
        "GPU-00009": (True, False),
    }
    assert found["GPU-00009"].node == "gpu-node-1"


async def test_a_card_that_comes_back_as_another_gpu_forgets_its_layout(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=1)
    root = await super_admin(sessions, now)
    card_id = (await card_rows(sessions, w.cluster_id))["GPU-00000"].id
    async with sessions() as db, db.begin():
        ctx = Context(db, root, now)
        await service.set_pool(ctx, card_id, "mig")
        await service.set_mig_layout(ctx, card_id, [("7g.80gb", None)])
    smaller = [Card("GPU-00000", memory_mib=40960, model="NVIDIA-A100-SXM4-40GB")]
    assert await apply(sessions, w.cluster_id, 2, smaller, now)
    card = (await card_rows(sessions, w.cluster_id))["GPU-00000"]
    assert card.mig_layout == []
    assert card.pool == "mig"  # an A100-40GB has a MIG geometry too: laid out again by an admin
    other = [Card("GPU-00000", memory_mib=24576, model="NVIDIA-L4")]
    assert await apply(sessions, w.cluster_id, 3, other, now)
    card = (await card_rows(sessions, w.cluster_id))["GPU-00000"]
    assert (card.pool, card.mig_layout, card.carved_tier_id) == ("hami-core", [], None)


async def test_a_changed_inventory_is_an_event_for_the_consoles_showing_cards(
    sessions, clock
) -> None:
    now = clock.now()
    async with sessions() as db, db.begin():
        cluster_id = await add_cluster(db, now)
    await apply(sessions, cluster_id, 1, cards(2), now)
    await apply(sessions, cluster_id, 2, cards(2), now)  # the same report again: no news
    await apply(sessions, cluster_id, 3, cards(1), now)  # a card went missing
    async with sessions() as db:
        rows = await db.execute(
            text("SELECT user_id, group_id, org_id FROM events WHERE kind = 'cards.changed'")
        )
        audiences = rows.all()
    assert audiences == [(None, None, None), (None, None, None)]  # super admins only
