"""Ledger builders: wallets funded through the real operations, and the invariant check."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.credits import invariants, operations, repository
from gshare.credits.amounts import MICRO
from gshare.identity.models import Group, Membership, Organization, User
from tests.builders import Builder

MINT = "/api/v1/credits/mint"
TRANSFERS = "/api/v1/credits/transfers"


@dataclass
class Wallets:
    org: uuid.UUID
    group: uuid.UUID
    users: list[uuid.UUID]


async def tenancy(
    db: AsyncSession, now: datetime, *, groups: int, members: int
) -> tuple[uuid.UUID, list[tuple[uuid.UUID, list[uuid.UUID]]]]:
    """An organization with `groups` groups of `members` members each, as real rows (refills
    pay a grant only while its payer still applies). Returns the ids."""
    org = Organization(id=uuid.uuid4(), name=f"Org {uuid.uuid4().hex[:8]}", created_at=now)
    db.add(org)
    await db.flush()
    made = []
    for g in range(groups):
        group = Group(id=uuid.uuid4(), org_id=org.id, name=f"Group {g}", created_at=now)
        db.add(group)
        await db.flush()
        user_ids = []
        for _ in range(members):
            user = User(
                id=uuid.uuid4(),
                email=f"{uuid.uuid4().hex}@example.org",
                name="Member",
                password_hash="-",
                must_change_password=False,
                created_at=now,
                password_changed_at=now,
            )
            db.add(user)
            await db.flush()
            db.add(Membership(user_id=user.id, group_id=group.id, role="member", created_at=now))
            user_ids.append(user.id)
        made.append((group.id, user_ids))
    await db.flush()
    return org.id, made


async def funded_wallets(
    sessions: async_sessionmaker[AsyncSession],
    now: datetime,
    *,
    users: int = 1,
    org_credits: int = 1000,
    group_credits: int = 500,
    user_credits: int = 100,
) -> Wallets:
    """The wallets of an org, one group and `users` members, funded top-down with the real
    operations."""
    async with sessions() as db, db.begin():
        org_id, [(group_id, user_ids)] = await tenancy(db, now, groups=1, members=users)
        org = await repository.account_id(db, "org", org_id, now)
        group = await repository.account_id(db, "group", group_id, now)
        people = [await repository.account_id(db, "user", u, now) for u in user_ids]
        if org_credits:
            await operations.mint(db, wallet_id=org, amount=org_credits * MICRO, now=now)
        if group_credits:
            await operations.move(
                db,
                from_id=org,
                to_id=group,
                amount=group_credits * MICRO,
                kind="allocation",
                now=now,
            )
        for person in people:
            if user_credits:
                await operations.move(
                    db,
                    from_id=group,
                    to_id=person,
                    amount=user_credits * MICRO,
                    kind="allocation",
                    now=now,
                )
    return Wallets(org, group, people)


async def assert_ledger_clean(sessions: async_sessionmaker[AsyncSession]) -> invariants.Report:
    async with sessions() as db:
        report = await invariants.check(db)
    assert report.violations == [], report.violations
    return report


async def grants(
    sessions: async_sessionmaker[AsyncSession], w: Wallets, *, org: int, group: int, user: int
) -> None:
    """Monthly grants down the tree: the org minted, the group paid by the org, users by the
    group (amounts in whole credits)."""
    async with sessions() as db, db.begin():
        await operations.set_monthly_grant(
            db, wallet_id=w.org, amount=org * MICRO, funding_wallet_id=None
        )
        await operations.set_monthly_grant(
            db, wallet_id=w.group, amount=group * MICRO, funding_wallet_id=w.org
        )
        for person in w.users:
            await operations.set_monthly_grant(
                db, wallet_id=person, amount=user * MICRO, funding_wallet_id=w.group
            )


@dataclass
class TwoOrgs:
    """Uma is a member of Optics (in Physics) and of Botany (in Biology); each group gave her
    10 credits. Pia administers Optics only, Bea Botany only."""

    root: httpx.AsyncClient
    pia: httpx.AsyncClient
    bea: httpx.AsyncClient
    physics: Organization
    biology: Organization
    optics: Group
    botany: Group
    uma: User
    optics_wallet: str
    botany_wallet: str
    uma_wallet: str


async def wallet_via_api(client: httpx.AsyncClient, path: str) -> dict:
    response = await client.get(path)
    assert response.status_code == 200, response.text
    return response.json()


async def move_via_api(
    client: httpx.AsyncClient, source: str, target: str, amount: str
) -> httpx.Response:
    return await client.post(
        TRANSFERS, json={"from_wallet_id": source, "to_wallet_id": target, "amount": amount}
    )


async def two_orgs(build: Builder) -> TwoOrgs:
    root_user = await build.user("Root", super_admin=True)
    physics, biology = await build.org("Physics"), await build.org("Biology")
    optics, botany = await build.group(physics, "Optics"), await build.group(biology, "Botany")
    uma = await build.user("Uma Both")
    await build.member(uma, optics)
    await build.member(uma, botany)
    pia, bea = await build.user("Pia Lead"), await build.user("Bea Lead")
    await build.group_admin(pia, optics)
    await build.group_admin(bea, botany)
    root = await build.signed_in(root_user)
    wallets = {}
    for org, group in ((physics, optics), (biology, botany)):
        assert (await root.post(MINT, json={"org_id": str(org.id), "amount": "100"})).is_success
        org_wallet = await wallet_via_api(root, f"/api/v1/orgs/{org.id}/wallet")
        group_wallet = await wallet_via_api(root, f"/api/v1/groups/{group.id}/wallet")
        assert (await move_via_api(root, org_wallet["id"], group_wallet["id"], "50")).is_success
        wallets[group.id] = group_wallet["id"]
    uma_wallet = (await wallet_via_api(root, f"/api/v1/users/{uma.id}/wallet"))["id"]
    pia_c, bea_c = await build.signed_in(pia), await build.signed_in(bea)
    assert (await move_via_api(pia_c, wallets[optics.id], uma_wallet, "10")).is_success
    assert (await move_via_api(bea_c, wallets[botany.id], uma_wallet, "10")).is_success
    return TwoOrgs(
        root,
        pia_c,
        bea_c,
        physics,
        biology,
        optics,
        botany,
        uma,
        wallets[optics.id],
        wallets[botany.id],
        uma_wallet,
    )
