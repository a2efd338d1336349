"""Every route declares its permission and lists its error responses in the OpenAPI spec."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from gshare.api.app import create_app
from gshare.api.openapi import spec
from gshare.identity.permissions import RULES, Action
from gshare.kit.settings import Settings
from gshare.kit.web import PERMISSION_KEY
from tests.builders import Builder

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


async def test_a_get_on_a_route_that_takes_no_get_is_a_405(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/v1/auth/login")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"
    assert response.headers["allow"] == "POST"


@asynccontextmanager
async def _app_with(
    settings: Settings, database_url: str, engine, clock, **changes: Any
) -> AsyncIterator[httpx.AsyncClient]:
    """The real app under other settings, and a client for it."""
    app = create_app(
        settings.model_copy(update=changes), database_url=database_url, clock=clock, engine=engine
    )
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, client=("203.0.113.7", 50000))
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield client


async def test_console_paths_the_file_system_cannot_take_get_the_app(
    settings: Settings, database_url: str, engine, clock, tmp_path: Path
) -> None:
    console = tmp_path / "console"
    (console / "assets").mkdir(parents=True)
    (console / "index.html").write_text("<!doctype html><title>GShare</title>")
    (console / "assets" / "app.js").write_text("console.log(1)")
    async with _app_with(settings, database_url, engine, clock, console_dir=console) as client:
        for path in (
            "/%00",
            "/foo%00bar",
            "/" + "a" * 300,
            "/" + "/".join(["b" * 250] * 30),
            "/..%2f..%2fetc%2fpasswd",
        ):
            response = await client.get(path)
            assert response.status_code == 200, (path, response.text)
            assert response.text.startswith("<!doctype html>"), path
        served = await client.get("/assets/app.js")
        assert served.text == "console.log(1)"
        # A missing script or style is a 404: the app's page would only confuse the browser.
        for path in ("/api/%00", "/internal/x%00", "/assets/app.js%00", "/assets/missing.js"):
            assert (await client.get(path)).status_code == 404, path


async def test_a_body_that_is_not_json_gets_a_plain_answer(build: Builder) -> None:
    root = await build.signed_in(await build.user(super_admin=True))
    response = await root.post(
        "/api/v1/orgs", content=b'{"name":', headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    assert response.json()["error"]["message"].startswith("The body is not valid JSON")


PATH_ROUTES = [(path, method) for path, method, _ in OPERATIONS if "{" in path and method != "head"]


@pytest.mark.parametrize("value", ["%00", "a%00b"])
async def test_a_nul_in_any_path_parameter_is_a_client_error(build: Builder, value: str) -> None:
    import re

    root = await build.signed_in(await build.user(super_admin=True))
    for path, method in PATH_ROUTES:
        url = re.sub(r"\{[^}]+\}", value, path)
        response = await root.request(method.upper(), url, json={})
        assert 400 <= response.status_code < 500, (method, url, response.text)
        assert set(response.json()) == {"error"}, (method, url)


async def test_the_api_docs_page_is_off_unless_configured(
    client: httpx.AsyncClient, settings: Settings, database_url: str, engine, clock
) -> None:
    off = await client.get("/api/v1/docs")
    assert off.status_code == 404
    assert off.json()["error"]["code"] == "not_found"
    assert (await client.get("/api/v1/openapi.json")).json()["info"]["title"] == "GShare API"
    async with _app_with(settings, database_url, engine, clock, api_docs=True) as with_docs:
        page = await with_docs.get("/api/v1/docs")
        assert page.status_code == 200
        assert "swagger" in page.text.lower()
