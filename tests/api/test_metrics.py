"""The API's metrics as a scrape of the real endpoint sees them: requests timed by route
template (never the raw path), admissions by outcome, refused callbacks by reason."""

from __future__ import annotations

import uuid

import httpx

from gshare.capacity import tasks as capacity_tasks
from tests.builders import Builder
from tests.scrape import label_values, metrics_endpoint, scrape, value
from tests.sessions.world import API, session_world, settings_of

TIMED = "gshare_http_request_duration_seconds_count"
ADMISSIONS = "gshare_admissions_total"
REFUSALS = "gshare_admission_refusals_total"


async def test_requests_are_timed_by_route_template(client: httpx.AsyncClient) -> None:
    template = {"method": "GET", "route": "/api/v1/sessions/{session_id}", "status": "4xx"}
    session_id = str(uuid.uuid4())
    with metrics_endpoint() as server:
        before = await scrape(server)
        assert (await client.get(f"{API}/sessions/{session_id}")).status_code == 401
        assert (await client.get("/healthz")).status_code == 200
        after = await scrape(server)
    assert value(after, TIMED, **template) == value(before, TIMED, **template) + 1
    health = {"method": "GET", "route": "/healthz", "status": "2xx"}
    assert value(after, TIMED, **health) == value(before, TIMED, **health) + 1
    assert not any(session_id in route for route in label_values(after, TIMED, "route"))
    every = value(after, "gshare_http_request_duration_seconds_bucket", **template, le="+Inf")
    assert every == value(after, TIMED, **template)


async def test_unknown_paths_add_no_label_values(client: httpx.AsyncClient) -> None:
    with metrics_endpoint() as server:
        await client.get(f"/{uuid.uuid4().hex}")
        await client.post(f"{API}/{uuid.uuid4().hex}")
        await client.request("BREW", f"/internal/{uuid.uuid4().hex}")
        routes = label_values(await scrape(server), TIMED, "route")
        methods = label_values(await scrape(server), TIMED, "method")
        strangers = [uuid.uuid4().hex for _ in range(3)]
        await client.get(f"/{strangers[0]}")
        await client.post(f"{API}/{strangers[1]}")
        await client.request("BREW", f"/internal/{strangers[2]}")
        seen = await scrape(server)
    assert label_values(seen, TIMED, "route") == routes
    assert label_values(seen, TIMED, "method") == methods
    assert "BREW" not in methods
    assert "other" in methods
    assert not any(s in route for s in strangers for route in routes)


async def test_admissions_are_counted_by_outcome_once_decided(build: Builder) -> None:
    # One card; ten credits each: one exclusive hold (8 an hour) each, not two.
    w = await session_world(build, n_cards=1, user_credits=10)
    with metrics_endpoint() as server:
        before = await scrape(server)
        first = await w.create(0, "exclusive")
        queued = await w.create(1, "exclusive")
        refused = await w.members[0].post(f"{API}/sessions", json=w.body("exclusive"))
        assert (first["state"], queued["state"]) == ("starting", "queued")
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "insufficient_credits"
        decided = await scrape(server)

        assert (await w.act(0, first["id"], "stop")).status_code == 200
        settings = settings_of(build)
        summary = await capacity_tasks.dequeue_once(build.sessions, settings, build.clock.now())
        assert len(summary.admitted) == 1
        walked = await scrape(server)

    def more(after: dict, name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert more(decided, ADMISSIONS, via="request", outcome="placed") == 1
    assert more(decided, ADMISSIONS, via="request", outcome="queued") == 1
    assert more(decided, ADMISSIONS, via="request", outcome="refused") == 1
    assert more(decided, REFUSALS, via="request", reason="insufficient_credits") == 1
    assert more(walked, ADMISSIONS, via="queue", outcome="placed") == 1
    assert value(walked, "gshare_queue_length") == 0


async def test_refused_callbacks_are_counted_by_reason_and_route(
    build: Builder, client: httpx.AsyncClient
) -> None:
    await client.get("/.well-known/gshare-internal-jwks.json")  # creates the key set
    cluster = await build.cluster("lab")
    route = "/internal/v1/clusters/{cluster_id}/inventory"
    counted = {"reason": "no_token", "route": route}
    with metrics_endpoint() as server:
        before = value(await scrape(server), "gshare_callback_refusals_total", **counted)
        body = {"sequence": 1, "nodes": []}
        response = await client.put(f"/internal/v1/clusters/{cluster.id}/inventory", json=body)
        assert response.status_code == 401
        after = await scrape(server)
    assert value(after, "gshare_callback_refusals_total", **counted) == before + 1


async def test_the_apis_own_port_does_not_serve_the_metrics(client: httpx.AsyncClient) -> None:
    response = await client.get("/metrics")
    assert response.status_code == 404
    assert "gshare_" not in response.text
