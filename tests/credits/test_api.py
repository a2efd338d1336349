"""The credits API on the real database: wallets, minting, transfers, grants, idempotency."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import httpx
from sqlalchemy import text

from gshare.credits import operations, repository
from gshare.identity.models import Group, Organization, User
from tests.builders import Builder

MINT = "/api/v1/credits/mint"
TRANSFERS = "/api/v1/credits/transfers"


@dataclass
class Tenant:
    """Physics (org) > Optics (group), with a super admin, an org admin, a group admin, a member."""

    root: User
    org: Organization
    group: Group
    admin: User
    lead: User
    member: User


async def _tenant(build: Builder) -> Tenant:
    root = await build.user("Root", super_admin=True)
    org = await build.org("Physics")
    group = await build.group(org, "Optics")
    admin = await build.user("Olga Admin")
    await build.org_admin(admin, org)
    lead = await build.user("Gus Lead")
    await build.group_admin(lead, group)
    member = await build.user("Mia Member")
    await build.member(member, group)
    return Tenant(root, org, group, admin, lead, member)


async def _wallet(client: httpx.AsyncClient, path: str) -> dict:
    response = await client.get(path)
    assert response.status_code == 200, response.text
    return response.json()


async def test_credits_flow_down_the_hierarchy_and_back(build: Builder) -> None:
    t = await _tenant(build)
    root = t.root
    org = t.org
    group = t.group
    admin = t.admin
    lead = t.lead
    member = t.member
    root_c = await build.signed_in(root)
    minted = await root_c.post(MINT, json={"org_id": str(org.id), "amount": "1000"})
    assert minted.status_code == 201, minted.text
    org_wallet = minted.json()["to_wallet"]
    assert org_wallet["balance"] == "1000"
    assert minted.json()["from_wallet"] is None

    admin_c = await build.signed_in(admin)
    group_wallet = await _wallet(admin_c, f"/api/v1/groups/{group.id}/wallet")
    moved = await admin_c.post(
        TRANSFERS,
        json={
            "from_wallet_id": org_wallet["id"],
            "to_wallet_id": group_wallet["id"],
            "amount": "250.5",
            "memo": "spring term",
        },
    )
    assert moved.status_code == 201, moved.text
    assert moved.json()["from_wallet"]["available"] == "749.5"
    assert moved.json()["to_wallet"]["balance"] == "250.5"

    lead_c = await build.signed_in(lead)
    member_wallet = await _wallet(lead_c, f"/api/v1/users/{member.id}/wallet")
    give = await lead_c.post(
        TRANSFERS,
        json={
            "from_wallet_id": group_wallet["id"],
            "to_wallet_id": member_wallet["id"],
            "amount": "0.000001",
        },
    )
    assert give.status_code == 201
    back = await lead_c.post(
        TRANSFERS,
        json={
            "from_wallet_id": member_wallet["id"],
            "to_wallet_id": group_wallet["id"],
            "amount": "0.000001",
        },
    )
    assert back.status_code == 201
    assert back.json()["to_wallet"]["balance"] == "250.5"

    member_c = await build.signed_in(member)
    mine = await _wallet(member_c, "/api/v1/wallets/me")
    assert mine["id"] == member_wallet["id"]
    assert (mine["balance"], mine["held"], mine["available"]) == ("0", "0", "0")
    history = (await member_c.get(f"/api/v1/wallets/{mine['id']}/entries")).json()["items"]
    assert [
        (e["kind"], e["amount"], e["balance_after"], e["counterparty_name"]) for e in history
    ] == [
        ("return", "-0.000001", "0", "Optics"),
        ("allocation", "0.000001", "0.000001", "Optics"),
    ]
    check = (await root_c.get("/api/v1/credits/check")).json()
    assert check["ok"] is True, check
    assert check["minted"] == "1000"


async def test_no_level_hands_out_more_than_it_holds(build: Builder) -> None:
    t = await _tenant(build)
    root, org, group, admin = t.root, t.org, t.group, t.admin
    root_c = await build.signed_in(root)
    org_wallet = (await root_c.post(MINT, json={"org_id": str(org.id), "amount": "10"})).json()[
        "to_wallet"
    ]
    admin_c = await build.signed_in(admin)
    group_wallet = await _wallet(admin_c, f"/api/v1/groups/{group.id}/wallet")
    too_much = await admin_c.post(
        TRANSFERS,
        json={
            "from_wallet_id": org_wallet["id"],
            "to_wallet_id": group_wallet["id"],
            "amount": "10.000001",
        },
    )
    assert too_much.status_code == 409
    assert too_much.json()["error"]["code"] == "insufficient_credits"
    assert (await _wallet(admin_c, f"/api/v1/orgs/{org.id}/wallet"))["balance"] == "10"


async def test_bad_amounts_are_refused_clearly(build: Builder) -> None:
    t = await _tenant(build)
    root, org = t.root, t.org
    client = await build.signed_in(root)
    for amount in ("-5", "0", "1.0000001", "abc", "1e3", "NaN", " "):
        response = await client.post(MINT, json={"org_id": str(org.id), "amount": amount})
        assert response.status_code in (400, 422), amount
        assert response.json()["error"]["code"] in ("invalid_amount", "invalid_request"), amount
    assert (await _wallet(client, f"/api/v1/orgs/{org.id}/wallet"))["balance"] == "0"


async def test_transfers_only_between_parent_and_child(build: Builder) -> None:
    t = await _tenant(build)
    root = t.root
    org = t.org
    member = t.member
    client = await build.signed_in(root)
    await client.post(MINT, json={"org_id": str(org.id), "amount": "5"})
    org_wallet = await _wallet(client, f"/api/v1/orgs/{org.id}/wallet")
    member_wallet = await _wallet(client, f"/api/v1/users/{member.id}/wallet")
    skip = await client.post(
        TRANSFERS,
        json={
            "from_wallet_id": org_wallet["id"],
            "to_wallet_id": member_wallet["id"],
            "amount": "1",
        },
    )
    assert skip.status_code == 400
    assert skip.json()["error"]["code"] == "not_parent_and_child"


async def test_idempotency_keys(build: Builder) -> None:
    t = await _tenant(build)
    root, org = t.root, t.org
    client = await build.signed_in(root)
    body = {"org_id": str(org.id), "amount": "7"}
    first = await client.post(MINT, json=body, headers={"Idempotency-Key": "mint-1"})
    build.clock.advance(timedelta(seconds=5))
    again = await client.post(MINT, json=body, headers={"Idempotency-Key": "mint-1"})
    assert first.status_code == again.status_code == 201
    assert again.content == first.content  # byte for byte
    assert (await _wallet(client, f"/api/v1/orgs/{org.id}/wallet"))["balance"] == "7"
    reused = await client.post(
        MINT, json=body | {"amount": "8"}, headers={"Idempotency-Key": "mint-1"}
    )
    assert reused.status_code == 422
    assert reused.json()["error"]["code"] == "idempotency_key_reused"


async def test_a_concurrent_duplicate_gets_409(build: Builder, sessions) -> None:
    t = await _tenant(build)
    root, org = t.root, t.org
    client = await build.signed_in(root)
    from gshare.kit.idempotency import _lock_id

    async with sessions() as other, other.begin():
        # Another request with the same key is in flight: it holds the key's lock.
        await other.execute(
            text("SELECT pg_advisory_xact_lock(:id)"), {"id": _lock_id(root.id, "dup")}
        )
        response = await client.post(
            MINT, json={"org_id": str(org.id), "amount": "1"}, headers={"Idempotency-Key": "dup"}
        )
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "idempotency_in_flight"
    retry = await client.post(
        MINT, json={"org_id": str(org.id), "amount": "1"}, headers={"Idempotency-Key": "dup"}
    )
    assert retry.status_code == 201


async def test_monthly_grants_are_set_by_the_parent_scope(build: Builder) -> None:
    t = await _tenant(build)
    root = t.root
    org = t.org
    group = t.group
    admin = t.admin
    lead = t.lead
    member = t.member
    root_c, admin_c, lead_c = [await build.signed_in(u) for u in (root, admin, lead)]
    org_wallet = await _wallet(root_c, f"/api/v1/orgs/{org.id}/wallet")
    group_wallet = await _wallet(admin_c, f"/api/v1/groups/{group.id}/wallet")
    member_wallet = await _wallet(lead_c, f"/api/v1/users/{member.id}/wallet")
    grant = "/api/v1/wallets/{}/monthly-grant"
    assert (
        await admin_c.put(grant.format(org_wallet["id"]), json={"amount": "5"})
    ).status_code == 403
    assert (
        await root_c.put(grant.format(org_wallet["id"]), json={"amount": "500"})
    ).status_code == 200
    assert (
        await lead_c.put(grant.format(group_wallet["id"]), json={"amount": "5"})
    ).status_code == 403
    set_group = await admin_c.put(grant.format(group_wallet["id"]), json={"amount": "100"})
    assert set_group.json()["monthly_grant"]["funding_wallet_id"] == org_wallet["id"]
    set_user = await lead_c.put(grant.format(member_wallet["id"]), json={"amount": "20"})
    assert set_user.status_code == 200
    assert set_user.json()["monthly_grant"] == {
        "amount": "20",
        "funding_wallet_id": group_wallet["id"],
        "last_refill": None,
    }
    cleared = await lead_c.put(grant.format(member_wallet["id"]), json={"amount": "0"})
    assert cleared.json()["monthly_grant"] is None
    # Grant changes are audited in the paying scope, so the org admin sees them.
    seen = (await admin_c.get("/api/v1/audit", params={"action": "credits.monthly_grant"})).json()
    assert len(seen["items"]) == 4  # org, group, member set, member cleared
    assert {e["group_id"] for e in seen["items"]} == {None, str(group.id)}


async def test_rbac_for_moving_credits(build: Builder) -> None:
    t = await _tenant(build)
    root = t.root
    org = t.org
    group = t.group
    lead = t.lead
    member = t.member
    other_group = await build.group(org, "Acoustics")
    other_member = await build.user("Otto")
    await build.member(other_member, other_group)
    root_c = await build.signed_in(root)
    await root_c.post(MINT, json={"org_id": str(org.id), "amount": "100"})
    org_wallet = await _wallet(root_c, f"/api/v1/orgs/{org.id}/wallet")
    optics = await _wallet(root_c, f"/api/v1/groups/{group.id}/wallet")
    acoustics = await _wallet(root_c, f"/api/v1/groups/{other_group.id}/wallet")
    for target in (optics, acoustics):
        await root_c.post(
            TRANSFERS,
            json={"from_wallet_id": org_wallet["id"], "to_wallet_id": target["id"], "amount": "10"},
        )
    otto = await _wallet(root_c, f"/api/v1/users/{other_member.id}/wallet")
    mia = await _wallet(root_c, f"/api/v1/users/{member.id}/wallet")

    lead_c = await build.signed_in(lead)  # group admin of Optics only
    other_group_move = await lead_c.post(
        TRANSFERS,
        json={"from_wallet_id": acoustics["id"], "to_wallet_id": otto["id"], "amount": "1"},
    )
    assert other_group_move.status_code == 403
    assert (await lead_c.get(f"/api/v1/wallets/{otto['id']}")).status_code == 403

    member_c = await build.signed_in(member)
    for source, target in ((optics, mia), (mia, optics), (org_wallet, optics)):
        response = await member_c.post(
            TRANSFERS,
            json={"from_wallet_id": source["id"], "to_wallet_id": target["id"], "amount": "1"},
        )
        assert response.status_code == 403
    assert (
        await member_c.post(MINT, json={"org_id": str(org.id), "amount": "1"})
    ).status_code == 403
    assert (await member_c.get(f"/api/v1/wallets/{otto['id']}")).status_code == 403
    assert (await member_c.get("/api/v1/credits/check")).status_code == 403


async def test_wallet_tree_shows_what_the_caller_administers(build: Builder) -> None:
    t = await _tenant(build)
    org = t.org
    admin = t.admin
    lead = t.lead
    member = t.member
    await build.group(org, "Acoustics")
    admin_c = await build.signed_in(admin)
    tree = (await admin_c.get(f"/api/v1/orgs/{org.id}/wallet-tree")).json()
    assert tree["org"]["owner_name"] == "Physics"
    assert [g["group_name"] for g in tree["groups"]] == ["Acoustics", "Optics"]
    lead_c = await build.signed_in(lead)
    tree = (await lead_c.get(f"/api/v1/orgs/{org.id}/wallet-tree")).json()
    assert tree["org"] is None
    assert [g["group_name"] for g in tree["groups"]] == ["Optics"]
    assert [m["owner_name"] for m in tree["groups"][0]["members"]] == ["Mia Member"]
    member_c = await build.signed_in(member)
    assert (await member_c.get(f"/api/v1/orgs/{org.id}/wallet-tree")).status_code == 403


async def test_consumption_per_day(build: Builder, sessions) -> None:
    t = await _tenant(build)
    org = t.org
    group = t.group
    member = t.member
    now = build.clock.now()
    async with sessions() as db, db.begin():
        org_w = await repository.account_id(db, "org", org.id, now)
        group_w = await repository.account_id(db, "group", group.id, now)
        user_w = await repository.account_id(db, "user", member.id, now)
        await operations.mint(db, wallet_id=org_w, amount=100_000_000, now=now)
        await operations.move(
            db, from_id=org_w, to_id=group_w, amount=50_000_000, kind="allocation", now=now
        )
        await operations.move(
            db, from_id=group_w, to_id=user_w, amount=20_000_000, kind="allocation", now=now
        )
        hold = await operations.place_hold(
            db,
            wallet_id=user_w,
            session_id=group.id,
            rate_per_hour=2_000_000,
            window_seconds=3600,
            now=now,
        )
        await operations.capture(db, hold_id=hold.id, amount=1_500_000, now=now)
    member_c = await build.signed_in(member)
    wallet = await _wallet(member_c, "/api/v1/wallets/me")
    assert (wallet["balance"], wallet["held"], wallet["available"]) == ("18.5", "0.5", "18")
    usage = (await member_c.get(f"/api/v1/wallets/{wallet['id']}/consumption?days=3")).json()
    assert [d["amount"] for d in usage["days"]] == ["0", "0", "1.5"]
    assert usage["days"][-1]["day"] == now.date().isoformat()


async def test_a_group_holding_credits_cannot_be_deleted(build: Builder) -> None:
    t = await _tenant(build)
    empty = await build.group(t.org, "Empty")
    client = await build.signed_in(t.root)
    await client.post(MINT, json={"org_id": str(t.org.id), "amount": "10"})
    org_wallet = await _wallet(client, f"/api/v1/orgs/{t.org.id}/wallet")
    empty_wallet = await _wallet(client, f"/api/v1/groups/{empty.id}/wallet")
    move = {"from_wallet_id": org_wallet["id"], "to_wallet_id": empty_wallet["id"], "amount": "3"}
    assert (await client.post(TRANSFERS, json=move)).status_code == 201
    refused = await client.delete(f"/api/v1/groups/{empty.id}")
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "wallet_not_empty"
    back = {"from_wallet_id": empty_wallet["id"], "to_wallet_id": org_wallet["id"], "amount": "3"}
    assert (await client.post(TRANSFERS, json=back)).status_code == 201
    assert (await client.delete(f"/api/v1/groups/{empty.id}")).status_code == 204


async def test_grants_end_with_their_reason_and_can_always_be_cleared(
    build: Builder, sessions
) -> None:
    """A member who leaves the paying group, or a deleted group, is no longer paid; the grant
    is cleared at the next refill, and the admins can clear it themselves before that."""
    from gshare.credits.tasks import refill_month
    from gshare.identity.models import Membership

    t = await _tenant(build)
    root_c, admin_c, lead_c = [await build.signed_in(u) for u in (t.root, t.admin, t.lead)]
    leaver = await build.user("Lea Leaver")
    await build.member(leaver, t.group)
    spare = await build.group(t.org, "Spare")
    assert (await root_c.post(MINT, json={"org_id": str(t.org.id), "amount": "1000"})).is_success
    org_wallet = await _wallet(root_c, f"/api/v1/orgs/{t.org.id}/wallet")
    group_wallet = await _wallet(admin_c, f"/api/v1/groups/{t.group.id}/wallet")
    spare_wallet = await _wallet(admin_c, f"/api/v1/groups/{spare.id}/wallet")
    grant = "/api/v1/wallets/{}/monthly-grant"
    for wallet, amount in ((group_wallet, "200"), (spare_wallet, "50")):
        assert (await admin_c.put(grant.format(wallet["id"]), json={"amount": amount})).is_success
    ids = {}
    for person in (t.member, leaver):
        wallet = await _wallet(lead_c, f"/api/v1/users/{person.id}/wallet")
        ids[person.id] = wallet["id"]
        assert (await lead_c.put(grant.format(wallet["id"]), json={"amount": "20"})).is_success

    # The leaver leaves; the spare group is deleted (its wallet is empty, so that is allowed).
    assert (await lead_c.delete(f"/api/v1/groups/{t.group.id}/members/{leaver.id}")).is_success
    assert (await admin_c.delete(f"/api/v1/groups/{spare.id}")).status_code == 204

    summary = await refill_month(sessions, "2026-03", build.clock.now())
    assert (summary.cleared, summary.failed) == (2, 0)
    assert (await _wallet(root_c, f"/api/v1/wallets/{ids[t.member.id]}"))["balance"] == "20"
    assert (await _wallet(root_c, f"/api/v1/wallets/{ids[leaver.id]}"))["balance"] == "0"
    assert (await _wallet(root_c, f"/api/v1/wallets/{ids[leaver.id]}"))["monthly_grant"] is None
    assert (await _wallet(root_c, f"/api/v1/wallets/{spare_wallet['id']}"))["balance"] == "0"
    # The org paid its group 200 and nothing to the deleted one.
    assert (await _wallet(root_c, f"/api/v1/wallets/{org_wallet['id']}"))["balance"] == "800"

    # Clearing needs no payer: the paying group's admin clears a grant of someone who has left,
    # and the super admin clears anything, even a deleted group's.
    gone = await build.user("Gil Gone")
    await build.member(gone, t.group)
    gone_wallet = (await _wallet(lead_c, f"/api/v1/users/{gone.id}/wallet"))["id"]
    assert (await lead_c.put(grant.format(gone_wallet), json={"amount": "5"})).is_success
    async with sessions() as db, db.begin():
        await db.execute(
            Membership.__table__.delete().where(Membership.user_id == gone.id)  # type: ignore[attr-defined]
        )
    cleared = await lead_c.put(grant.format(gone_wallet), json={"amount": "0"})
    assert cleared.status_code == 200, cleared.text
    assert cleared.json()["monthly_grant"] is None
    member_c = await build.signed_in(t.member)
    denied = await member_c.put(grant.format(ids[t.member.id]), json={"amount": "0"})
    assert denied.status_code == 403
    # While the paying group pays, the admin of another group the member is in cannot clear it.
    elsewhere = await build.group(await build.org("Elsewhere"), "Other")
    await build.member(t.member, elsewhere)
    other_lead = await build.user("Otto Lead")
    await build.group_admin(other_lead, elsewhere)
    other_c = await build.signed_in(other_lead)
    refused = await other_c.put(grant.format(ids[t.member.id]), json={"amount": "0"})
    assert refused.status_code == 403
    ok = await root_c.put(grant.format(spare_wallet["id"]), json={"amount": "0"})
    assert ok.status_code == 200, ok.text


async def test_amounts_stay_inside_what_the_database_holds(build: Builder) -> None:
    t = await _tenant(build)
    client = await build.signed_in(t.root)
    # Arabic-Indic and fullwidth digits, a bare point either side, a separator, over the cap.
    for amount in ("\u0661\u0662", "\uff11\uff12", "12.", ".5", "1_000", "10000000000000"):
        response = await client.post(MINT, json={"org_id": str(t.org.id), "amount": amount})
        assert response.status_code == 400, amount
        assert response.json()["error"]["code"] == "invalid_amount", amount
    big = "900000000000"  # under the per-amount cap; ten of them would overflow a bigint
    outcomes = [
        (await client.post(MINT, json={"org_id": str(t.org.id), "amount": big})).status_code
        for _ in range(11)
    ]
    assert outcomes[:10] == [201] * 10
    assert outcomes[10] == 409
    refused = await client.post(MINT, json={"org_id": str(t.org.id), "amount": big})
    assert refused.json()["error"]["code"] == "balance_too_large"
    wallet = await _wallet(client, f"/api/v1/orgs/{t.org.id}/wallet")
    assert wallet["balance"] == "9000000000000"


async def test_garbage_cursors_are_a_400(build: Builder) -> None:
    import base64
    import json

    t = await _tenant(build)
    client = await build.signed_in(t.root)
    wallet = await _wallet(client, f"/api/v1/orgs/{t.org.id}/wallet")
    for value in (["abc"], [None], [1e30], [99999999999999999999], [1, 2], [True], [0]):
        cursor = base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")
        for path in (f"/api/v1/wallets/{wallet['id']}/entries", "/api/v1/audit"):
            response = await client.get(path, params={"cursor": cursor})
            assert response.status_code == 400, (path, value, response.text)
            assert response.json()["error"]["code"] == "invalid_cursor"
