"""The cards a group's share is split from are the cards preemption splits: present, healthy,
not drained, on a connected cluster."""

from __future__ import annotations

import uuid
from datetime import timedelta

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.capacity import admission, shares
from gshare.capacity.models import Drain, GpuCard
from gshare.clusters.models import Cluster
from gshare.identity.authz import Context
from gshare.identity.models import Group
from gshare.identity.permissions import Actor
from gshare.kit.clock import FrozenClock
from tests.capacity.builders import A100, Card, add_cluster, admit, apply, capacity_world, cards


async def test_a_groups_share_counts_only_the_cards_preemption_counts(
    sessions: async_sessionmaker[AsyncSession], clock: FrozenClock
) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=8, users=1)
    async with sessions() as db, db.begin():
        elsewhere = await add_cluster(db, now)
    assert await apply(sessions, elsewhere, 1, [Card("GPU-far-0"), Card("GPU-far-1")], now)
    reported = cards(8, per_node=4)
    reported[7].healthy = False
    assert await apply(sessions, w.cluster_id, 2, reported, now)
    async with sessions() as db, db.begin():
        ids = list(
            await db.scalars(
                select(GpuCard.id).where(GpuCard.cluster_id == w.cluster_id).order_by(GpuCard.uuid)
            )
        )
        # Two cards drained one by one, and the whole of the second node (GPU-00004 to -00007).
        for scope, node, card_id in [
            ("card", None, ids[0]),
            ("card", None, ids[1]),
            ("node", "gpu-node-1", None),
        ]:
            db.add(
                Drain(
                    id=uuid.uuid4(),
                    scope=scope,
                    cluster_id=w.cluster_id,
                    node=node,
                    card_id=card_id,
                    reason="Maintenance",
                    source="admin",
                    deadline=now + timedelta(hours=1),
                    status="active",
                    created_at=now,
                )
            )
        # The other cluster's operator is not heard from: nothing is placed on its cards.
        await db.execute(
            update(Cluster).where(Cluster.id == elsewhere).values(status="unreachable")
        )
        group = await db.get(Group, w.group_id)
        assert group is not None
    assert (await admit(sessions, w.ask(0, "exclusive"), now, w.settings)).allocation

    async with sessions() as db:
        counted = len((await admission.capacity_snapshot(db, {A100}, now)).cards)
        member = Actor(w.user_ids[0], "member@example.org", member_of={w.group_id: group.org_id})
        found = await shares.group_share(Context(db, member, now), w.group_id, w.settings)
    assert counted == 2  # GPU-00002 and GPU-00003
    assert found.cards == counted
    assert found.group.share == 2.0
