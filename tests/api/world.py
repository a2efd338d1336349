"""One world for tests that try every role: organization A with groups A1 and A2,
organization B with group B1, one signed-in user per role, and the ids paths refer to."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx

from gshare.capacity.models import Booking
from gshare.credits.repository import account_id
from tests.builders import Builder
from tests.capacity.builders import A100, priced_model

ROLES = (
    "super_admin",
    "org_admin_a",
    "org_admin_b",
    "group_admin_a1",
    "member_a1",
    "guest_a1",
    "expired_guest_a1",
    "member_b1",
    "outsider",
)


@dataclass
class World:
    ids: dict[str, str]
    clients: dict[str, httpx.AsyncClient]
    anonymous: httpx.AsyncClient


async def build_world(build: Builder) -> World:
    org_a, org_b = await build.org("Org A"), await build.org("Org B")
    a1, a2 = await build.group(org_a, "Group A1"), await build.group(org_a, "Group A2")
    b1 = await build.group(org_b, "Group B1")
    users = {role: await build.user(role.replace("_", " ").title()) for role in ROLES}
    users["super_admin"].is_super_admin = True
    async with build.sessions() as db, db.begin():
        await db.merge(users["super_admin"])
    await build.org_admin(users["org_admin_a"], org_a)
    await build.org_admin(users["org_admin_b"], org_b)
    await build.group_admin(users["group_admin_a1"], a1)
    await build.member(users["member_a1"], a1)
    await build.member(users["guest_a1"], a1, "guest", build.clock.now() + timedelta(days=30))
    await build.member(
        users["expired_guest_a1"], a1, "guest", build.clock.now() - timedelta(days=1)
    )
    await build.member(users["member_b1"], b1)
    target = await build.user("Target Person")
    await build.member(target, a1)
    second_org_admin = await build.user("Second Org Admin")
    await build.org_admin(second_org_admin, org_a)
    second_group_admin = await build.user("Second Group Admin")
    await build.group_admin(second_group_admin, a1)
    ids = {
        "A": str(org_a.id),
        "B": str(org_b.id),
        "A1": str(a1.id),
        "A2": str(a2.id),
        "B1": str(b1.id),
        "target": str(target.id),
        "second_org_admin": str(second_org_admin.id),
        "second_group_admin": str(second_group_admin.id),
        "no_cluster": str(uuid.uuid4()),
        "no_session": str(uuid.uuid4()),
        "no_card": str(uuid.uuid4()),
        "no_model": str(uuid.uuid4()),
        "no_tier": str(uuid.uuid4()),
        "no_request": str(uuid.uuid4()),
        "no_drain": str(uuid.uuid4()),
    }
    async with build.sessions() as db, db.begin():
        _, tiers = await priced_model(db, build.clock.now())
        starts = build.clock.now() + timedelta(days=18)
        booking = Booking(
            id=uuid.uuid4(),
            group_id=a1.id,
            org_id=org_a.id,
            tier_id=tiers["exclusive"].id,
            model=A100,
            count=1,
            starts_at=starts,
            ends_at=starts + timedelta(hours=2),
            title="Group A1's class",
            notice_minutes=2,
            status="active",
            created_at=build.clock.now(),
            updated_at=build.clock.now(),
        )
        db.add(booking)
        ids["A1_booking"] = str(booking.id)
        ids["exclusive_tier"] = str(tiers["exclusive"].id)
        ids["model"] = A100
        ids["booked_at"] = f"{starts:%Y-%m-%dT%H:%M:%SZ}"
        ids["booked_until"] = f"{starts + timedelta(days=1):%Y-%m-%dT%H:%M:%SZ}"
        for key, kind, owner in (
            ("A_wallet", "org", org_a.id),
            ("A1_wallet", "group", a1.id),
            ("target_wallet", "user", target.id),
        ):
            ids[key] = str(await account_id(db, kind, owner, build.clock.now()))
    clients = {role: await build.signed_in(user) for role, user in users.items()}
    return World(ids, clients, build.anonymous())


def fill(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.format(**ids)
    if isinstance(value, dict):
        return {k: fill(v, ids) for k, v in value.items()}
    return value
