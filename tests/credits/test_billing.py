"""A session is always billed to the requester's own personal wallet."""

from __future__ import annotations

import uuid

import pytest

from gshare.credits import operations, repository, service
from gshare.credits.amounts import MICRO
from gshare.identity.authz import Context
from gshare.identity.permissions import Actor
from gshare.kit.errors import Forbidden
from tests.builders import Builder


async def test_no_one_can_bill_another_wallet(build: Builder, sessions) -> None:
    alice, bob = await build.user("Alice"), await build.user("Bob")
    org = await build.org()
    group = await build.group(org)
    now = build.clock.now()
    async with sessions() as db, db.begin():
        org_w = await repository.account_id(db, "org", org.id, now)
        group_w = await repository.account_id(db, "group", group.id, now)
        alice_w = await repository.account_id(db, "user", alice.id, now)
        bob_w = await repository.account_id(db, "user", bob.id, now)
        await operations.mint(db, wallet_id=org_w, amount=100 * MICRO, now=now)
        await operations.move(
            db, from_id=org_w, to_id=group_w, amount=50 * MICRO, kind="allocation", now=now
        )
        for wallet in (alice_w, bob_w):
            await operations.move(
                db,
                from_id=group_w,
                to_id=wallet,
                amount=10 * MICRO,
                kind="allocation",
                now=now,
            )

    async with sessions() as db, db.begin():
        ctx = Context(db=db, actor=Actor(user_id=alice.id, email=alice.email), now=now)
        for other in (bob_w, group_w, org_w):
            with pytest.raises(Forbidden) as refused:
                await service.hold_for_session(
                    ctx,
                    session_id=uuid.uuid4(),
                    rate_per_hour=MICRO,
                    window_seconds=3600,
                    wallet_id=other,
                )
            assert refused.value.code == "billing_other_wallet"
        hold = await service.hold_for_session(
            ctx, session_id=uuid.uuid4(), rate_per_hour=MICRO, window_seconds=3600
        )
        assert hold.account_id == alice_w
        same = await service.hold_for_session(
            ctx,
            session_id=uuid.uuid4(),
            rate_per_hour=MICRO,
            window_seconds=3600,
            wallet_id=alice_w,
        )
        assert same.account_id == alice_w


async def test_a_session_names_only_a_group_its_owner_is_in(build: Builder, sessions) -> None:
    alice = await build.user("Alice")
    org = await build.org()
    mine, other = await build.group(org, "Mine"), await build.group(org, "Other")
    await build.member(alice, mine)
    now = build.clock.now()
    async with sessions() as db, db.begin():
        org_w = await repository.account_id(db, "org", org.id, now)
        mine_w = await repository.account_id(db, "group", mine.id, now)
        alice_w = await repository.account_id(db, "user", alice.id, now)
        await operations.mint(db, wallet_id=org_w, amount=10 * MICRO, now=now)
        await operations.move(
            db, from_id=org_w, to_id=mine_w, amount=5 * MICRO, kind="allocation", now=now
        )
        await operations.move(
            db, from_id=mine_w, to_id=alice_w, amount=5 * MICRO, kind="allocation", now=now
        )
    async with sessions() as db, db.begin():
        actor = Actor(user_id=alice.id, email=alice.email, member_of={mine.id: org.id})
        ctx = Context(db=db, actor=actor, now=now)
        with pytest.raises(Forbidden) as refused:
            await service.hold_for_session(
                ctx,
                session_id=uuid.uuid4(),
                rate_per_hour=MICRO,
                window_seconds=3600,
                for_group_id=other.id,
            )
        assert refused.value.code == "not_in_group"
        hold = await service.hold_for_session(
            ctx,
            session_id=uuid.uuid4(),
            rate_per_hour=MICRO,
            window_seconds=3600,
            for_group_id=mine.id,
        )
        assert hold.for_group_wallet_id == mine_w
