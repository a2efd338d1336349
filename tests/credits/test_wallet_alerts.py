"""Wallet alerts on the real database, through the API and the worker's check: who may set
one, bad input refused, each crossing told once (also when two checks run at once), armed
again once the wallet is back above, and a group's alert told to its admins."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import httpx
from sqlalchemy import select

from gshare.credits import operations, repository
from gshare.credits.amounts import MICRO
from gshare.credits.tasks import LOW_BALANCE, RUNWAY_SHORT, check_alerts
from gshare.events.models import Notification
from tests.builders import Builder
from tests.credits.test_api import Tenant, _tenant

MINT = "/api/v1/credits/mint"


async def _funded(build: Builder, t: Tenant, member_credits: int) -> dict[str, uuid.UUID]:
    now = build.clock.now()
    async with build.sessions() as db, db.begin():
        org = await repository.account_id(db, "org", t.org.id, now)
        group = await repository.account_id(db, "group", t.group.id, now)
        member = await repository.account_id(db, "user", t.member.id, now)
        await operations.mint(db, wallet_id=org, amount=1000 * MICRO, now=now)
        await operations.move(
            db, from_id=org, to_id=group, amount=500 * MICRO, kind="allocation", now=now
        )
        await operations.move(
            db,
            from_id=group,
            to_id=member,
            amount=member_credits * MICRO,
            kind="allocation",
            now=now,
        )
    return {"org": org, "group": group, "member": member}


async def _told(build: Builder, user_id: uuid.UUID, kind: str) -> list[Notification]:
    async with build.sessions() as db:
        query = select(Notification).where(
            Notification.user_id == user_id, Notification.kind == kind
        )
        return list(await db.scalars(query))


async def _put(client: httpx.AsyncClient, wallet: uuid.UUID, body: dict) -> httpx.Response:  # type: ignore[type-arg]
    return await client.put(f"/api/v1/wallets/{wallet}/alert", json=body)


async def test_a_low_balance_is_told_once_and_again_only_after_it_was_back_above(
    build: Builder,
) -> None:
    t = await _tenant(build)
    wallets = await _funded(build, t, member_credits=100)
    member = await build.signed_in(t.member)
    empty = await member.get(f"/api/v1/wallets/{wallets['member']}/alert")
    assert empty.status_code == 200
    assert empty.json()["below"] is None
    assert empty.json()["set_at"] is None
    assert (await _put(member, wallets["member"], {"below": "150"})).status_code == 200

    sessions, now = build.sessions, build.clock.now()
    # Two checks at once tell once.
    await asyncio.gather(check_alerts(sessions, now), check_alerts(sessions, now))
    await check_alerts(sessions, now + timedelta(minutes=1))
    (told,) = await _told(build, t.member.id, LOW_BALANCE)
    assert "150" in told.title
    assert told.data["balance"] == "100"
    shown = (await member.get(f"/api/v1/wallets/{wallets['member']}/alert")).json()
    assert shown["below_told_at"] is not None

    # Back above: armed again, and told again at the next crossing.
    async with sessions() as db, db.begin():
        await operations.move(
            db,
            from_id=wallets["group"],
            to_id=wallets["member"],
            amount=100 * MICRO,
            kind="allocation",
            now=now,
        )
    await check_alerts(sessions, now + timedelta(minutes=2))
    rearmed = (await member.get(f"/api/v1/wallets/{wallets['member']}/alert")).json()
    assert rearmed["below_told_at"] is None
    async with sessions() as db, db.begin():
        await operations.move(
            db,
            from_id=wallets["member"],
            to_id=wallets["group"],
            amount=60 * MICRO,
            kind="return",
            now=now,
        )
    await check_alerts(sessions, now + timedelta(minutes=3))
    assert len(await _told(build, t.member.id, LOW_BALANCE)) == 2


async def test_a_short_runway_is_told_at_the_rate_billed_now(build: Builder) -> None:
    t = await _tenant(build)
    wallets = await _funded(build, t, member_credits=100)
    member = await build.signed_in(t.member)
    answer = await _put(member, wallets["member"], {"runway_hours": 10})
    assert answer.status_code == 200, answer.text
    assert answer.json()["runway_now_hours"] is None  # nothing billed
    await check_alerts(build.sessions, build.clock.now())
    assert await _told(build, t.member.id, RUNWAY_SHORT) == []
    async with build.sessions() as db, db.begin():
        await operations.place_hold(
            db,
            wallet_id=wallets["member"],
            session_id=uuid.uuid4(),
            rate_per_hour=20 * MICRO,
            window_seconds=600,
            now=build.clock.now(),
        )
    shown = (await member.get(f"/api/v1/wallets/{wallets['member']}/alert")).json()
    assert shown["runway_now_hours"] == 5.0
    await check_alerts(build.sessions, build.clock.now())
    (told,) = await _told(build, t.member.id, RUNWAY_SHORT)
    assert "5.0" in told.title
    assert told.data["burn_per_hour"] == "20"


async def test_a_groups_alert_is_told_to_its_admins_and_set_by_them_only(build: Builder) -> None:
    t = await _tenant(build)
    wallets = await _funded(build, t, member_credits=100)
    member, lead = await build.signed_in(t.member), await build.signed_in(t.lead)
    refused = await _put(member, wallets["group"], {"below": "500"})
    assert refused.status_code == 403
    assert (await _put(lead, wallets["group"], {"below": "500"})).status_code == 200
    no_runway = await _put(lead, wallets["group"], {"runway_hours": 5})
    assert no_runway.status_code == 400
    assert no_runway.json()["error"]["code"] == "runway_not_billed"
    await check_alerts(build.sessions, build.clock.now())
    assert len(await _told(build, t.lead.id, LOW_BALANCE)) == 1
    assert await _told(build, t.member.id, LOW_BALANCE) == []
    # Removing it: nothing more is told, and reading it says none is set.
    assert (await _put(lead, wallets["group"], {})).json()["set_at"] is None


async def test_bad_thresholds_are_refused_and_other_tenants_wallets_are_out_of_reach(
    build: Builder,
) -> None:
    t = await _tenant(build)
    wallets = await _funded(build, t, member_credits=100)
    member = await build.signed_in(t.member)
    for body, status in (
        ({"below": "-1"}, 400),
        ({"below": "abc"}, 400),
        ({"below": "1.0000001"}, 400),
        ({"below": "9" * 39}, 400),
        ({"below": "1\x00"}, 422),
        ({"below": "1" * 41}, 422),
        ({"runway_hours": 0}, 422),
        ({"runway_hours": 24 * 367}, 422),
        ({"runway_hours": "many"}, 422),
        ({"runway_hours": True}, 422),
        ({"runway_hours": "5"}, 422),
        ({"runway_hours": 1.5}, 422),
    ):
        answer = await _put(member, wallets["member"], body)
        assert answer.status_code == status, (body, answer.text)
    assert (await member.get(f"/api/v1/wallets/{wallets['member']}/alert")).json()["set_at"] is None
    stranger = await build.signed_in(await build.user("Stranger"))
    assert (await _put(stranger, wallets["member"], {"below": "1"})).status_code == 403
    assert (await stranger.get(f"/api/v1/wallets/{wallets['member']}/alert")).status_code == 403
    assert (await _put(stranger, uuid.uuid4(), {"below": "1"})).status_code == 404
    assert (
        await build.anonymous().get(f"/api/v1/wallets/{wallets['member']}/alert")
    ).status_code == 401
    # The same request twice at once leaves one alert.
    both = await asyncio.gather(
        _put(member, wallets["member"], {"below": "7"}),
        _put(member, wallets["member"], {"below": "7"}),
    )
    assert [a.status_code for a in both] == [200, 200]


async def test_only_the_owner_and_the_admins_of_their_own_groups_keep_a_personal_alert(
    build: Builder,
) -> None:
    """A guest membership, current or expired, gives the host's admins no say over the guest's
    wallet alert; the owner's own group's admin may set it, and the owner is told."""
    t = await _tenant(build)
    wallets = await _funded(build, t, member_credits=100)
    other_org = await build.org("Elsewhere")
    host = await build.group(other_org, "Host")
    host_admin, host_org_admin = await build.user("Host Admin"), await build.user("Host Org")
    await build.group_admin(host_admin, host)
    await build.org_admin(host_org_admin, other_org)
    await build.member(
        t.member, host, role="guest", expires_at=build.clock.now() + timedelta(days=3)
    )
    for outsider in (host_admin, host_org_admin):
        client = await build.signed_in(outsider)
        assert (await _put(client, wallets["member"], {"below": "99999"})).status_code == 403
        assert (await _put(client, wallets["member"], {})).status_code == 403
    lead = await build.signed_in(t.lead)
    assert (await _put(lead, wallets["member"], {"below": "30"})).status_code == 200
    (told,) = await _told(build, t.member.id, "wallet.alert_changed")
    assert told.body == f"{t.lead.email} set it to: below 30 credits."
    member = await build.signed_in(t.member)
    assert (await _put(member, wallets["member"], {"below": "40"})).status_code == 200
    assert len(await _told(build, t.member.id, "wallet.alert_changed")) == 1
