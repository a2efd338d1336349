"""The capabilities in /me: for every role, each one claimed is a call the API lets through, and
each one withheld is a call it refuses.

Every case builds the same world in a fresh database: organization A with groups A1 and A2,
organization B with group B1, one user per role, and a target user who is a member of A1.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from gshare.identity.capabilities import ADMIN_MODE, capabilities_of
from gshare.identity.permissions import Action, Actor
from tests.api.world import ROLES, build_world, fill
from tests.builders import Builder

_emails = itertools.count(1)


@dataclass(frozen=True)
class Case:
    """`action` as the console asks for it (in `org`, `group`), and the call it stands for."""

    action: str
    org: str | None
    group: str | None
    method: str
    path: str
    body: dict[str, Any] | None = None


def _new_user(group: str | None) -> dict[str, Any]:
    return {
        "email": f"new-{next(_emails)}@example.org",
        "name": "New Person",
        "initial_password": "saffron-kettle-orbit-93",
        "group_id": group,
    }


CASES = [
    Case("org.create", None, None, "POST", "/api/v1/orgs", {"name": "New org"}),
    Case("user.create", None, None, "POST", "/api/v1/users", _new_user(None)),
    Case("audit.read", None, None, "GET", "/api/v1/audit"),
    Case("credits.check", None, None, "GET", "/api/v1/credits/check"),
    Case("clusters.manage", None, None, "GET", "/api/v1/clusters"),
    Case("org.update", "A", None, "PATCH", "/api/v1/orgs/{A}", {"name": "Org A"}),
    Case("org.update", "B", None, "PATCH", "/api/v1/orgs/{B}", {"name": "Org B"}),
    Case("org.delete", "A", None, "DELETE", "/api/v1/orgs/{A}"),
    Case("org.admins.read", "A", None, "GET", "/api/v1/orgs/{A}/admins"),
    Case("org.admins.manage", "A", None, "PUT", "/api/v1/orgs/{A}/admins/{target}"),
    Case("group.create", "A", None, "POST", "/api/v1/orgs/{A}/groups", {"name": "New group"}),
    Case("wallet.tree", "A", None, "GET", "/api/v1/orgs/{A}/wallet-tree"),
    Case(
        "credits.mint", "A", None, "POST", "/api/v1/credits/mint", {"org_id": "{A}", "amount": "1"}
    ),
    Case(
        "credits.move_org_group",
        "A",
        None,
        "POST",
        "/api/v1/credits/transfers",
        {"from_wallet_id": "{A_wallet}", "to_wallet_id": "{A1_wallet}", "amount": "1"},
    ),
    Case(
        "credits.grant_org",
        "A",
        None,
        "PUT",
        "/api/v1/wallets/{A_wallet}/monthly-grant",
        {"amount": "5"},
    ),
    Case(
        "credits.grant_group",
        "A",
        None,
        "PUT",
        "/api/v1/wallets/{A1_wallet}/monthly-grant",
        {"amount": "5"},
    ),
    Case("group.update", "A", "A1", "PATCH", "/api/v1/groups/{A1}", {"name": "Group A1"}),
    Case("group.update", "A", "A2", "PATCH", "/api/v1/groups/{A2}", {"name": "Group A2"}),
    Case("group.update", "B", "B1", "PATCH", "/api/v1/groups/{B1}", {"name": "Group B1"}),
    Case("group.delete", "A", "A1", "DELETE", "/api/v1/groups/{A1}"),
    Case("group.admins.read", "A", "A1", "GET", "/api/v1/groups/{A1}/admins"),
    Case("group.admins.manage", "A", "A1", "PUT", "/api/v1/groups/{A1}/admins/{target}"),
    Case(
        "group.members.manage",
        "A",
        "A1",
        "PUT",
        "/api/v1/groups/{A1}/members/{target}",
        {"role": "member"},
    ),
    Case("user.create", "A", "A1", "POST", "/api/v1/users", _new_user("{A1}")),
    Case(
        "credits.move_group_user",
        "A",
        "A1",
        "POST",
        "/api/v1/credits/transfers",
        {"from_wallet_id": "{A1_wallet}", "to_wallet_id": "{target_wallet}", "amount": "1"},
    ),
    Case(
        "credits.grant_user",
        "A",
        "A1",
        "PUT",
        "/api/v1/wallets/{target_wallet}/monthly-grant",
        {"amount": "5"},
    ),
    Case("user.set_active", "A", "A1", "PATCH", "/api/v1/users/{target}", {"active": True}),
    Case(
        "user.reset_password",
        "A",
        "A1",
        "POST",
        "/api/v1/users/{target}/password-reset",
        {"initial_password": "saffron-kettle-orbit-93"},
    ),
    Case("user.super_admin.manage", None, None, "PUT", "/api/v1/users/{target}/super-admin"),
]


def holds(capabilities: dict[str, Any], action: str, org: str | None, group: str | None) -> bool:
    """How the console reads the capabilities: anywhere, for the organization, or in the group."""
    if action in capabilities["actions"]:
        return True
    if org is not None and any(
        entry["org_id"] == org and action in entry["actions"] for entry in capabilities["orgs"]
    ):
        return True
    return group is not None and any(
        entry["group_id"] == group and action in entry["actions"]
        for entry in capabilities["groups"]
    )


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.action} {c.org} {c.group}")
async def test_each_capability_matches_what_the_api_allows(case: Case, build: Builder) -> None:
    world = await build_world(build)
    ids, clients = world.ids, world.clients
    claimed: dict[str, bool] = {}
    for role, client in clients.items():
        me = await client.get("/api/v1/me")
        assert me.status_code == 200, me.text
        org = ids[case.org] if case.org else None
        group = ids[case.group] if case.group else None
        claimed[role] = holds(me.json()["capabilities"], case.action, org, group)
    assert any(claimed.values()), "every case is open to someone"
    # Roles told "no" try first, so an allowed call's change cannot hide a refusal.
    allowed: dict[str, bool] = {}
    for role in sorted(ROLES, key=lambda r: claimed[r]):
        response = await clients[role].request(
            case.method, fill(case.path, ids), json=fill(case.body, ids)
        )
        assert response.status_code != 401, response.text
        allowed[role] = response.status_code != 403
    assert allowed == claimed


async def test_admin_mode_is_offered_to_admins_alone(build: Builder) -> None:
    clients = (await build_world(build)).clients
    offered = set()
    for role, client in clients.items():
        if ADMIN_MODE in (await client.get("/api/v1/me")).json()["capabilities"]["actions"]:
            offered.add(role)
    assert offered == {"super_admin", "org_admin_a", "org_admin_b", "group_admin_a1"}


def test_plain_members_and_guests_get_no_scoped_capabilities() -> None:
    org, group = uuid.uuid4(), uuid.uuid4()
    member = Actor(user_id=uuid.uuid4(), email="m@example.org", member_of={group: org})
    guest = Actor(user_id=uuid.uuid4(), email="g@example.org", guest_of={group: org})
    for actor in (member, guest):
        caps = capabilities_of(actor)
        assert (caps.orgs, caps.groups) == ([], [])
        assert ADMIN_MODE not in caps.actions


def test_the_super_admin_holds_every_listed_action_anywhere() -> None:
    caps = capabilities_of(Actor(user_id=uuid.uuid4(), email="s@example.org", is_super_admin=True))
    assert Action.CLUSTERS_MANAGE.value in caps.actions
    assert Action.USER_SET_ACTIVE.value in caps.actions
    assert Action.SUPER_ADMIN_MANAGE.value in caps.actions
    assert Action.MEMBERS_MANAGE.value in caps.actions
    assert ADMIN_MODE in caps.actions
