"""The live-update stream over real HTTP: who receives what, reconnects, sign-out, lost LISTEN."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

import httpx
from fastapi import FastAPI
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.events.hub import MAX_STREAMS_PER_USER
from tests.builders import Builder
from tests.credits.builders import move_via_api, two_orgs
from tests.events.sse import (
    SENTINEL,
    Message,
    caught_up,
    cookie_of,
    open_stream,
    sentinel,
)


def kinds(messages: list[Message]) -> list[tuple[str, str | None]]:
    return [(m.kind, m.data.get("wallet_id")) for m in messages if m.kind != SENTINEL]


async def test_a_transfer_reaches_its_wallets_readers_and_nobody_else(
    build: Builder, live: str, sessions: async_sessionmaker[AsyncSession]
) -> None:
    world = await two_orgs(build)
    ned = await build.user("Ned Member")
    await build.member(ned, world.optics)
    oda = await build.user("Oda Admin")
    await build.org_admin(oda, world.physics)
    bea_id = (await world.bea.get("/api/v1/me")).json()["user"]["id"]
    streams = {}
    async with (
        open_stream(live, cookie_of(await build.signed_in(world.uma))) as streams["uma"],
        open_stream(live, cookie_of(await build.signed_in(ned))) as streams["ned"],
        open_stream(live, cookie_of(await build.signed_in(oda))) as streams["oda"],
        open_stream(live, cookie_of(world.bea)) as streams["bea"],  # Uma is in Bea's group too
    ):
        moved = await move_via_api(world.pia, world.optics_wallet, world.uma_wallet, "5")
        assert moved.status_code == 201, moved.text
        await sentinel(sessions, world.uma.id, ned.id, oda.id, bea_id)
        seen = {name: kinds(await stream.until(SENTINEL)) for name, stream in streams.items()}

    group_event = ("wallet.changed", world.optics_wallet)
    uma_event = ("wallet.changed", world.uma_wallet)
    assert seen["uma"] == [uma_event, ("notification.created", None)]
    assert seen["ned"] == []  # another member's wallet and the group's are not his to read
    assert seen["oda"] == [group_event, uma_event]  # his organization's group, its member
    assert seen["bea"] == [uma_event]  # Uma is in Bea's group too; Optics' wallet is not hers


async def test_a_reconnect_with_last_event_id_gets_every_missed_event_once_in_order(
    build: Builder, live: str, sessions: async_sessionmaker[AsyncSession]
) -> None:
    world = await two_orgs(build)
    uma = await build.signed_in(world.uma)
    mark = await caught_up(live, cookie_of(uma), sessions, world.uma.id)
    for amount in ("1", "2", "3"):
        moved = await move_via_api(world.pia, world.optics_wallet, world.uma_wallet, amount)
        assert moved.status_code == 201
    await sentinel(sessions, world.uma.id)
    async with open_stream(live, cookie_of(uma), last_event_id=mark) as stream:
        missed = await stream.until(SENTINEL)
    ids = [m.id for m in missed]
    assert ids == sorted(set(ids))
    assert ids[0] > mark
    balances = [m.data["balance"] for m in missed if m.kind == "wallet.changed"]
    assert [float(b) for b in balances] == [21.0, 23.0, 26.0]
    assert [m.kind for m in missed].count("notification.created") == 3


async def test_a_last_event_id_older_than_what_is_kept_answers_reset(
    build: Builder, live: str, sessions: async_sessionmaker[AsyncSession]
) -> None:
    world = await two_orgs(build)
    uma = await build.signed_in(world.uma)
    mark = await caught_up(live, cookie_of(uma), sessions, world.uma.id)
    await move_via_api(world.pia, world.optics_wallet, world.uma_wallet, "1")
    await sentinel(sessions, world.uma.id)
    async with open_stream(live, cookie_of(uma)) as stream:  # wait until both are numbered
        await sentinel(sessions, world.uma.id)
        await stream.until(SENTINEL)
    async with sessions() as db, db.begin():
        await db.execute(text("DELETE FROM events WHERE seq = :seq"), {"seq": mark + 1})
    async with open_stream(live, cookie_of(uma), last_event_id=mark) as stream:
        first = await stream.next()
        assert first is not None
        assert first.kind == "reset"
        await sentinel(sessions, world.uma.id)
        after = await stream.until(SENTINEL)
        assert [m.kind for m in after] == [SENTINEL]  # the live tail goes on after the reset


async def test_a_deactivated_or_signed_out_callers_stream_closes(build: Builder, live: str) -> None:
    root = await build.signed_in(await build.user("Root", super_admin=True))
    ned_user, sam_user = await build.user("Ned"), await build.user("Sam")
    ned, sam = await build.signed_in(ned_user), await build.signed_in(sam_user)
    async with (
        open_stream(live, cookie_of(ned)) as ned_stream,
        open_stream(live, cookie_of(sam)) as sam_stream,
    ):
        answer = await root.patch(f"/api/v1/users/{ned_user.id}", json={"active": False})
        assert answer.status_code == 200, answer.text
        assert await ned_stream.next() is None
        assert (await sam.post("/api/v1/auth/logout")).status_code == 204
        assert await sam_stream.next() is None


async def test_events_still_arrive_after_the_listen_connection_is_killed(
    build: Builder, live: str, app: FastAPI, sessions: async_sessionmaker[AsyncSession]
) -> None:
    world = await two_orgs(build)
    uma = await build.signed_in(world.uma)
    async with open_stream(live, cookie_of(uma)) as stream:
        async with sessions() as db, db.begin():
            killed = await db.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND query LIKE 'LISTEN%'"
                )
            )
            assert killed.all(), "no LISTEN connection found"
        moved = await move_via_api(world.pia, world.optics_wallet, world.uma_wallet, "4")
        assert moved.status_code == 201
        await sentinel(sessions, world.uma.id)
        got = await stream.until(SENTINEL, timeout=20)
    assert ("wallet.changed", world.uma_wallet) in kinds(got)


async def test_the_stream_refuses_anonymous_callers_and_bad_last_event_ids(
    build: Builder, live: str
) -> None:
    uma = await build.signed_in(await build.user("Uma"))
    async with httpx.AsyncClient(base_url=live) as http:
        assert (await http.get("/api/v1/events")).status_code == 401
        cookie = {"Cookie": f"gshare_session={cookie_of(uma)}"}
        for bad in ("-1", "abc", "1" * 30, "٣".encode(), "9" * 20):
            answer = await http.get("/api/v1/events", headers={**cookie, "Last-Event-ID": bad})
            assert answer.status_code in (400, 422), (bad, answer.text)
        answer = await http.get("/api/v1/events", params={"last_event_id": "x\x00"}, headers=cookie)
        assert answer.status_code in (400, 422)


async def test_an_open_stream_keeps_no_sign_in_alive_and_holds_no_transaction(
    build: Builder, live: str, sessions: async_sessionmaker[AsyncSession]
) -> None:
    uma = await build.signed_in(await build.user("Uma"))
    build.clock.advance(timedelta(minutes=20))
    async with open_stream(live, cookie_of(uma)), sessions() as db:
        idle_in_transaction = await db.execute(
            text(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND state = 'idle in transaction'"
            )
        )
        assert idle_in_transaction.scalar_one() == 0
        seen = await db.execute(text("SELECT last_seen_at, created_at FROM login_sessions"))
        last_seen, created = seen.one()
        assert last_seen == created  # an open tab is not activity


async def test_a_client_that_goes_away_frees_its_stream_at_once(
    build: Builder, live: str, app: FastAPI
) -> None:
    uma = await build.signed_in(await build.user("Uma"))
    hub = app.state.events
    async with open_stream(live, cookie_of(uma)):
        async with asyncio.timeout(10):
            while len(hub.subscribers) != 1:
                await asyncio.sleep(0.01)
    async with asyncio.timeout(10):  # long before any heartbeat would find the socket dead
        while hub.subscribers:
            await asyncio.sleep(0.01)


async def test_a_quiet_stream_still_moves_its_last_event_id_past_what_it_may_not_see(
    build: Builder, live: str, app: FastAPI, sessions: async_sessionmaker[AsyncSession]
) -> None:
    uma, other = await build.user("Uma"), await build.user("Other")
    hub = app.state.events
    async with open_stream(live, cookie_of(await build.signed_in(uma))) as stream:
        await sentinel(sessions, other.id, other.id, other.id)  # none of them Uma's
        async with asyncio.timeout(10):
            while hub.last < 3:
                await asyncio.sleep(0.01)
        for subscriber in hub.subscribers:
            subscriber.signal.set()  # the periodic recheck, now
        assert await stream.reaches(hub.last) == []
    # Reconnecting from there replays nothing and needs no reset.
    async with open_stream(live, cookie_of(await build.signed_in(uma)), last_event_id=3) as again:
        await sentinel(sessions, uma.id)
        assert [m.kind for m in await again.until(SENTINEL)] == [SENTINEL]


async def test_one_user_may_hold_only_so_many_streams(build: Builder, live: str) -> None:
    cookie = cookie_of(await build.signed_in(await build.user("Tabs")))
    async with contextlib.AsyncExitStack() as stack:
        for _ in range(MAX_STREAMS_PER_USER):
            await stack.enter_async_context(open_stream(live, cookie))
        async with httpx.AsyncClient(base_url=live) as http:
            refused = await http.get(
                "/api/v1/events", headers={"Cookie": f"gshare_session={cookie}"}
            )
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "too_many_streams"
