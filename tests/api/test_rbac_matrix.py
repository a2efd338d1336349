"""The role-by-route matrix: each role gets exactly the routes it should, and no others.

Every test runs in the same world: organization A with groups A1 and A2, organization B with
group B1, and one user per role. Reads share one world; each change gets a fresh one.
A call is "allowed" when it gets past the permission check (any status but 401/403);
roles expected to be denied run first, so an allowed call's changes cannot mask a denial.
A route with a body is also called with its smallest valid body (only the fields the spec
requires): which fields a body carries must never decide whether the check runs.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from gshare.api.app import create_app
from gshare.api.openapi import spec
from gshare.identity.permissions import Action
from gshare.kit.clock import FrozenClock
from gshare.kit.db import make_engine, make_sessionmaker
from gshare.kit.embedded_db import EmbeddedPostgres, drop_database, ensure_database
from gshare.kit.settings import Settings
from gshare.kit.web import PERMISSION_KEY
from tests.api.world import ROLES, World, build_world, fill
from tests.builders import PASSWORD, Builder
from tests.conftest import TEMPLATE

EVERYONE = frozenset(ROLES)
SEES_ORG_A = frozenset({"super_admin", "org_admin_a", "group_admin_a1", "member_a1"})
ADMINS_A = frozenset({"super_admin", "org_admin_a"})
ADMINS_A1 = ADMINS_A | {"group_admin_a1"}
SUPER = frozenset({"super_admin"})
ANY_ADMIN = frozenset({"super_admin", "org_admin_a", "org_admin_b", "group_admin_a1"})
ADMIN_IN_ORG_A = frozenset({"super_admin", "org_admin_a", "group_admin_a1"})
# The target's personal scope (`_self_or_user_admin`): the admins of the groups they are in.
READS_TARGET = ADMIN_IN_ORG_A
_emails = itertools.count(1)
SPEC: dict[str, Any] = spec()


Body = Callable[[str], dict[str, Any] | None]


@dataclass(frozen=True)
class Case:
    method: str
    path: str
    allowed: frozenset[str]
    body: Body = lambda role: None
    # Who may send the smallest valid body, where leaving out an optional field legitimately
    # changes the scope checked (a user created in no group); by default, `allowed`.
    minimal_allowed: frozenset[str] | None = None


def _booking(tier: str) -> dict[str, Any]:
    return {
        "group_id": "{A1}",
        "tier_id": tier,
        "count": 1,
        "starts_at": "2026-03-20T10:00:00Z",
        "ends_at": "2026-03-20T12:00:00Z",
        "title": "A class",
    }


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
    Case(
        "POST",
        "/api/v1/users",
        ADMINS_A1,
        lambda role: _new_user(role) | {"group_id": "{A1}"},
        minimal_allowed=SUPER,
    ),
    Case("GET", "/api/v1/users/{target}", SEES_ORG_A),
    Case("PATCH", "/api/v1/users/{target}", ADMINS_A1, lambda role: {"active": True}),
    Case(
        "POST",
        "/api/v1/users/{target}/password-reset",
        ADMINS_A1,
        lambda role: {"initial_password": "saffron-kettle-orbit-93"},
    ),
    Case("PUT", "/api/v1/users/{target}/super-admin", SUPER),
    Case("DELETE", "/api/v1/users/{target}/super-admin", SUPER),
    Case("GET", "/api/v1/groups/{A1}/members", SEES_ORG_A),
    Case("GET", "/api/v1/groups/{A1}/fair-share", SEES_ORG_A | {"guest_a1"}),
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
    Case("GET", "/api/v1/wallets/{target_wallet}/alert", ADMINS_A1),
    Case("PUT", "/api/v1/wallets/{target_wallet}/alert", ADMINS_A1, lambda r: {"below": "5"}),
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
    Case("GET", "/api/v1/callback-refusals", SUPER),
    Case(
        "POST",
        "/api/v1/clusters",
        SUPER,
        lambda r: {"name": "c-" + r.replace("_", "-")[:20], "kubeconfig": "x"},
    ),
    Case("GET", "/api/v1/clusters/{no_cluster}", SUPER),
    Case("DELETE", "/api/v1/clusters/{no_cluster}", SUPER),
    # Isolation: nodes, dedications and what a cluster offers are the super admin's; an
    # organization's audit view is its admins'.
    Case(
        "PUT",
        "/api/v1/clusters/{no_cluster}/isolation",
        SUPER,
        lambda r: {"sandbox_runtime_class": "gvisor"},
    ),
    Case("GET", "/api/v1/isolation/nodes", SUPER),
    Case("GET", "/api/v1/isolation/dedications", SUPER),
    Case(
        "POST",
        "/api/v1/isolation/dedications",
        SUPER,
        lambda r: {"cluster_id": "{no_cluster}", "organization_id": "{A}"},
    ),
    Case("DELETE", "/api/v1/isolation/dedications/{no_drain}", SUPER),
    Case("GET", "/api/v1/orgs/{A}/isolation", ADMINS_A),
    # Everyone may ask; only a session's owner gets a link (others get 404, see tests/sessions).
    Case("POST", "/api/v1/sessions/{no_session}/entry", EVERYONE),
    # Capacity: cards, pools, MIG layouts, GPU models and tiers are the super admin's.
    Case("GET", "/api/v1/clusters/{no_cluster}/cards", SUPER),
    Case("PUT", "/api/v1/cards/{no_card}/pool", SUPER, lambda r: {"pool": "mig"}),
    Case(
        "PUT",
        "/api/v1/cards/{no_card}/mig-layout",
        SUPER,
        lambda r: {"instances": [{"profile": "1g.10gb"}]},
    ),
    Case("GET", "/api/v1/cards/{no_card}/mig-layouts", SUPER),
    Case("GET", "/api/v1/gpu-models", SUPER),
    Case(
        "POST",
        "/api/v1/gpu-models",
        SUPER,
        lambda r: {
            "name": f"GPU-{r}",
            "exclusive_price": "8",
            "memory_mib": 81920,
            "split_count": 8,
        },
    ),
    Case("PATCH", "/api/v1/gpu-models/{no_model}", SUPER, lambda r: {"exclusive_price": "9"}),
    Case(
        "POST",
        "/api/v1/gpu-models/{no_model}/tiers",
        SUPER,
        lambda r: {"kind": "fraction", "denominator": 2, "price_per_hour": "1"},
    ),
    Case("PATCH", "/api/v1/tiers/{no_tier}", SUPER, lambda r: {"price_per_hour": "1"}),
    Case("DELETE", "/api/v1/tiers/{no_tier}", SUPER),
    # What anyone signed in may ask of capacity about themself.
    Case("GET", "/api/v1/tiers", EVERYONE),
    Case(
        "POST",
        "/api/v1/admission/preview",
        EVERYONE,
        lambda r: {"group_id": "{A1}", "tier_id": None, "cpu_cores": 1},
    ),
    Case("GET", "/api/v1/queue", EVERYONE),
    Case("GET", "/api/v1/usage", EVERYONE),
    Case("GET", "/api/v1/usage.csv", EVERYONE),
    Case("GET", "/api/v1/usage/idle-sessions", EVERYONE),
    Case("GET", "/api/v1/usage/sizing?image=lab%3A1&tier_id={no_session}", EVERYONE),
    Case("GET", "/api/v1/queue?scope=all", ANY_ADMIN),
    Case("DELETE", "/api/v1/queue/{no_request}", EVERYONE),
    # Drains are the super admin's; notices are read by the admins of the groups involved.
    Case(
        "POST",
        "/api/v1/drains",
        SUPER,
        lambda r: {
            "scope": "cluster",
            "cluster_id": "{no_cluster}",
            "deadline": "2030-01-01T00:00:00Z",
            "reason": "maintenance",
        },
    ),
    Case("GET", "/api/v1/drains", SUPER),
    Case("POST", "/api/v1/drains/{no_drain}/end", SUPER),
    Case("POST", "/api/v1/drains/{no_drain}/cancel", SUPER),
    Case("GET", "/api/v1/notices", ANY_ADMIN),
    # Bookings: anyone lists (their groups' own) and reads the calendar; a group's admins book
    # for it. A booking is read by those who see its group; to anyone else it does not exist
    # (404), so only its group's members are refused a change with a 403.
    Case("GET", "/api/v1/bookings", EVERYONE),
    Case(
        "GET",
        "/api/v1/bookings/calendar?model={model}&starts_at={booked_at}&ends_at={booked_until}",
        EVERYONE,
    ),
    Case("GET", "/api/v1/bookings/{A1_booking}", EVERYONE),
    Case("POST", "/api/v1/bookings", ADMINS_A1, lambda r: _booking("{no_tier}")),
    Case("POST", "/api/v1/bookings/check", ADMINS_A1, lambda r: _booking("{exclusive_tier}")),
    Case(
        "PATCH",
        "/api/v1/bookings/{A1_booking}",
        EVERYONE - {"member_a1", "guest_a1"},
        lambda r: {"title": f"Renamed by {r}"},
    ),
    Case("POST", "/api/v1/bookings/{A1_booking}/cancel", EVERYONE - {"member_a1", "guest_a1"}),
    # Sessions: everyone has their own; another's answers 404 (see tests/sessions).
    Case("GET", "/api/v1/sessions", EVERYONE),
    Case("GET", "/api/v1/sessions?scope=admin", ANY_ADMIN),
    Case(
        "POST",
        "/api/v1/sessions",
        EVERYONE,
        lambda r: {
            "session_type": "terminal",
            "image_id": "6f0c1e0a-5b1e-4c53-9b65-3f4a1d9e0003",
            "group_id": "{A1}",
        },
    ),
    Case("GET", "/api/v1/sessions/{no_session}", EVERYONE),
    Case("GET", "/api/v1/sessions/{no_session}/usage", EVERYONE),
    Case("POST", "/api/v1/sessions/{no_session}/pause", EVERYONE),
    Case("POST", "/api/v1/sessions/{no_session}/resume", EVERYONE),
    Case("POST", "/api/v1/sessions/{no_session}/stop", EVERYONE),
    Case("POST", "/api/v1/sessions/{no_session}/keep-running", EVERYONE),
    Case("DELETE", "/api/v1/sessions/{no_session}", EVERYONE),
    Case("GET", "/api/v1/catalog", EVERYONE),
    Case("GET", "/api/v1/catalog?include_disabled=true", SUPER),
    Case(
        "POST",
        "/api/v1/catalog",
        SUPER,
        lambda r: {"session_type": "terminal", "name": f"T {r}", "reference": "img/t:1"},
    ),
    Case("PATCH", "/api/v1/catalog/{no_request}", SUPER, lambda r: {"enabled": False}),
    Case("GET", "/api/v1/worker/health", SUPER),
    Case("GET", "/api/v1/volumes", EVERYONE),
    Case("DELETE", "/api/v1/volumes/{no_request}", EVERYONE),
    Case("GET", "/api/v1/groups/{A1}/volumes", SEES_ORG_A),
    Case(
        "POST",
        "/api/v1/groups/{A1}/volumes",
        ADMINS_A1,
        lambda r: {"name": "data-" + r.replace("_", "-"), "size_gib": 5},
    ),
    Case("DELETE", "/api/v1/groups/{A1}/volumes/{no_request}", ADMINS_A1),
    # Resource policies, per scope.
    Case("GET", "/api/v1/policies/global", ANY_ADMIN),
    Case("PUT", "/api/v1/policies/global", SUPER, lambda r: {"values": {"max_gpu_sessions": 2}}),
    Case("DELETE", "/api/v1/policies/global", SUPER),
    Case("GET", "/api/v1/policies/orgs/{A}", ADMIN_IN_ORG_A),
    Case("PUT", "/api/v1/policies/orgs/{A}", SUPER, lambda r: {"values": {"max_gpu_sessions": 2}}),
    Case("DELETE", "/api/v1/policies/orgs/{A}", SUPER),
    Case("GET", "/api/v1/policies/groups/{A1}", ADMINS_A1),
    Case("PUT", "/api/v1/policies/groups/{A1}", ADMINS_A, lambda r: {"values": {"storage_gb": 5}}),
    Case("DELETE", "/api/v1/policies/groups/{A1}", ADMINS_A),
    Case("GET", "/api/v1/policies/users/{target}", READS_TARGET),
    Case(
        "PUT",
        "/api/v1/policies/users/{target}",
        ADMINS_A,
        lambda r: {"values": {"queue_weight": 2}},
    ),
    Case("DELETE", "/api/v1/policies/users/{target}", ADMINS_A),
    Case("GET", "/api/v1/users/{target}/effective-policy", READS_TARGET),
    # Notifications: every caller their own.
    Case("GET", "/api/v1/notifications", EVERYONE),
    Case("GET", "/api/v1/notifications/unread-count", EVERYONE),
    Case("POST", "/api/v1/notifications/{no_request}/read", EVERYONE),
    Case("POST", "/api/v1/notifications/read-all", EVERYONE),
]
# A stream answers for minutes; who may open it, and what each caller receives on it, is
# tested over real HTTP in tests/events/test_stream.py.
STREAMS = {("GET", "/api/v1/events")}


def _template(path: str) -> str:
    """/api/v1/orgs/{A}/admins/{target} -> /api/v1/orgs/{}/admins/{} for matching the spec."""
    import re

    return re.sub(r"\{[^}]+\}", "{}", path.split("?", 1)[0])


def test_the_matrix_covers_every_signed_in_route() -> None:
    operations = {
        (method.upper(), _template(path))
        for path, item in SPEC["paths"].items()
        for method, op in item.items()
        # Not console routes: an operator's token, or a session's access cookie, is the caller.
        if op.get(PERMISSION_KEY)
        not in (Action.PUBLIC, Action.CLUSTER_CALLBACK, Action.SESSION_ACCESS_CHECK)
    }
    covered = {(case.method, _template(case.path)) for case in CASES}
    assert operations - STREAMS == covered


def _required_fields(method: str, path: str) -> frozenset[str]:
    """The fields the spec requires in a route's request body."""
    operation = SPEC["paths"][path][method.lower()]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    name = schema["$ref"].rsplit("/", 1)[-1]
    return frozenset(SPEC["components"]["schemas"][name].get("required", ()))


def _spec_path(path: str) -> str:
    template = _template(path)
    return next(p for p in SPEC["paths"] if _template(p) == template)


def _minimal(case: Case, body: dict[str, Any] | None) -> dict[str, Any] | None:
    """The smallest valid body, or None when the case's body is that already."""
    if body is None:
        return None
    required = _required_fields(case.method, _spec_path(case.path))
    smallest = {key: value for key, value in body.items() if key in required}
    return smallest if smallest != body else None


async def _check(case: Case, world: World) -> None:
    path = case.path.format(**world.ids)
    anonymous = await world.anonymous.request(
        case.method, path, json=fill(case.body("x"), world.ids)
    )
    assert anonymous.status_code == 401, "anonymous callers must be turned away"
    minimal_allowed = case.allowed if case.minimal_allowed is None else case.minimal_allowed
    outcome: dict[str, int] = {}
    minimal_outcome: dict[str, int] = {}
    calls: list[tuple[bool, str, Any, dict[str, int]]] = []
    for role in ROLES:
        body = fill(case.body(role), world.ids)
        calls.append((role in case.allowed, role, body, outcome))
        smallest = _minimal(case, body)
        if smallest is not None:
            calls.append((role in minimal_allowed, role, smallest, minimal_outcome))
    for _, role, sent, outcomes in sorted(calls, key=lambda call: call[0]):  # denied first
        response = await world.clients[role].request(case.method, path, json=sent)
        outcomes[role] = response.status_code
        assert response.status_code != 401, f"{role}: {response.text}"
        assert response.status_code < 500, f"{role}: {response.text}"
    allowed = {role for role, status in outcome.items() if status != 403}
    assert allowed == case.allowed, outcome
    if minimal_outcome:
        allowed = {role for role, status in minimal_outcome.items() if status != 403}
        assert allowed == minimal_allowed, ("smallest body", minimal_outcome)


READS = [case for case in CASES if case.method == "GET"]
CHANGES = [case for case in CASES if case.method != "GET"]


@pytest.fixture(scope="module")
async def read_world(
    postgres: EmbeddedPostgres, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[World]:
    """One world for every read: reads change nothing a permission depends on."""
    name = f"rbac_reads_{uuid.uuid4().hex}"
    await ensure_database(postgres.url(), name, template=TEMPLATE)
    engine = make_engine(postgres.url(name), pool_size=5)
    root = tmp_path_factory.mktemp("rbac")
    settings = Settings(
        data_dir=root / "data", console_dir=root / "no-console", auth_cache_seconds=0
    )
    clock = FrozenClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    app = create_app(settings, database_url=postgres.url(name), clock=clock, engine=engine)
    try:
        async with app.router.lifespan_context(app):
            build = Builder(make_sessionmaker(engine), clock, app)
            try:
                yield await build_world(build)
            finally:
                await build.close()
    finally:
        await engine.dispose()
        await drop_database(postgres.url(), name)


@pytest.mark.parametrize("case", READS, ids=lambda c: f"{c.method} {c.path}")
async def test_each_role_reads_exactly_what_it_should(case: Case, read_world: World) -> None:
    await _check(case, read_world)


@pytest.mark.parametrize("case", CHANGES, ids=lambda c: f"{c.method} {c.path}")
async def test_each_role_changes_exactly_what_it_should(case: Case, build: Builder) -> None:
    # Each change gets a fresh world: an allowed change may alter what the next call finds.
    await _check(case, await build_world(build))
