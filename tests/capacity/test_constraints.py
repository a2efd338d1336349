"""The database itself refuses an over-allocated card: rows written straight to the tables,
past every check in Python, are refused by its constraints."""

from __future__ import annotations

import uuid
from datetime import datetime

import pytest
from sqlalchemy import update
from sqlalchemy.exc import IntegrityError

from gshare.capacity.models import AdmissionRequest, Allocation, GpuCard
from tests.capacity.builders import CapacityWorld, admit, capacity_world


async def _world(sessions, now: datetime) -> tuple[CapacityWorld, Allocation]:
    w = await capacity_world(sessions, now, n_cards=1)
    held = await admit(sessions, w.ask(0, "1/4"), now, w.settings)
    assert held.allocation is not None
    assert (held.allocation.slot, held.allocation.live_slots) == (0, 4)
    return w, held.allocation


async def _insert(
    sessions,
    w: CapacityWorld,
    now: datetime,
    card_id: uuid.UUID,
    *,
    tier: str = "1/4",
    slot: int,
    live_slots: int = 4,
) -> None:
    """A request and a live allocation on the card, written directly."""
    request_id = uuid.uuid4()
    tier_row = w.tiers[tier]
    async with sessions() as db, db.begin():
        db.add(
            AdmissionRequest(
                id=request_id,
                user_id=w.user_ids[1],
                group_id=w.group_id,
                tier_id=tier_row.id,
                cpu_millicores=1000,
                memory_mib=2048,
                status="admitted",
                reason="",
                enqueued_at=now,
                decided_at=now,
            )
        )
        await db.flush()
        db.add(
            Allocation(
                id=uuid.uuid4(),
                request_id=request_id,
                user_id=w.user_ids[1],
                group_id=w.group_id,
                cluster_id=w.cluster_id,
                card_id=card_id,
                tier_id=tier_row.id,
                slot=slot,
                vram_mib=tier_row.vram_mib,
                compute_percent=tier_row.compute_percent,
                cpu_millicores=1000,
                memory_mib=2048,
                price_per_hour=0,
                status="live",
                live_card_id=card_id,
                live_tier_id=tier_row.id,
                live_slots=live_slots,
                admitted_at=now,
            )
        )


async def test_the_written_allocation_passes_the_constraints(sessions, clock) -> None:
    now = clock.now()
    w, held = await _world(sessions, now)
    assert held.card_id is not None
    await _insert(sessions, w, now, held.card_id, slot=1)  # a free slot of the same carving


async def test_a_second_live_allocation_of_a_slot_is_refused(sessions, clock) -> None:
    now = clock.now()
    w, held = await _world(sessions, now)
    assert held.card_id is not None
    with pytest.raises(IntegrityError, match="uq_gpu_allocations_slot"):
        await _insert(sessions, w, now, held.card_id, slot=0)


async def test_a_slot_beyond_the_carving_is_refused(sessions, clock) -> None:
    now = clock.now()
    w, held = await _world(sessions, now)
    assert held.card_id is not None
    with pytest.raises(IntegrityError, match="slot_in_carving"):
        await _insert(sessions, w, now, held.card_id, slot=4)
    # nor by claiming a larger carving than the card has
    with pytest.raises(IntegrityError, match="fk_gpu_allocations_carving"):
        await _insert(sessions, w, now, held.card_id, slot=5, live_slots=8)


async def test_an_allocation_of_another_tier_than_the_carving_is_refused(sessions, clock) -> None:
    now = clock.now()
    w, held = await _world(sessions, now)
    assert held.card_id is not None
    with pytest.raises(IntegrityError, match="fk_gpu_allocations_carving"):
        await _insert(sessions, w, now, held.card_id, tier="1/8", slot=5, live_slots=8)
    with pytest.raises(IntegrityError, match="fk_gpu_allocations_carving"):
        await _insert(sessions, w, now, held.card_id, tier="1/8", slot=1, live_slots=4)


async def test_a_carving_a_live_allocation_names_cannot_change(sessions, clock) -> None:
    now = clock.now()
    w, held = await _world(sessions, now)
    assert held.card_id is not None
    for values in (
        {"carved_tier_id": w.tiers["1/8"].id, "carved_slots": 8},
        {"carved_tier_id": w.tiers["1/8"].id},
        {"carved_slots": 8},
        {"carved_tier_id": None, "carved_slots": None},
    ):
        with pytest.raises(IntegrityError):
            async with sessions() as db, db.begin():
                await db.execute(update(GpuCard).where(GpuCard.id == held.card_id).values(**values))
