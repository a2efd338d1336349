"""The ledger check knows about sessions now: a hold left open for an ended session is reported."""

from __future__ import annotations

from sqlalchemy import update

from gshare.credits import operations
from gshare.credits.repository import account_id
from gshare.sessions.models import InteractiveSession
from tests.builders import Builder

NAME = "no hold is left open for a session that has ended"


async def test_an_open_hold_of_an_ended_session_is_a_violation(build: Builder) -> None:
    admin = await build.signed_in(await build.user(super_admin=True))
    owner = await build.user()
    org = await build.org()
    live = await build.interactive_session(owner, await build.cluster(), phase="Running")
    ended = await build.interactive_session(owner, None, ended=True)
    now = build.clock.now()
    async with build.sessions() as db, db.begin():
        org_wallet = await account_id(db, "org", org.id, now)
        wallet = await account_id(db, "user", owner.id, now)
        await operations.mint(db, wallet_id=org_wallet, amount=1_000_000, now=now)
        await operations.move(
            db, from_id=org_wallet, to_id=wallet, amount=1_000_000, kind="allocation", now=now
        )
        holds = {
            s.id: await operations.place_hold(
                db,
                wallet_id=wallet,
                session_id=s.id,
                rate_per_hour=1000,
                window_seconds=3600,
                now=now,
            )
            for s in (live, ended)
        }

    report = (await admin.get("/api/v1/credits/check")).json()
    assert report["ok"] is False
    assert NAME not in report["not_checked"]
    assert [(v["invariant"], v["detail"]) for v in report["violations"]] == [(NAME, str(ended.id))]

    async with build.sessions() as db, db.begin():
        await operations.release_hold(db, hold_id=holds[ended.id].id, now=now)
        # The live session ending with its hold still open is caught the same way.
        await db.execute(
            update(InteractiveSession).where(InteractiveSession.id == live.id).values(ended_at=now)
        )
    report = (await admin.get("/api/v1/credits/check")).json()
    assert [v["detail"] for v in report["violations"]] == [str(live.id)]
    async with build.sessions() as db, db.begin():
        await operations.release_hold(db, hold_id=holds[live.id].id, now=now)
    report = (await admin.get("/api/v1/credits/check")).json()
    assert report["ok"] is True, report
