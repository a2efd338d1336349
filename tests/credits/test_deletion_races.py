"""Deleting an organization or group while credits move into its wallet: never both."""

from __future__ import annotations

import asyncio

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.credits import invariants
from gshare.credits.repository import account_id
from tests.builders import Builder
from tests.credits.builders import MINT, assert_ledger_clean, move_via_api, wallet_via_api
from tests.eventually import eventually


async def _waiting_on_locks(sessions: async_sessionmaker[AsyncSession], count: int) -> None:
    """Until `count` other backends wait for a lock."""

    async def waiting() -> bool:
        async with sessions() as db:
            found = await db.scalar(
                text(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE wait_event_type = 'Lock' AND datname = current_database()"
                )
            )
        return (found or 0) >= count

    await eventually(waiting, f"{count} requests to wait for the lock", interval=0.02)


async def _race(build: Builder, sessions, root, group, target: str, source: str, first: str):
    """Hold the group wallet's row, queue a deletion and a transfer behind it, release."""
    async with sessions() as holder, holder.begin():
        await holder.execute(
            text("SELECT 1 FROM credit_accounts WHERE id = :id FOR UPDATE"), {"id": target}
        )
        delete = root.delete(f"/api/v1/groups/{group.id}")
        move = move_via_api(root, source, target, "100")
        order = (delete, move) if first == "delete" else (move, delete)
        started = asyncio.gather(*order)
        await _waiting_on_locks(sessions, 2)
    return await started


async def test_a_group_is_never_deleted_with_credits_moved_in_meanwhile(
    build: Builder, sessions
) -> None:
    root_user = await build.user("Root", super_admin=True)
    root = await build.signed_in(root_user)
    org = await build.org("Physics")
    assert (await root.post(MINT, json={"org_id": str(org.id), "amount": "1000"})).is_success
    source = (await wallet_via_api(root, f"/api/v1/orgs/{org.id}/wallet"))["id"]
    for first in ("delete", "move"):
        group = await build.group(org, f"Group {first}")
        async with sessions() as db, db.begin():
            target = str(await account_id(db, "group", group.id, build.clock.now()))
        responses = await _race(build, sessions, root, group, target, source, first)
        by_method = {r.request.method: r for r in responses}
        deleted = by_method["DELETE"].status_code == 204
        moved = by_method["POST"].status_code == 201
        assert deleted != moved, [r.text for r in responses]
        if deleted:
            assert by_method["POST"].json()["error"]["code"] == "wallet_not_found"
        else:
            assert by_method["DELETE"].json()["error"]["code"] == "wallet_not_empty"
            assert (await wallet_via_api(root, f"/api/v1/wallets/{target}"))["balance"] == "100"
    await assert_ledger_clean(sessions)


async def test_the_same_deletion_sent_twice_at_once_happens_once(build: Builder, sessions) -> None:
    root_user = await build.user("Root", super_admin=True)
    root = await build.signed_in(root_user)
    org = await build.org("Physics")
    group = await build.group(org, "Optics")
    async with sessions() as holder, holder.begin():
        await holder.execute(
            text("SELECT 1 FROM groups WHERE id = :id FOR UPDATE"), {"id": str(group.id)}
        )
        both = asyncio.gather(*(root.delete(f"/api/v1/groups/{group.id}") for _ in range(2)))
        await _waiting_on_locks(sessions, 2)
    statuses = sorted(r.status_code for r in await both)
    assert statuses == [204, 404]
    async with sessions() as db:
        audited = await db.scalar(
            text(
                "SELECT count(*) FROM audit_entries "
                "WHERE action = 'group.delete' AND outcome = 'allowed'"
            )
        )
    assert audited == 1


async def test_the_ledger_check_sees_credits_in_a_closed_wallet(build: Builder, sessions) -> None:
    org = await build.org("Physics")
    group = await build.group(org, "Optics")
    async with sessions() as db, db.begin():
        wallet = await account_id(db, "group", group.id, build.clock.now())
        # Only a bug could do this: the table's own check refuses it, so drop that first.
        await db.execute(
            text(
                "ALTER TABLE credit_accounts DROP CONSTRAINT ck_credit_accounts_closed_wallet_empty"
            )
        )
        await db.execute(
            text("UPDATE credit_accounts SET closed_at = now(), balance = 5 WHERE id = :id"),
            {"id": wallet},
        )
    async with sessions() as db:
        report = await invariants.check(db)
    assert "a closed wallet holds nothing" in {v.invariant for v in report.violations}
