"""Replacing a monthly grant follows the rule for clearing it: only those who may remove the
grant in place may put another one there."""

from __future__ import annotations

from tests.builders import Builder
from tests.credits.builders import two_orgs

GRANT = "/api/v1/wallets/{}/monthly-grant"


async def test_a_group_cannot_replace_a_grant_another_group_pays(build: Builder) -> None:
    t = await two_orgs(build)
    grant = GRANT.format(t.uma_wallet)
    paid_by_optics = {"amount": "20", "funding_wallet_id": t.optics_wallet}
    paid_by_botany = {"amount": "30", "funding_wallet_id": t.botany_wallet}
    assert (await t.pia.put(grant, json=paid_by_optics)).status_code == 200

    # Botany's admin may neither clear nor replace what Optics pays.
    for body in (paid_by_botany, {"amount": "0"}):
        refused = await t.bea.put(grant, json=body)
        assert refused.status_code == 403, refused.text
    wallet = (await t.root.get(f"/api/v1/wallets/{t.uma_wallet}")).json()
    assert wallet["monthly_grant"]["funding_wallet_id"] == t.optics_wallet
    assert wallet["monthly_grant"]["amount"] == "20"

    # The other way round: once Botany pays, Optics' admin can replace it no more.
    assert (await t.pia.put(grant, json={"amount": "0"})).status_code == 200
    assert (await t.bea.put(grant, json=paid_by_botany)).status_code == 200
    refused = await t.pia.put(grant, json=paid_by_optics)
    assert refused.status_code == 403, refused.text
    wallet = (await t.root.get(f"/api/v1/wallets/{t.uma_wallet}")).json()
    assert wallet["monthly_grant"]["funding_wallet_id"] == t.botany_wallet

    # The paying group's own admin changes its grant freely.
    changed = await t.bea.put(grant, json={"amount": "35", "funding_wallet_id": t.botany_wallet})
    assert changed.status_code == 200, changed.text
    assert changed.json()["monthly_grant"]["amount"] == "35"


async def test_a_grant_whose_payer_is_gone_can_be_replaced_by_the_members_group(
    build: Builder,
) -> None:
    t = await two_orgs(build)
    grant = GRANT.format(t.uma_wallet)
    assert (
        await t.bea.put(grant, json={"amount": "5", "funding_wallet_id": t.botany_wallet})
    ).status_code == 200
    # Botany takes its credits back, Uma leaves it and it is deleted: her grant has no payer.
    biology = (await t.root.get(f"/api/v1/orgs/{t.biology.id}/wallet")).json()
    for source, target, amount in (
        (t.uma_wallet, t.botany_wallet, "10"),
        (t.botany_wallet, biology["id"], "50"),
    ):
        moved = await t.root.post(
            "/api/v1/credits/transfers",
            json={"from_wallet_id": source, "to_wallet_id": target, "amount": amount},
        )
        assert moved.status_code == 201, moved.text
    left = await t.root.delete(f"/api/v1/groups/{t.botany.id}/members/{t.uma.id}")
    assert left.is_success, left.text
    assert (await t.root.delete(f"/api/v1/groups/{t.botany.id}")).status_code == 204
    replaced = await t.pia.put(grant, json={"amount": "8", "funding_wallet_id": t.optics_wallet})
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()["monthly_grant"]["funding_wallet_id"] == t.optics_wallet
    seen = (await t.pia.get("/api/v1/audit", params={"action": "credits.monthly_grant"})).json()
    assert [e["group_id"] for e in seen["items"]] == [str(t.optics.id)]
