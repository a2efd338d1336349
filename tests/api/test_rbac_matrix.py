"""The role-by-route matrix: each role gets exactly the routes it should, and no others.

Every test builds the same world in a fresh database:
organization A with groups A1 and A2, organization B with group B1, and one user per role.
A call is "allowed" when it gets past the permission check (any status but 401/403);
roles expected to be denied run first, so an allowed call's changes cannot mask a denial.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
import pytest

from gshare.api.openapi import spec
from gshare.credits.repository import account_id
from gshare.identity.permissions import Action
from gshare.kit.web import PERMISSION_KEY
from tests.builders import PASSWORD, Builder

ROLES = (
    "super_admin",
    "org_admin_a",
    "org_admin_b",
    "group_admin_a1",
    "member_a1",
    "guest_a1",
    "expired_guest_a1",
    "member_b1",
    "outsider",
)
EVERYONE = frozenset(ROLES)
SEES_ORG_A = frozenset({"super_admin", "org_admin_a", "group_admin_a1", "member_a1"})
ADMINS_A = frozenset({"super_admin", "org_admin_a"})
ADMINS_A1 = ADMINS_A | {"group_admin_a1"}
SUPER = frozenset({"super_admin"})
_emails = itertools.count(1)


@dataclass
class World:
    ids: dict[str, str]
    clients: dict[str, httpx.AsyncClient]
    anonymous: httpx.AsyncClient


Body = Callable[[str], dict[str, Any] | None]


@dataclass(frozen=True)
class Case:
    method: str
    path: str
    allowed: frozenset[str]
    body: Body = lambda role: None


def _new_user(role: str) -> dict[str, Any]:
    return {
        "email": f"new-{role}-{next(_emails)}@example.org",
        "name": "New Person",
        "initial_password": "saffron-kettle-orbit-93",
        "group_id": None,
    }


CASES = [
    Case("GET", "/api/v1/me", EVERYONE),
    Case("POST", "/api/v1/auth/logout", EVERYONE),
    Case(
        "POST",
        "/api/v1/auth/password",
        EVERYONE,
        lambda role: {"current_password": PASSWORD, "new_password": "violet-anchor-mosaic-61"},
    ),
    Case("POST", "/api/v1/auth/password-check", EVERYONE, lambda role: {"password": "abc"}),
    Case("GET", "/api/v1/orgs", EVERYONE),
    Case("POST", "/api/v1/orgs", frozenset({"super_admin"}), lambda r: {"name": f"New {r}"}),
    Case("GET", "/api/v1/orgs/{A}", SEES_ORG_A),
    Case("PATCH", "/api/v1/orgs/{A}", ADMINS_A, lambda role: {"name": "Org A"}),
    Case("DELETE", "/api/v1/orgs/{A}", frozenset({"super_admin"})),
    Case("GET", "/api/v1/orgs/{A}/groups", SEES_ORG_A),
    Case("POST", "/api/v1/orgs/{A}/groups", ADMINS_A, lambda r: {"name": f"New {r}"}),
    Case("GET", "/api/v1/groups/{A1}", SEES_ORG_A),
    Case("PATCH", "/api/v1/groups/{A1}", ADMINS_A1, lambda role: {"name": "Group A1"}),
    Case("DELETE", "/api/v1/groups/{A1}", ADMINS_A),
    Case("GET", "/api/v1/users", EVERYONE),
    Case("POST", "/api/v1/users", ADMINS_A1, lambda role: _new_user(role) | {"group_id": "{A1}"}),
    Case("GET", "/api/v1/users/{target}", SEES_ORG_A),
    Case("PATCH", "/api/v1/users/{target}", ADMINS_A1, lambda role: {"active": True}),
    Case("GET", "/api/v1/groups/{A1}/members", SEES_ORG_A),
    Case("PUT", "/api/v1/groups/{A1}/members/{target}", ADMINS_A1, lambda r: {"role": "member"}),
    Case("DELETE", "/api/v1/groups/{A1}/members/{target}", ADMINS_A1),
    Case("GET", "/api/v1/orgs/{A}/admins", ADMINS_A),
    Case("PUT", "/api/v1/orgs/{A}/admins/{target}", ADMINS_A),
    Case("DELETE", "/api/v1/orgs/{A}/admins/{second_org_admin}", ADMINS_A),
    Case("GET", "/api/v1/groups/{A1}/admins", ADMINS_A1),
    Case("PUT", "/api/v1/groups/{A1}/admins/{target}", ADMINS_A),
    Case("DELETE", "/api/v1/groups/{A1}/admins/{second_group_admin}", ADMINS_A),
    Case(
        "GET",
        "/api/v1/audit",
        frozenset({"super_admin", "org_admin_a", "org_admin_b", "group_admin_a1"}),
    ),
    Case("GET", "/api/v1/wallets/me", EVERYONE),
    Case("GET", "/api/v1/wallets/{target_wallet}", ADMINS_A1),
    Case("GET", "/api/v1/wallets/{target_wallet}/entries", ADMINS_A1),
    Case("GET", "/api/v1/wallets/{target_wallet}/consumption", ADMINS_A1),
    Case("GET", "/api/v1/orgs/{A}/wallet", ADMINS_A),
    Case("GET", "/api/v1/groups/{A1}/wallet", ADMINS_A1),
    Case("GET", "/api/v1/users/{target}/wallet", ADMINS_A1),
    Case("GET", "/api/v1/orgs/{A}/wallet-tree", ADMINS_A1),
    Case("POST", "/api/v1/credits/mint", SUPER, lambda r: {"org_id": "{A}", "amount": "1"}),
    Case(
        "POST",
        "/api/v1/credits/transfers",
        ADMINS_A1,
        lambda r: {
            "from_wallet_id": "{A1_wallet}",
            "to_wallet_id": "{target_wallet}",
            "amount": "1",
        },
    ),
    Case(
        "PUT", "/api/v1/wallets/{target_wallet}/monthly-grant", ADMINS_A1, lambda r: {"amount": "5"}
    ),
    Case("GET", "/api/v1/credits/check", SUPER),
    Case("GET", "/api/v1/clusters", SUPER),
    Case(
        "POST",
        "/api/v1/clusters",
        SUPER,
        lambda r: {"name": "c-" + r.replace("_", "-")[:20], "kubeconfig": "x"},
    ),
    Case("GET", "/api/v1/clusters/{no_cluster}", SUPER),
    Case("DELETE", "/api/v1/clusters/{no_cluster}", SUPER),
    # Everyone may ask; only a session's owner gets a link (others get 404, see tests/sessions).
    Case("POST", "/api/v1/sessions/{no_session}/entry", EVERYONE),
]


def _template(path: str) -> str:
    """/api/v1/orgs/{A}/admins/{target} -> /api/v1/orgs/{}/admins/{} for matching the spec."""
    import re

    return re.sub(r"\{[^}]+\}", "{}", path)


def test_the_matrix_covers_every_signed_in_route() -> None:
    operations = {
        (method.upper(), _template(path))
        for path, item in spec()["paths"].items()  # type: ignore[union-attr]
        for method, op in item.items()
        # Not console routes: an operator's token, or a session's access cookie, is the caller.
        if op.get(PERMISSION_KEY)
        not in (Action.PUBLIC, Action.CLUSTER_CALLBACK, Action.SESSION_ACCESS_CHECK)
    }
    covered = {(case.method, _template(case.path)) for case in CASES}
    assert operations == covered


async def _world(build: Builder) -> World:
    org_a, org_b = await build.org("Org A"), await build.org("Org B")
    a1, a2 = await build.group(org_a, "Group A1"), await build.group(org_a, "Group A2")
    b1 = await build.group(org_b, "Group B1")
    users = {role: await build.user(role.replace("_", " ").title()) for role in ROLES}
    users["super_admin"].is_super_admin = True
    async with build.sessions() as session, session.begin():
        await session.merge(users["super_admin"])
    await build.org_admin(users["org_admin_a"], org_a)
    await build.org_admin(users["org_admin_b"], org_b)
    await build.group_admin(users["group_admin_a1"], a1)
    await build.member(users["member_a1"], a1)
    await build.member(users["guest_a1"], a1, "guest", build.clock.now() + timedelta(days=30))
    await build.member(
        users["expired_guest_a1"], a1, "guest", build.clock.now() - timedelta(days=1)
    )
    await build.member(users["member_b1"], b1)
    target = await build.user("Target Person")
    await build.member(target, a1)
    second_org_admin = await build.user("Second Org Admin")
    await build.org_admin(second_org_admin, org_a)
    second_group_admin = await build.user("Second Group Admin")
    await build.group_admin(second_group_admin, a1)
    ids = {
        "A": str(org_a.id),
        "B": str(org_b.id),
        "A1": str(a1.id),
        "A2": str(a2.id),
        "B1": str(b1.id),
        "target": str(target.id),
        "second_org_admin": str(second_org_admin.id),
        "second_group_admin": str(second_group_admin.id),
        "no_cluster": str(uuid.uuid4()),
        "no_session": str(uuid.uuid4()),
    }
    async with build.sessions() as session, session.begin():
        for key, kind, owner in (
            ("A_wallet", "org", org_a.id),
            ("A1_wallet", "group", a1.id),
            ("target_wallet", "user", target.id),
        ):
            ids[key] = str(await account_id(session, kind, owner, build.clock.now()))
    clients = {role: await build.signed_in(user) for role, user in users.items()}
    return World(ids, clients, build.anonymous())


def _fill(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.format(**ids)
    if isinstance(value, dict):
        return {k: _fill(v, ids) for k, v in value.items()}
    return value


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.method} {c.path}")
async def test_each_role_gets_exactly_what_it_should(case: Case, build: Builder) -> None:
    world = await _world(build)
    path = case.path.format(**world.ids)
    anonymous = await world.anonymous.request(
        case.method, path, json=_fill(case.body("x"), world.ids)
    )
    assert anonymous.status_code == 401, "anonymous callers must be turned away"
    order = sorted(ROLES, key=lambda role: role in case.allowed)  # denied roles first
    outcome: dict[str, int] = {}
    for role in order:
        body = _fill(case.body(role), world.ids)
        response = await world.clients[role].request(case.method, path, json=body)
        outcome[role] = response.status_code
        assert response.status_code != 401, f"{role}: {response.text}"
    allowed = {role for role, status in outcome.items() if status != 403}
    assert allowed == case.allowed, outcome
