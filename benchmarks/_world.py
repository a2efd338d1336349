"""What the database benchmarks build their worlds from: a priced GPU model with its tiers, a
connected cluster, and funded members of a group, written through the real services."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from gshare.capacity import service, tiers
from gshare.capacity.models import GpuModel, GpuTier
from gshare.clusters.models import Cluster
from gshare.credits import operations
from gshare.credits import repository as credits
from gshare.credits.amounts import MICRO
from gshare.identity.models import Membership, User


async def priced_model(
    db: AsyncSession, name: str, memory_mib: int, now: datetime
) -> dict[str, GpuTier]:
    """A model priced at 8 credits an hour with its 1/8, 1/4, 1/2 and exclusive tiers, by
    tier name."""
    model = GpuModel(
        id=uuid.uuid4(),
        name=name,
        memory_mib=memory_mib,
        split_count=8,
        exclusive_price=8 * MICRO,
        created_at=now,
    )
    db.add(model)
    await db.flush()
    wanted = [tiers.fraction(8), tiers.fraction(4), tiers.fraction(2), tiers.exclusive()]
    decision = tiers.tier_set(service.card_model(model), wanted)
    assert isinstance(decision, tiers.TierSetAccepted), decision
    made: dict[str, GpuTier] = {}
    for built in decision.tiers:
        row = service.tier_row(model.id, built, now)
        db.add(row)
        made[row.name] = row
    await db.flush()
    return made


def connected_cluster(name: str, now: datetime) -> Cluster:
    return Cluster(
        id=uuid.uuid4(),
        name=name,
        api_server="https://127.0.0.1:1",
        status="connected",
        status_message="",
        inventory_sequence=0,
        created_at=now,
    )


async def funded_member(
    db: AsyncSession,
    group_id: uuid.UUID,
    group_wallet: uuid.UUID,
    email: str,
    name: str,
    now: datetime,
) -> tuple[uuid.UUID, uuid.UUID]:
    """A member of the group with a million credits moved from the group's wallet: the user's
    id and wallet."""
    user = User(
        id=uuid.uuid4(),
        email=email,
        name=name,
        password_hash="-",
        must_change_password=False,
        created_at=now,
        password_changed_at=now,
    )
    db.add(user)
    await db.flush()
    db.add(Membership(user_id=user.id, group_id=group_id, role="member", created_at=now))
    wallet = await credits.account_id(db, "user", user.id, now)
    await operations.move(
        db, from_id=group_wallet, to_id=wallet, amount=10**6 * MICRO, kind="allocation", now=now
    )
    return user.id, wallet
