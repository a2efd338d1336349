"""Notifications: written with the change that causes them, read and marked by their user only."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.credits import operations, repository
from gshare.credits.amounts import MICRO
from tests.builders import PASSWORD, Builder
from tests.credits.builders import move_via_api, two_orgs

NOTES = "/api/v1/notifications"


async def _kinds(client: httpx.AsyncClient) -> list[str]:
    answer = await client.get(NOTES)
    assert answer.status_code == 200, answer.text
    return [n["kind"] for n in answer.json()["items"]]


async def test_credits_received_are_a_notification_only_their_receiver_can_read_and_mark(
    build: Builder, sessions: async_sessionmaker[AsyncSession]
) -> None:
    world = await two_orgs(build)
    uma = await build.signed_in(world.uma)
    intruder = await build.signed_in(await build.user("Ivy"))
    # two_orgs moved 10 credits to Uma from each of her groups.
    listed = (await uma.get(NOTES)).json()["items"]
    assert [n["kind"] for n in listed] == ["credits.received", "credits.received"]
    assert listed[0]["title"] == "You received 10 credits"
    assert listed[0]["read_at"] is None
    assert sorted(n["body"] for n in listed) == ["From Botany.", "From Optics."]
    assert (await uma.get(f"{NOTES}/unread-count")).json() == {"unread": 2}
    assert (await intruder.get(NOTES)).json()["items"] == []

    first = listed[0]["id"]
    assert (await intruder.post(f"{NOTES}/{first}/read")).status_code == 404
    assert (await intruder.post(f"{NOTES}/{uuid.uuid4()}/read")).status_code == 404
    assert (await uma.get(f"{NOTES}/unread-count")).json() == {"unread": 2}
    twice = await asyncio.gather(*(uma.post(f"{NOTES}/{first}/read") for _ in range(2)))
    assert [t.status_code for t in twice] == [200, 200]
    assert twice[0].json()["read_at"] == twice[1].json()["read_at"] is not None
    assert (await uma.post(f"{NOTES}/{first}/read")).status_code == 200
    async with sessions() as db:  # reading again is no news: one event, however many calls
        reads = await db.execute(
            text("SELECT count(*) FROM events WHERE kind = 'notifications.read'")
        )
        assert reads.scalar_one() == 1
    unread = (await uma.get(NOTES, params={"unread_only": True})).json()["items"]
    assert [n["id"] for n in unread] == [listed[1]["id"]]
    assert (await uma.post(f"{NOTES}/read-all")).json() == {"unread": 0}
    assert (await uma.get(f"{NOTES}/unread-count")).json() == {"unread": 0}


async def test_a_refused_transfer_leaves_no_notification(build: Builder) -> None:
    world = await two_orgs(build)
    uma = await build.signed_in(world.uma)
    refused = await move_via_api(world.pia, world.optics_wallet, world.uma_wallet, "1000000")
    assert refused.status_code == 409
    assert await _kinds(uma) == ["credits.received", "credits.received"]


async def test_password_change_and_a_sign_in_from_a_new_client_notify_the_user(
    build: Builder,
) -> None:
    user = await build.user("Nia")
    nia = await build.signed_in(user)
    assert await _kinds(nia) == []  # the first sign-in ever is no news
    again = await build.signed_in(user)
    assert await _kinds(again) == []  # the same address and browser
    elsewhere = build.anonymous(client_ip="192.0.2.44")
    answer = await elsewhere.post(
        "/api/v1/auth/login",
        json={"email": user.email, "password": PASSWORD},
        headers={"User-Agent": "Firefox\x00\x1b[31m" + "x" * 500},
    )
    assert answer.status_code == 200
    [new_sign_in] = (await nia.get(NOTES)).json()["items"]
    assert new_sign_in["kind"] == "account.new_sign_in"
    assert "192.0.2.44" in new_sign_in["body"]
    assert "\x00" not in new_sign_in["body"]
    assert len(new_sign_in["body"]) < 300

    changed = await nia.post(
        "/api/v1/auth/password",
        json={"current_password": PASSWORD, "new_password": "quartz-lantern-meadow-77"},
    )
    assert changed.status_code == 200, changed.text
    nia.headers["X-CSRF-Token"] = changed.json()["csrf_token"]
    assert sorted(await _kinds(nia)) == ["account.new_sign_in", "account.password_changed"]


async def test_a_paid_monthly_grant_notifies_the_member(
    build: Builder, sessions: async_sessionmaker[AsyncSession]
) -> None:
    world = await two_orgs(build)
    build.clock.advance(timedelta(days=1))
    now = build.clock.now()
    async with sessions() as db, db.begin():
        group_wallet = uuid.UUID(world.optics_wallet)
        uma_wallet = uuid.UUID(world.uma_wallet)
        await operations.set_monthly_grant(
            db, wallet_id=uma_wallet, amount=25 * MICRO, funding_wallet_id=group_wallet
        )
        paid = await operations.refill_wallet(db, wallet_id=uma_wallet, period="2026-03", now=now)
        assert paid is not None
        assert paid.amount == 5 * MICRO
        assert (await repository.wallet(db, uma_wallet)) is not None
    uma = await build.signed_in(world.uma)
    [grant, *_] = (await uma.get(NOTES)).json()["items"]
    assert grant["kind"] == "credits.monthly_grant"
    assert grant["title"] == "Your monthly grant of 5 credits was paid"
