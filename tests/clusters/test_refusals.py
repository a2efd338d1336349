"""Refused internal calls: checked before the request is read, counted per source, reason and
window, and audited once per window with nothing the caller chose."""

from __future__ import annotations

import json
import re
import uuid
from datetime import timedelta

import httpx
from fastapi import FastAPI
from sqlalchemy import func, select

from gshare.audit.models import AuditEntry
from gshare.clusters import service
from gshare.clusters.callbacks import InternalRoute, internal_routes
from gshare.clusters.models import CallbackRefusal
from gshare.kit.clock import FrozenClock
from tests.builders import Builder

MARKER = "caller-chosen-text"


def _internal_routes(app: FastAPI) -> list[tuple[str, str, object]]:
    return [
        (method, path, route)
        for path, route in internal_routes(app.routes)
        for method in sorted(getattr(route, "methods", ()))
    ]


def _filled(path: str, value: str) -> str:
    return re.sub(r"\{[^}]+\}", value, path)


async def _callback_entries(build: Builder) -> list[AuditEntry]:
    async with build.sessions() as db:
        return list(
            await db.scalars(
                select(AuditEntry)
                .where(AuditEntry.action == "cluster.callback")
                .order_by(AuditEntry.id)
            )
        )


async def _refusal_rows(build: Builder) -> list[CallbackRefusal]:
    async with build.sessions() as db:
        return list(
            await db.scalars(
                select(CallbackRefusal).order_by(
                    CallbackRefusal.window_start, CallbackRefusal.source
                )
            )
        )


async def test_every_internal_route_checks_its_caller_before_reading_the_request(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    routes = _internal_routes(app)
    assert {path for _, path, _ in routes} >= {
        "/internal/v1/clusters/{cluster_id}/inventory",
        "/internal/v1/sessions/{session_id}/status",
        "/internal/v1/session-access/{session_id}",
    }
    for method, path, route in routes:
        assert isinstance(route, InternalRoute), path
        for target in (str(uuid.uuid4()), "not-an-id"):
            for body in (b"{}", b'{"sequence": "x"', b"[" * 5000):
                response = await client.request(
                    method,
                    _filled(path, target),
                    content=body,
                    headers={"content-type": "application/json"},
                )
                assert response.status_code == 401, (method, path, target, body[:20])
                error = response.json()["error"]
                assert error["code"] in ("invalid_token", "no_session_access")
                # Nothing about what the route expects leaks to a caller without credentials.
                assert "sequence" not in error["message"]
                assert "field" not in error["message"]


async def test_an_app_refuses_internal_routes_without_a_caller_check() -> None:
    from gshare.clusters.callbacks import unchecked_internal_routes

    plain = FastAPI()

    @plain.post("/internal/v1/anything")
    async def anything() -> None:
        return None

    assert unchecked_internal_routes(plain.routes) == ["/internal/v1/anything"]


async def test_refusals_are_audited_once_per_source_reason_and_window(
    build: Builder, client: httpx.AsyncClient, clock: FrozenClock
) -> None:
    cluster_id = (await build.cluster("lab")).id
    path = f"/internal/v1/clusters/{cluster_id}/inventory"
    for _ in range(30):
        assert (await client.put(path, json={"sequence": 1, "nodes": []})).status_code == 401
    for _ in range(5):
        response = await client.put(path, json={}, headers={"Authorization": "Bearer x.y.z"})
        assert response.status_code == 401
    elsewhere = build.anonymous("2001:db8:1:2::7")
    neighbour = build.anonymous("2001:db8:1:2::8")  # the same /64: the same source
    for caller in (elsewhere, neighbour):
        assert (await caller.put(path, json={})).status_code == 401

    entries = await _callback_entries(build)
    assert [(e.detail["client"], e.detail["reason"]) for e in entries] == [
        ("203.0.113.7", "no_token"),
        ("203.0.113.7", "malformed_token"),
        ("2001:db8:1:2::/64", "no_token"),
    ]
    assert all(e.outcome == "denied" and e.target_id == str(cluster_id) for e in entries)
    counts = {(r.source, r.reason): r.refusals for r in await _refusal_rows(build)}
    assert counts == {
        ("203.0.113.7", "no_token"): 30,
        ("203.0.113.7", "malformed_token"): 5,
        ("2001:db8:1:2::/64", "no_token"): 2,
    }

    # A new window audits the first refusal again.
    clock.advance(service.REFUSAL_WINDOW)
    assert (await client.put(path, json={})).status_code == 401
    assert len(await _callback_entries(build)) == 4

    # The counts are there for the super admin to read, page by page.
    admin = await build.signed_in(await build.user(super_admin=True))
    first = (await admin.get("/api/v1/callback-refusals", params={"limit": 2})).json()
    assert [(r["source"], r["reason"], r["refusals"]) for r in first["items"]] == [
        ("203.0.113.7", "no_token", 1),
        ("2001:db8:1:2::/64", "no_token", 2),
    ]
    rest = (
        await admin.get(
            "/api/v1/callback-refusals", params={"limit": 2, "cursor": first["next_cursor"]}
        )
    ).json()
    assert [(r["source"], r["reason"], r["refusals"]) for r in rest["items"]] == [
        ("203.0.113.7", "malformed_token", 5),
        ("203.0.113.7", "no_token", 30),
    ]
    assert rest["next_cursor"] is None
    assert rest["items"][1]["route"] == "/internal/v1/clusters/{cluster_id}/inventory"
    member = await build.signed_in(await build.user())
    assert (await member.get("/api/v1/callback-refusals")).status_code == 403
    bad = await admin.get("/api/v1/callback-refusals", params={"cursor": "WyJ4Il0"})
    assert bad.status_code == 400


async def test_refusals_record_no_text_the_caller_chose(
    build: Builder, client: httpx.AsyncClient
) -> None:
    cluster_id = (await build.cluster("lab")).id
    headers = [
        {"Authorization": f"Bearer {MARKER * 500}"},
        {"Authorization": f"{MARKER} {MARKER}"},
        # A well-formed token header naming a key that is not ours.
        {
            "Authorization": "Bearer eyJhbGciOiJSUzI1NiIsInR5cCI6Imdza"
            "GFyZS1vcGVyYXRvcitqd3QiLCJraWQiOiJjYWxsZXItY2hvc2VuLXRleHQifQ.e30.c2ln"
        },
    ]
    for header in headers:
        for path in (
            f"/internal/v1/clusters/{cluster_id}/inventory",
            f"/internal/v1/clusters/{MARKER}/inventory",
        ):
            assert (await client.put(path, json={}, headers=header)).status_code == 401
    entries = await _callback_entries(build)
    assert {e.detail["reason"] for e in entries} == {"malformed_token", "no_token", "unknown_key"}
    for entry in entries:
        recorded = json.dumps([entry.target_id, entry.target_type, entry.detail, entry.actor_email])
        assert MARKER not in recorded
    rows = await _refusal_rows(build)
    assert MARKER not in json.dumps([[r.source, r.reason, r.route] for r in rows])


async def test_sources_beyond_the_window_limit_share_one_row(
    build: Builder, clock: FrozenClock
) -> None:
    now = clock.now()
    async with build.sessions() as db, db.begin():
        for n in range(service.MAX_SOURCES_PER_WINDOW + 20):
            refusal = service.Refusal(
                action="cluster.callback",
                reason="no_token",
                route="/internal/x",
                client=f"10.1.{n // 250}.{n % 250}",
            )
            await service.record_refusal(db, refusal, now)
        audited = await db.scalar(
            select(func.count()).where(AuditEntry.action == "cluster.callback")
        )
        rows = await db.scalar(select(func.count()).select_from(CallbackRefusal))
        other = await db.get(
            CallbackRefusal, (service.OTHER_SOURCES, "no_token", service.window_of(now))
        )
    assert audited == service.MAX_SOURCES_PER_WINDOW + 1
    assert rows == service.MAX_SOURCES_PER_WINDOW + 1
    assert other is not None
    assert other.refusals == 20


async def test_old_windows_are_forgotten(build: Builder, clock: FrozenClock) -> None:
    refusal = service.Refusal(
        action="cluster.callback", reason="expired", route="/internal/x", client="192.0.2.9"
    )
    async with build.sessions() as db, db.begin():
        await service.record_refusal(db, refusal, clock.now())
    later = clock.now() + service.REFUSALS_KEPT + timedelta(minutes=1)
    async with build.sessions() as db, db.begin():
        await service.record_refusal(db, refusal, later)
    rows = await _refusal_rows(build)
    assert [r.window_start for r in rows] == [service.window_of(later)]


def test_sources_are_addresses_and_ipv6_networks() -> None:
    assert service.source_of("192.0.2.1") == "192.0.2.1"
    assert service.source_of("::ffff:192.0.2.1") == "192.0.2.1"
    assert (
        service.source_of("2001:db8::1") == service.source_of("2001:db8::ffff") == ("2001:db8::/64")
    )
    assert service.source_of("x" * 500) == "unknown"
    assert service.source_of("") == "unknown"
