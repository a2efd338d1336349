"""Every route declares its permission and lists its error responses in the OpenAPI spec."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from gshare.api.openapi import spec
from gshare.identity.permissions import RULES, Action
from gshare.kit.web import PERMISSION_KEY

METHODS = {"get", "post", "put", "patch", "delete"}
SPEC = spec()
OPERATIONS = [
    (path, method, operation)
    for path, item in SPEC["paths"].items()  # type: ignore[union-attr]
    for method, operation in item.items()
    if method in METHODS
]


def test_the_spec_has_the_console_routes() -> None:
    paths = set(SPEC["paths"])  # type: ignore[arg-type]
    for expected in (
        "/api/v1/auth/login",
        "/api/v1/auth/logout",
        "/api/v1/auth/password",
        "/api/v1/me",
        "/api/v1/orgs",
        "/api/v1/orgs/{org_id}",
        "/api/v1/orgs/{org_id}/groups",
        "/api/v1/groups/{group_id}",
        "/api/v1/users",
        "/api/v1/users/{user_id}",
        "/api/v1/groups/{group_id}/members/{user_id}",
        "/api/v1/orgs/{org_id}/admins/{user_id}",
        "/api/v1/groups/{group_id}/admins/{user_id}",
        "/api/v1/audit",
        "/healthz",
        "/readyz",
    ):
        assert expected in paths


@pytest.mark.parametrize(("path", "method", "operation"), OPERATIONS, ids=lambda v: str(v)[:40])
def test_every_route_declares_a_known_permission(path: str, method: str, operation: dict) -> None:
    declared = operation.get(PERMISSION_KEY)
    assert declared, f"{method.upper()} {path} declares no permission"
    assert Action(declared) in RULES


@pytest.mark.parametrize(("path", "method", "operation"), OPERATIONS, ids=lambda v: str(v)[:40])
def test_every_route_lists_its_error_responses(path: str, method: str, operation: dict) -> None:
    responses = operation["responses"]
    expected = {"422"}
    if operation[PERMISSION_KEY] != Action.PUBLIC:
        expected |= {"401", "403"}
    if "requestBody" in operation:
        expected.add("413")
    # A path naming something can answer "not found", except where a cluster or a browser
    # asks about a session: they are refused alike whether it exists or not, so it cannot leak.
    if "{" in path and not path.startswith(("/internal/v1/sessions/", "/internal/v1/session-")):
        expected.add("404")
    assert expected <= set(responses), f"{method.upper()} {path} lists {sorted(responses)}"
    for status, response in responses.items():
        if status.startswith("4"):
            schema = response["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorBody"}


def test_no_route_outside_the_spec_is_served(app) -> None:
    """Routes hidden from the spec (the console fallback) must not be API routes."""
    from fastapi.routing import APIRoute

    hidden = [r.path for r in app.routes if isinstance(r, APIRoute) and not r.include_in_schema]
    assert hidden == ["/{path:path}"]


def test_the_committed_console_spec_is_current() -> None:
    committed = Path(__file__).parents[2] / "frontend" / "openapi.json"
    assert json.loads(committed.read_text()) == json.loads(json.dumps(SPEC)), (
        "frontend/openapi.json is stale: run `make openapi`"
    )


async def test_unknown_api_routes_answer_json_404(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/v1/nothing-here")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
