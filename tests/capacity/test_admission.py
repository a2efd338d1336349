"""Admission on the real database: where sessions land, what policy and credits refuse, the
queue they wait in, idempotent asks, release and the prices they keep."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import text

from gshare.capacity import admission, repository, service, tiers
from gshare.credits import repository as credits
from gshare.credits.amounts import MICRO, hold_amount
from gshare.credits.ledger import InsufficientCredits
from gshare.identity.authz import Context
from gshare.kit.errors import Conflict
from tests.capacity.builders import (
    A100_MIB,
    admit,
    allocations_of,
    apply,
    capacity_world,
    card_rows,
    cards,
    dequeue,
    priced_model,
    release,
    request_row,
    set_policy,
    super_admin,
)
from tests.credits.builders import assert_ledger_clean


async def _wallet(sessions, wallet_id):
    async with sessions() as db:
        wallet = await credits.wallet(db, wallet_id)
    assert wallet is not None
    return wallet


async def test_fractions_fill_the_fullest_card_of_their_tier_then_an_empty_one(
    sessions, clock
) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=4, users=2)
    quarters = [await admit(sessions, w.ask(0, "1/4"), now, w.settings) for _ in range(2)]
    first = quarters[0].allocation
    assert first is not None
    assert {o.allocation.card_id for o in quarters if o.allocation} == {first.card_id}

    eighth = await admit(sessions, w.ask(1, "1/8"), now, w.settings)
    assert eighth.allocation is not None
    assert eighth.allocation.card_id != first.card_id  # a 1/4 card never takes a 1/8

    more = [await admit(sessions, w.ask(0, "1/4"), now, w.settings) for _ in range(3)]
    on = [o.allocation.card_id for o in more if o.allocation]
    assert on[:2] == [first.card_id, first.card_id]
    assert on[2] not in (first.card_id, eighth.allocation.card_id)  # the first is full

    cards = {c.id: c for c in (await card_rows(sessions, w.cluster_id)).values()}
    assert cards[first.card_id].carved_tier_id == w.tiers["1/4"].id
    assert cards[first.card_id].carved_slots == 4
    assert cards[eighth.allocation.card_id].carved_tier_id == w.tiers["1/8"].id
    assert cards[eighth.allocation.card_id].carved_slots == 8
    slots = sorted(o.allocation.slot for o in [*quarters, *more[:2]] if o.allocation)
    assert slots == [0, 1, 2, 3]


async def test_an_emptied_card_is_carved_anew(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=1)
    eighth = await admit(sessions, w.ask(0, "1/8"), now, w.settings)
    assert eighth.allocation is not None
    half = await admit(sessions, w.ask(1, "1/2"), now, w.settings)
    assert half.allocation is None
    assert half.request.status == "queued"

    await release(sessions, eighth.request.id, now)
    card = next(iter((await card_rows(sessions, w.cluster_id)).values()))
    assert card.carved_tier_id is None
    assert card.carved_slots is None

    summary = await dequeue(sessions, now, w.settings)
    assert summary.admitted == [half.request.id]
    card = next(iter((await card_rows(sessions, w.cluster_id)).values()))
    assert (card.carved_tier_id, card.carved_slots) == (w.tiers["1/2"].id, 2)


async def test_exclusive_needs_an_empty_card(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=2)
    quarter = await admit(sessions, w.ask(0, "1/4"), now, w.settings)
    whole = await admit(sessions, w.ask(1, "exclusive"), now, w.settings)
    assert quarter.allocation is not None
    assert whole.allocation is not None
    assert whole.allocation.card_id != quarter.allocation.card_id
    again = await admit(sessions, w.ask(1, "exclusive"), now, w.settings)
    assert again.allocation is None
    assert again.request.status == "queued"
    assert again.position == 1


async def test_a_mig_tier_lands_only_on_a_free_instance_of_its_profile(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(
        sessions,
        now,
        n_cards=2,
        specs=[tiers.fraction(4), tiers.mig("3g.40gb"), tiers.mig("1g.10gb")],
    )
    root = await super_admin(sessions, now)
    mig_card = (await card_rows(sessions, w.cluster_id))["GPU-00000"]
    async with sessions() as db, db.begin():
        ctx = Context(db, root, now)
        await service.set_pool(ctx, mig_card.id, "mig")
        await service.set_mig_layout(ctx, mig_card.id, [("3g.40gb", 0), ("1g.10gb", None)])

    big = await admit(sessions, w.ask(0, "mig-3g.40gb"), now, w.settings)
    assert big.allocation is not None
    assert (big.allocation.card_id, big.allocation.slot) == (mig_card.id, 0)
    assert big.allocation.mig_profile == "3g.40gb"
    small = await admit(sessions, w.ask(1, "mig-1g.10gb"), now, w.settings)
    assert small.allocation is not None
    assert small.allocation.card_id == mig_card.id
    assert small.allocation.slot not in (0, 1, 2, 3)
    assert small.allocation.mig_profile == "1g.10gb"

    second = await admit(sessions, w.ask(1, "mig-3g.40gb"), now, w.settings)
    assert second.allocation is None
    assert second.request.status == "queued"
    quarter = await admit(sessions, w.ask(0, "1/4"), now, w.settings)
    assert quarter.allocation is not None
    assert quarter.allocation.card_id != mig_card.id

    await release(sessions, big.request.id, now)
    summary = await dequeue(sessions, now, w.settings)
    assert summary.admitted == [second.request.id]
    [placed] = list(await allocations_of(sessions, second.request.id))
    assert (placed.card_id, placed.slot) == (mig_card.id, 0)


async def test_a_policy_refusal_names_key_and_scope_and_the_user_value_wins(
    sessions, clock
) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=2)
    await set_policy(sessions, now, "group", w.group_id, {"max_gpu_sessions": 1})
    assert (await admit(sessions, w.ask(0, "1/4"), now, w.settings)).allocation is not None
    with pytest.raises(admission.PolicyDenied) as refused:
        await admit(sessions, w.ask(0, "1/4"), now, w.settings)
    assert refused.value.status == 403
    error = refused.value.body()["error"]
    assert error["code"] == "policy_denied"
    assert (error["key"], error["scope"], error["scope_id"]) == (
        "max_gpu_sessions",
        "group",
        str(w.group_id),
    )

    await set_policy(sessions, now, "user", w.user_ids[0], {"max_gpu_sessions": 2})
    assert (await admit(sessions, w.ask(0, "1/4"), now, w.settings)).allocation is not None
    with pytest.raises(admission.PolicyDenied) as again:
        await admit(sessions, w.ask(0, "1/4"), now, w.settings)
    assert again.value.body()["error"]["scope"] == "user"
    # the other member is still held to the group's limit of one
    assert (await admit(sessions, w.ask(1, "1/8"), now, w.settings)).allocation is not None
    with pytest.raises(admission.PolicyDenied):
        await admit(sessions, w.ask(1, "1/8"), now, w.settings)


async def test_the_users_own_wallet_must_cover_one_hold_window(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=2, users=1, user_credits=5)
    with pytest.raises(InsufficientCredits) as short:
        await admit(sessions, w.ask(0, "exclusive"), now, w.settings)
    assert short.value.status == 409
    assert short.value.code == "insufficient_credits"
    assert (await _wallet(sessions, w.wallets.users[0])).held == 0

    longer = w.settings.model_copy(update={"hold_window_seconds": 3 * 3600})
    price = w.tiers["1/4"].price
    assert hold_amount(price, 3 * 3600) > 5 * MICRO  # 2 credits an hour over 3 hours
    with pytest.raises(InsufficientCredits):
        await admit(sessions, w.ask(0, "1/4"), now, longer)
    async with sessions() as db:
        assert await repository.requests_of(db, user_id=w.user_ids[0]) == []


async def test_a_hold_is_placed_on_admission_and_released_or_settled(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=2, users=1, user_credits=20)
    price = w.tiers["1/4"].price
    before = await _wallet(sessions, w.wallets.users[0])
    first = await admit(sessions, w.ask(0, "1/4"), now, w.settings)
    assert first.allocation is not None
    assert first.allocation.hold_id is not None
    assert first.allocation.price_per_hour == price
    held = await _wallet(sessions, w.wallets.users[0])
    assert held.held == hold_amount(price, w.settings.hold_window_seconds)
    assert held.balance == before.balance

    released = await release(sessions, first.request.id, now + timedelta(minutes=5))
    assert released is not None
    assert released.status == "released"
    after = await _wallet(sessions, w.wallets.users[0])
    assert (after.balance, after.held) == (before.balance, 0)
    assert await release(sessions, first.request.id, now) is None  # released already

    second = await admit(sessions, w.ask(0, "1/4"), now, w.settings)
    assert second.allocation is not None
    await release(sessions, second.request.id, now + timedelta(minutes=30), used=MICRO)
    settled = await _wallet(sessions, w.wallets.users[0])
    assert (settled.balance, settled.held) == (before.balance - MICRO, 0)
    await assert_ledger_clean(sessions)


async def test_what_does_not_fit_is_queued_with_position_and_wait(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=1, users=3)
    assert (await admit(sessions, w.ask(0, "exclusive"), now, w.settings)).allocation
    second = await admit(sessions, w.ask(1, "exclusive"), now, w.settings)
    third = await admit(sessions, w.ask(2, "exclusive"), now + timedelta(seconds=1), w.settings)
    assert (second.request.status, second.position) == ("queued", 1)
    assert (third.request.status, third.position) == ("queued", 2)
    assert second.estimated_wait is not None
    assert third.estimated_wait is not None
    assert timedelta(0) < second.estimated_wait < third.estimated_wait
    assert await allocations_of(sessions, second.request.id) == []
    # the only card is taken whole, so a fraction waits too
    quarter = await admit(sessions, w.ask(0, "1/4"), now, w.settings)
    assert quarter.request.status == "queued"


async def test_no_queueing_or_no_card_of_the_model_is_no_capacity(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=1)
    assert (await admit(sessions, w.ask(0, "exclusive"), now, w.settings)).allocation
    await set_policy(sessions, now, "global", None, {"queueing_allowed": False})
    with pytest.raises(admission.NoCapacity) as full:
        await admit(sessions, w.ask(1, "exclusive"), now, w.settings)
    assert (full.value.status, full.value.code) == (409, "no_capacity")

    async with sessions() as db, db.begin():
        _, h100 = await priced_model(db, now, name="NVIDIA-H100-80GB-HBM3", memory_mib=A100_MIB)
    await set_policy(sessions, now, "global", None, {})
    ask = dataclasses.replace(w.ask(1, None), tier_id=h100["1/4"].id)
    with pytest.raises(admission.NoCapacity) as absent:
        await admit(sessions, ask, now, w.settings)
    assert absent.value.code == "no_capacity"
    assert "model" in absent.value.message


async def test_the_same_request_id_answers_the_first_outcome(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=1, users=2)
    request_id = uuid.uuid4()
    first = await admit(sessions, w.ask(0, "1/4", request_id=request_id), now, w.settings)
    again = await admit(sessions, w.ask(0, "1/4", request_id=request_id), now, w.settings)
    assert first.allocation is not None
    assert again.allocation is not None
    assert again.allocation.id == first.allocation.id
    assert len(await allocations_of(sessions, request_id)) == 1
    wallet = await _wallet(sessions, w.wallets.users[0])
    assert wallet.held == hold_amount(w.tiers["1/4"].price, w.settings.hold_window_seconds)

    assert (await admit(sessions, w.ask(1, "exclusive"), now, w.settings)).request.status == (
        "queued"
    )
    queued_id = uuid.uuid4()
    queued = await admit(sessions, w.ask(1, "1/2", request_id=queued_id), now, w.settings)
    repeat = await admit(sessions, w.ask(1, "1/2", request_id=queued_id), now, w.settings)
    assert queued.request.status == repeat.request.status == "queued"
    assert repeat.position == queued.position
    with pytest.raises(Conflict) as taken:
        await admit(sessions, w.ask(0, "1/4", request_id=queued_id), now, w.settings)
    assert taken.value.code == "request_exists"


async def test_release_frees_the_slot_and_dequeue_admits_the_queued(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=1, users=2)
    running = await admit(sessions, w.ask(0, "exclusive"), now, w.settings)
    waiting = await admit(sessions, w.ask(1, "exclusive"), now, w.settings)
    assert running.allocation is not None
    assert waiting.allocation is None
    later = now + timedelta(minutes=10)
    await release(sessions, running.request.id, later)
    card = next(iter((await card_rows(sessions, w.cluster_id)).values()))
    assert card.carved_tier_id is None
    summary = await dequeue(sessions, later, w.settings)
    assert summary.admitted == [waiting.request.id]
    [placed] = await allocations_of(sessions, waiting.request.id)
    assert placed.status == "live"
    assert placed.card_id == card.id
    assert placed.hold_id is not None
    assert (await request_row(sessions, waiting.request.id)).status == "admitted"
    await assert_ledger_clean(sessions)


async def test_a_running_allocation_keeps_its_price(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=1)
    old_price = w.tiers["1/4"].price
    running = await admit(sessions, w.ask(0, "1/4"), now, w.settings)
    assert running.allocation is not None
    root = await super_admin(sessions, now)
    async with sessions() as db, db.begin():
        await service.set_tier_price(Context(db, root, now), w.tiers["1/4"].id, 5 * MICRO)
    newer = await admit(sessions, w.ask(1, "1/4"), now, w.settings)
    assert newer.allocation is not None
    assert newer.allocation.price_per_hour == 5 * MICRO
    [kept] = await allocations_of(sessions, running.request.id)
    assert kept.price_per_hour == old_price != 5 * MICRO


async def test_cpu_only_requests_take_no_card_and_no_hold_but_meet_quotas(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=1)
    cpu = await admit(sessions, w.ask(0, None), now, w.settings)
    assert cpu.allocation is not None
    assert (cpu.allocation.card_id, cpu.allocation.slot, cpu.allocation.hold_id) == (
        None,
        None,
        None,
    )
    assert (await _wallet(sessions, w.wallets.users[0])).held == 0

    await set_policy(
        sessions,
        now,
        "user",
        w.user_ids[0],
        {"cpu_cores_per_session": 2, "memory_mib_total": 4096},
    )
    with pytest.raises(admission.PolicyDenied) as wide:
        await admit(
            sessions, dataclasses.replace(w.ask(0, None), cpu_millicores=4000), now, w.settings
        )
    assert wide.value.key == "cpu_cores_per_session"
    assert (await admit(sessions, w.ask(0, None), now, w.settings)).allocation is not None
    with pytest.raises(admission.PolicyDenied) as full:
        await admit(sessions, w.ask(0, None), now, w.settings)
    assert (full.value.key, full.value.scope) == ("memory_mib_total", "user")
    await release(sessions, cpu.request.id, now)
    assert (await admit(sessions, w.ask(0, None), now, w.settings)).allocation is not None


async def test_concurrent_asks_never_overfill_a_card(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=1, users=10, user_credits=20)

    async def ask(user: int) -> admission.Outcome:
        return await admit(sessions, w.ask(user, "1/8"), now, w.settings)

    outcomes = await asyncio.gather(*(ask(u) for u in range(10)))
    placed = [o.allocation for o in outcomes if o.allocation is not None]
    assert len(placed) == 8
    assert sorted(a.slot for a in placed) == list(range(8))
    assert sorted(o.request.status for o in outcomes if o.allocation is None) == ["queued"] * 2
    await assert_ledger_clean(sessions)


async def test_concurrent_asks_of_two_tiers_carve_each_card_to_one(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=2, users=12, user_credits=20)
    wanted = ["1/4" if u % 2 else "1/8" for u in range(12)]
    outcomes = await asyncio.gather(
        *(admit(sessions, w.ask(u, tier), now, w.settings) for u, tier in enumerate(wanted))
    )
    placed = [o.allocation for o in outcomes if o.allocation is not None]
    by_card: dict[uuid.UUID | None, set[str | None]] = {}
    for a in placed:
        by_card.setdefault(a.card_id, set()).add(a.tier_name)
    assert sorted(sorted(t for t in names if t) for names in by_card.values()) == [
        ["1/4"],
        ["1/8"],
    ]
    assert len(placed) == 10
    assert [o.request.tier_name for o in outcomes if o.allocation is None] == ["1/4", "1/4"]


async def test_a_card_never_holds_more_than_its_split_count(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=1, users=2)
    assert await apply(sessions, w.cluster_id, 2, cards(1, split_count=4), now)
    eighths = [await admit(sessions, w.ask(0, "1/8"), now, w.settings) for _ in range(5)]
    assert [o.request.status for o in eighths] == ["admitted"] * 4 + ["queued"]
    card = next(iter((await card_rows(sessions, w.cluster_id)).values()))
    assert (card.carved_tier_id, card.carved_slots) == (w.tiers["1/8"].id, 4)


async def test_a_card_changes_pool_only_while_empty(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=1)
    held = await admit(sessions, w.ask(0, "1/4"), now, w.settings)
    assert held.allocation is not None
    assert held.allocation.card_id is not None
    root = await super_admin(sessions, now)
    async with sessions() as db, db.begin():
        with pytest.raises(Conflict) as busy:
            await service.set_pool(Context(db, root, now), held.allocation.card_id, "mig")
    assert busy.value.code == "card_busy"
    await release(sessions, held.request.id, now)
    async with sessions() as db, db.begin():
        view = await service.set_pool(Context(db, root, now), held.allocation.card_id, "mig")
    assert view.card.pool == "mig"
    assert view.card.carved_tier_id is None


async def test_each_step_of_a_request_is_an_event_for_its_owner(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=1, users=3)
    running = await admit(sessions, w.ask(0, "exclusive"), now, w.settings)
    second = await admit(sessions, w.ask(1, "exclusive"), now, w.settings)
    third = await admit(sessions, w.ask(2, "exclusive"), now, w.settings)
    await release(sessions, running.request.id, now)
    await dequeue(sessions, now, w.settings)
    async with sessions() as db:
        rows = await db.execute(
            text("SELECT user_id, data FROM events WHERE kind = 'admission.changed' ORDER BY id")
        )
        seen = [(r.user_id, uuid.UUID(r.data["request_id"]), r.data["state"]) for r in rows]
    first_user, second_user, third_user = w.user_ids
    assert seen[:4] == [
        (first_user, running.request.id, "admitted"),
        (second_user, second.request.id, "queued"),
        (third_user, third.request.id, "queued"),
        (first_user, running.request.id, "ended"),
    ]
    # The dequeue admits one of the two waiting; the other is told its new place.
    states = {request_id: state for _, request_id, state in seen[4:]}
    assert len(seen) == 6
    assert sorted(states.values()) == ["admitted", "queued"]
    assert set(states) == {second.request.id, third.request.id}
