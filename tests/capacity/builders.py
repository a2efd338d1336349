"""Builders for capacity tests: a connected cluster with cards, a priced GPU model with tiers,
and funded members to admit sessions for. Everything is written as real rows through the real
services, on the real PostgreSQL."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.capacity import admission, repository, service, tiers
from gshare.capacity.models import AdmissionRequest, Allocation, GpuCard, GpuModel, GpuTier
from gshare.capacity.schemas import InventoryReport
from gshare.clusters.models import Cluster
from gshare.credits import repository as credits
from gshare.credits.amounts import MICRO
from gshare.identity.models import User
from gshare.identity.permissions import Actor
from gshare.kit.settings import Settings
from tests.credits.builders import Wallets, funded_wallets

A100 = "NVIDIA-A100-SXM4-80GB"
A100_MIB = 81920


@dataclass
class Card:
    uuid: str
    node: str = "gpu-node-0"
    model: str = A100
    memory_mib: int = A100_MIB
    split_count: int = 8
    healthy: bool = True


def cards(n: int, *, per_node: int = 8, **kw: object) -> list[Card]:
    return [Card(f"GPU-{i:05d}", f"gpu-node-{i // per_node}", **kw) for i in range(n)]  # type: ignore[arg-type]


def report(sequence: int, reported: list[Card]) -> InventoryReport:
    nodes: dict[str, list[dict[str, object]]] = {}
    for c in reported:
        nodes.setdefault(c.node, []).append(
            {
                "uuid": c.uuid,
                "model": c.model,
                "memory_mib": c.memory_mib,
                "cores": 100,
                "split_count": c.split_count,
                "numa": 0,
                "healthy": c.healthy,
            }
        )
    return InventoryReport.model_validate(
        {"sequence": sequence, "nodes": [{"name": n, "cards": cs} for n, cs in nodes.items()]}
    )


async def add_cluster(db: AsyncSession, now: datetime, name: str | None = None) -> uuid.UUID:
    cluster = Cluster(
        id=uuid.uuid4(),
        name=name or f"lab-{uuid.uuid4().hex[:8]}",
        api_server="https://127.0.0.1:1",
        status="connected",
        status_message="",
        inventory_sequence=0,
        created_at=now,
    )
    db.add(cluster)
    await db.flush()
    return cluster.id


async def apply(
    sessions: async_sessionmaker[AsyncSession],
    cluster_id: uuid.UUID,
    sequence: int,
    reported: list[Card],
    now: datetime,
) -> bool:
    async with sessions() as db, db.begin():
        return await service.apply_inventory(db, cluster_id, report(sequence, reported), now)


async def priced_model(
    db: AsyncSession,
    now: datetime,
    *,
    name: str = A100,
    memory_mib: int = A100_MIB,
    split_count: int = 8,
    exclusive_price: int = 8 * MICRO,
    specs: list[tiers.TierSpec] | None = None,
) -> tuple[GpuModel, dict[str, GpuTier]]:
    """A model with tiers (by default 1/8, 1/4, 1/2 and exclusive), keyed by tier name."""
    model = GpuModel(
        id=uuid.uuid4(),
        name=name,
        memory_mib=memory_mib,
        split_count=split_count,
        exclusive_price=exclusive_price,
        created_at=now,
    )
    db.add(model)
    await db.flush()
    wanted = specs or [tiers.fraction(8), tiers.fraction(4), tiers.fraction(2), tiers.exclusive()]
    decision = tiers.tier_set(service.card_model(model), wanted)
    assert isinstance(decision, tiers.TierSetAccepted), decision
    made: dict[str, GpuTier] = {}
    for built in decision.tiers:
        row = service.tier_row(model.id, built, now)
        db.add(row)
        made[row.name] = row
    await db.flush()
    return model, made


@dataclass
class CapacityWorld:
    cluster_id: uuid.UUID
    model: GpuModel
    tiers: dict[str, GpuTier]
    wallets: Wallets
    group_id: uuid.UUID
    user_ids: list[uuid.UUID]
    settings: Settings = field(default_factory=lambda: Settings(_env_file=None))  # type: ignore[call-arg]

    def ask(
        self, user: int, tier: str | None, *, request_id: uuid.UUID | None = None
    ) -> admission.Ask:
        return admission.Ask(
            request_id or uuid.uuid4(),
            self.user_ids[user],
            self.group_id,
            self.tiers[tier].id if tier else None,
        )


async def capacity_world(
    sessions: async_sessionmaker[AsyncSession],
    now: datetime,
    *,
    n_cards: int = 4,
    users: int = 2,
    user_credits: int = 100,
    specs: list[tiers.TierSpec] | None = None,
) -> CapacityWorld:
    """A connected cluster of `n_cards` A100-80GB cards, the model priced with tiers, and
    `users` members of one group with `user_credits` credits each."""
    wallets = await funded_wallets(
        sessions,
        now,
        users=users,
        org_credits=max(1000, users * user_credits * 2),
        group_credits=max(500, users * user_credits),
        user_credits=user_credits,
    )
    async with sessions() as db, db.begin():
        cluster_id = await add_cluster(db, now)
        model, made = await priced_model(db, now, specs=specs)
        owners = {}
        for wallet_id in [wallets.group, *wallets.users]:
            wallet = await credits.wallet(db, wallet_id)
            assert wallet is not None
            assert wallet.owner_id is not None
            owners[wallet_id] = wallet.owner_id
    await apply(sessions, cluster_id, 1, cards(n_cards), now)
    people = [owners[w] for w in wallets.users]
    return CapacityWorld(cluster_id, model, made, wallets, owners[wallets.group], people)


async def admit(
    sessions: async_sessionmaker[AsyncSession],
    ask: admission.Ask,
    now: datetime,
    settings: Settings,
) -> admission.Outcome:
    async with sessions() as db, db.begin():
        return await admission.admit(db, ask, now, settings)


async def release(
    sessions: async_sessionmaker[AsyncSession],
    request_id: uuid.UUID,
    now: datetime,
    *,
    used: int | None = None,
) -> Allocation | None:
    async with sessions() as db, db.begin():
        return await admission.release(db, request_id, now, reason="stopped", used=used)


async def dequeue(
    sessions: async_sessionmaker[AsyncSession], now: datetime, settings: Settings
) -> admission.DequeueSummary:
    async with sessions() as db, db.begin():
        return await admission.dequeue(db, now, settings)


async def super_admin(sessions: async_sessionmaker[AsyncSession], now: datetime) -> Actor:
    """A super-admin with a real user row (audit entries name it)."""
    user = User(
        id=uuid.uuid4(),
        email=f"root-{uuid.uuid4().hex[:8]}@example.org",
        name="Root",
        password_hash="-",
        must_change_password=False,
        is_super_admin=True,
        created_at=now,
        password_changed_at=now,
    )
    async with sessions() as db, db.begin():
        db.add(user)
    return Actor(user.id, user.email, is_super_admin=True)


async def card_rows(
    sessions: async_sessionmaker[AsyncSession], cluster_id: uuid.UUID
) -> dict[str, GpuCard]:
    """The cluster's cards by their reported uuid."""
    async with sessions() as db:
        return {c.uuid: c for c in await repository.cards_of(db, cluster_id)}


async def set_policy(
    sessions: async_sessionmaker[AsyncSession],
    now: datetime,
    kind: str,
    scope_id: uuid.UUID | None,
    values: dict[str, object],
) -> None:
    async with sessions() as db, db.begin():
        await repository.put_policy(db, kind, scope_id, values, now, None, uuid.uuid4())


async def request_row(
    sessions: async_sessionmaker[AsyncSession], request_id: uuid.UUID
) -> AdmissionRequest:
    async with sessions() as db:
        found = await repository.request(db, request_id)
    assert found is not None
    return found


async def allocations_of(
    sessions: async_sessionmaker[AsyncSession], request_id: uuid.UUID
) -> list[Allocation]:
    """Every allocation row a request ever had, released ones too."""
    async with sessions() as db:
        return list(await db.scalars(select(Allocation).where(Allocation.request_id == request_id)))


@dataclass
class Members:
    group_id: uuid.UUID
    user_ids: list[uuid.UUID]
    wallets: Wallets

    def ask(self, world: CapacityWorld, user: int, tier: str) -> admission.Ask:
        return admission.Ask(uuid.uuid4(), self.user_ids[user], self.group_id, world.tiers[tier].id)


async def another_group(
    sessions: async_sessionmaker[AsyncSession],
    now: datetime,
    *,
    users: int = 1,
    user_credits: int = 100,
) -> Members:
    """Funded members of a group of their own (in an organization of its own)."""
    wallets = await funded_wallets(
        sessions,
        now,
        users=users,
        org_credits=max(1000, users * user_credits * 2),
        group_credits=max(500, users * user_credits),
        user_credits=user_credits,
    )
    async with sessions() as db:
        owners = []
        for wallet_id in [wallets.group, *wallets.users]:
            wallet = await credits.wallet(db, wallet_id)
            assert wallet is not None
            assert wallet.owner_id is not None
            owners.append(wallet.owner_id)
    return Members(owners[0], owners[1:], wallets)
