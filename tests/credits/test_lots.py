"""Credits tracked per funder: a take-back reaches only what the taker gave and was not spent,
spending follows one order, moves are audited in every scope they touch, and the ledger check
proves the lots add up."""

from __future__ import annotations

import uuid

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.credits import invariants, operations, repository
from gshare.credits.amounts import MICRO
from tests.builders import Builder
from tests.credits.builders import assert_ledger_clean, move_via_api, two_orgs, wallet_via_api


async def test_a_group_takes_back_only_what_it_gave(
    build: Builder, sessions: async_sessionmaker[AsyncSession]
) -> None:
    t = await two_orgs(build)
    refused = await move_via_api(t.pia, t.uma_wallet, t.optics_wallet, "10.000001")
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["code"] == "take_back_too_large"
    uma = await wallet_via_api(t.root, f"/api/v1/wallets/{t.uma_wallet}")
    assert uma["balance"] == "20"

    assert (await move_via_api(t.pia, t.uma_wallet, t.optics_wallet, "10")).status_code == 201
    again = await move_via_api(t.pia, t.uma_wallet, t.optics_wallet, "0.000001")
    assert again.json()["error"]["code"] == "take_back_too_large"
    # What Botany gave is still Uma's, and Botany can still take it back.
    uma = await wallet_via_api(t.root, f"/api/v1/wallets/{t.uma_wallet}")
    assert uma["balance"] == "10"
    optics, botany = uuid.UUID(t.optics_wallet), uuid.UUID(t.botany_wallet)
    assert await _lots(sessions, uuid.UUID(t.uma_wallet)) == {optics: 0, botany: 10 * MICRO}
    assert (await move_via_api(t.bea, t.uma_wallet, t.botany_wallet, "10")).status_code == 201
    # Credits taken back return to the group's own lot, so its organization can reclaim them.
    physics_wallet = await wallet_via_api(t.root, f"/api/v1/orgs/{t.physics.id}/wallet")
    back = await move_via_api(t.root, t.optics_wallet, physics_wallet["id"], "50")
    assert back.status_code == 201, back.text
    await _clean(t.root)


async def test_a_take_back_is_audited_in_the_scope_whose_credits_moved(build: Builder) -> None:
    t = await two_orgs(build)
    # Taking Optics' credits along with Botany's would move another scope's credits: refused.
    over = await move_via_api(t.bea, t.uma_wallet, t.botany_wallet, "15")
    assert over.status_code == 409, over.text
    assert (await move_via_api(t.bea, t.uma_wallet, t.botany_wallet, "4")).status_code == 201
    entries = (await t.root.get("/api/v1/audit", params={"action": "credits.return"})).json()
    assert [(e["org_id"], e["group_id"]) for e in entries["items"]] == [
        (str(t.biology.id), str(t.botany.id))
    ]
    # Optics' admin sees nothing of it: none of Optics' credits moved.
    seen = (await t.pia.get("/api/v1/audit", params={"action": "credits.return"})).json()
    assert seen["items"] == []
    seen = (await t.bea.get("/api/v1/audit", params={"action": "credits.return"})).json()
    assert len(seen["items"]) == 1


async def test_spending_draws_the_sessions_group_first_then_the_oldest(
    build: Builder, sessions: async_sessionmaker[AsyncSession]
) -> None:
    t = await two_orgs(build)
    uma, optics, botany = (uuid.UUID(w) for w in (t.uma_wallet, t.optics_wallet, t.botany_wallet))
    now = build.clock.now()
    async with sessions() as db, db.begin():
        for_botany = await operations.place_hold(
            db,
            wallet_id=uma,
            session_id=uuid.uuid4(),
            rate_per_hour=12 * MICRO,
            window_seconds=3600,
            now=now,
            for_group_wallet_id=botany,
        )
        await operations.capture(db, hold_id=for_botany.id, amount=4 * MICRO, now=now)
        unnamed = await operations.place_hold(
            db,
            wallet_id=uma,
            session_id=uuid.uuid4(),
            rate_per_hour=3 * MICRO,
            window_seconds=3600,
            now=now,
        )
        await operations.settle_hold(db, hold_id=unnamed.id, used=3 * MICRO, now=now)
        await operations.settle_hold(db, hold_id=for_botany.id, used=7 * MICRO, now=now)
    # Botany's session spent 4 + 7 = 11: Botany's 10 first, then 1 from the oldest (Optics).
    # The unnamed session spent 3 from the oldest lot, Optics'.
    assert await _lots(sessions, uma) == {optics: 6 * MICRO, botany: 0}
    refused = await move_via_api(t.bea, t.uma_wallet, t.botany_wallet, "0.000001")
    assert refused.json()["error"]["code"] == "take_back_too_large"
    assert (await move_via_api(t.pia, t.uma_wallet, t.optics_wallet, "6")).status_code == 201
    await assert_ledger_clean(sessions)


async def test_the_ledger_check_proves_the_lots_add_up(
    build: Builder, sessions: async_sessionmaker[AsyncSession]
) -> None:
    t = await two_orgs(build)
    await _clean(t.root)
    async with sessions() as db, db.begin():
        await db.execute(
            text("UPDATE credit_lots SET amount = amount + 1 WHERE account_id = :w"),
            {"w": uuid.UUID(t.uma_wallet)},
        )
    async with sessions() as db:
        report = await invariants.check(db)
    assert [v.invariant for v in report.violations] == ["every wallet's lots add up to its balance"]
    assert t.uma_wallet in report.violations[0].detail
    check = (await t.root.get("/api/v1/credits/check")).json()
    assert check["ok"] is False


async def _lots(
    sessions: async_sessionmaker[AsyncSession], wallet: uuid.UUID
) -> dict[uuid.UUID, int]:
    async with sessions() as db:
        found = await repository.lots_of(db, [wallet])
    return {lot.funder_id: lot.amount for lot in found[wallet]}


async def _clean(root: httpx.AsyncClient) -> None:
    check = (await root.get("/api/v1/credits/check")).json()
    assert check["ok"] is True, check


async def test_one_organization_does_not_read_the_others_side_of_a_shared_wallet(
    build: Builder,
) -> None:
    t = await two_orgs(build)
    secret = await t.bea.post(
        "/api/v1/credits/transfers",
        json={
            "from_wallet_id": t.botany_wallet,
            "to_wallet_id": t.uma_wallet,
            "amount": "1",
            "memo": "biology's own note",
        },
    )
    assert secret.status_code == 201, secret.text
    seen_by_pia = (await t.pia.get(f"/api/v1/wallets/{t.uma_wallet}/entries")).json()["items"]
    # Botany gave Uma 10 and then 1: Pia sees the amounts, nothing of who, why or from where.
    from_botany = [e for e in seen_by_pia if e["counterparty_name"] != "Optics"]
    assert sorted(e["amount"] for e in from_botany) == ["1", "10"]
    for entry in from_botany:
        assert entry["counterparty_wallet_id"] is None
        assert entry["counterparty_name"] is None
        assert entry["memo"] is None
        assert entry["actor_email"] is None
    ours = [e for e in seen_by_pia if e["counterparty_name"] == "Optics"]
    assert [e["counterparty_wallet_id"] for e in ours] == [t.optics_wallet]
    # The owner and the super admin see both sides in full.
    uma = await build.signed_in(t.uma)
    for reader in (uma, t.root):
        items = (await reader.get(f"/api/v1/wallets/{t.uma_wallet}/entries")).json()["items"]
        assert "biology's own note" in {e["memo"] for e in items}
        assert "Botany" in {e["counterparty_name"] for e in items}
