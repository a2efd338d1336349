"""API conventions: error shape, unknown fields, body size, pagination, health."""

from __future__ import annotations

import httpx

from tests.builders import Builder


async def test_health_and_readiness(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = await client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready"}


async def test_unknown_fields_are_rejected(build: Builder) -> None:
    admin = await build.user(super_admin=True)
    client = await build.signed_in(admin)
    response = await client.post("/api/v1/orgs", json={"name": "Chemistry", "budget": 5})
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert "budget" in error["message"]
    assert (await client.get("/api/v1/orgs")).json()["items"] == []


async def test_bodies_over_one_mebibyte_are_refused(build: Builder) -> None:
    admin = await build.user(super_admin=True)
    client = await build.signed_in(admin)
    big = '{"name": "' + "x" * (1024 * 1024) + '"}'
    response = await client.post(
        "/api/v1/orgs", content=big, headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"

    async def chunks():
        yield b'{"name": "'
        for _ in range(20):
            yield b"y" * 65536
        yield b'"}'

    streamed = await client.post(
        "/api/v1/orgs", content=chunks(), headers={"content-type": "application/json"}
    )
    assert streamed.status_code == 413
    assert (await client.get("/api/v1/orgs")).json()["items"] == []


async def test_errors_never_leak_a_trace(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/api/v1/auth/login", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    assert set(response.json()) == {"error"}
    assert "Traceback" not in response.text


async def test_lists_paginate_with_a_cursor(build: Builder) -> None:
    admin = await build.user(super_admin=True)
    client = await build.signed_in(admin)
    for i in range(5):
        await build.org(f"Org {i}")
        build.clock.advance(__import__("datetime").timedelta(seconds=1))
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = (await client.get("/api/v1/orgs", params=params)).json()
        seen += [o["name"] for o in page["items"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [f"Org {i}" for i in range(5)]
    assert pages == 3
    bad = await client.get("/api/v1/orgs", params={"cursor": "%%%"})
    assert bad.status_code == 400
    assert bad.json()["error"]["code"] == "invalid_cursor"
    too_many = await client.get("/api/v1/orgs", params={"limit": 500})
    assert too_many.status_code == 422


async def test_responses_carry_security_headers(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/v1/me")
    assert response.status_code == 401
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["cache-control"] == "no-store"


async def test_an_unexpected_error_is_a_plain_500_with_the_security_headers(app) -> None:
    async def boom() -> None:
        raise RuntimeError("a bug")

    app.add_api_route("/api/v1/test-boom", boom, methods=["GET"])
    # Ahead of the console's catch-all route, which was added when the app was built.
    app.router.routes.insert(0, app.router.routes.pop())
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        response = await client.get("/api/v1/test-boom")
    assert response.status_code == 500
    assert response.json() == {
        "error": {"code": "internal_error", "message": "Something went wrong on our side."}
    }
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["cache-control"] == "no-store"


async def test_a_refused_body_names_each_field_in_words_for_a_person(build: Builder) -> None:
    admin = await build.user(super_admin=True)
    client = await build.signed_in(admin)
    response = await client.post(
        "/api/v1/users", json={"email": "not an email", "name": "x" * 500, "initial_password": "pw"}
    )
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    fields = {f["field"]: f["message"] for f in error["fields"]}
    assert set(fields) == {"email", "name"}
    assert "Value error" not in error["message"]
    assert not any(m.startswith("Value error") for m in fields.values())
    assert "must be an email address" in fields["email"]


async def test_a_body_that_is_not_json_names_no_field(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/api/v1/auth/login", content=b"{not json", headers={"content-type": "application/json"}
    )
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert "not valid JSON" in error["message"]
    assert "fields" not in error


async def test_a_huge_unknown_key_is_not_echoed_back_whole(build: Builder) -> None:
    admin = await build.user(super_admin=True)
    client = await build.signed_in(admin)
    key = "k" * 500_000
    response = await client.post("/api/v1/orgs", json={"name": "Chemistry", key: 1})
    assert response.status_code == 422
    error = response.json()["error"]
    assert [f["message"] for f in error["fields"]] == ["unknown field"]
    assert len(error["fields"][0]["field"]) <= 201
    assert len(response.content) < 2_000
    assert (await client.get("/api/v1/orgs")).json()["items"] == []


async def test_text_the_database_cannot_store_is_refused_not_a_500(build: Builder) -> None:
    """JSON may spell a lone UTF-16 surrogate (`\\ud800`); PostgreSQL's UTF-8 text cannot hold
    it, nor NUL: either is a 422 on its field, in any string field, list or mapping."""
    admin = await build.user(super_admin=True)
    client = await build.signed_in(admin)
    for raw in (b'{"name": "Chem\\ud800istry"}', b'{"name": "Chem\\u0000istry"}'):
        response = await client.post(
            "/api/v1/orgs", content=raw, headers={"content-type": "application/json"}
        )
        assert response.status_code == 422, response.text
        assert [f["field"] for f in response.json()["error"]["fields"]] == ["name"]
    assert (await client.get("/api/v1/orgs")).json()["items"] == []
