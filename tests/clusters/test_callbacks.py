"""Operator callbacks: the inventory report, verified against the API's key set."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import httpx
import jwt
from sqlalchemy import select

from gshare.audit.models import AuditEntry
from gshare.clusters.callbacks import key_ring_of
from gshare.clusters.models import Cluster
from gshare.clusters.tokens import KeySet, new_key
from gshare.kit.clock import FrozenClock
from tests.builders import Builder


async def _keys(client_app) -> KeySet:
    return await key_ring_of(client_app).get(datetime.now(UTC))


def _report(sequence: int, cards: list[tuple[str, str, bool]]) -> dict:
    nodes: dict[str, list] = {}
    for node, card_uuid, healthy in cards:
        nodes.setdefault(node, []).append(
            {
                "uuid": card_uuid,
                "model": "NVIDIA-A100-SXM4-80GB",
                "memory_mib": 81920,
                "cores": 100,
                "split_count": 10,
                "numa": 0,
                "healthy": healthy,
            }
        )
    return {"sequence": sequence, "nodes": [{"name": n, "cards": c} for n, c in nodes.items()]}


async def _put(client: httpx.AsyncClient, cluster_id, token: str | None, body: dict):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return await client.put(
        f"/internal/v1/clusters/{cluster_id}/inventory", json=body, headers=headers
    )


async def test_the_jwks_publishes_public_keys_only(client: httpx.AsyncClient) -> None:
    body = (await client.get("/.well-known/gshare-internal-jwks.json")).json()
    assert len(body["keys"]) == 1
    key = body["keys"][0]
    assert (key["kty"], key["alg"], key["use"]) == ("RSA", "RS256", "sig")
    assert key["kid"]
    assert "d" not in key
    assert "p" not in key


async def test_inventory_is_stored_and_cards_that_vanish_become_missing(
    build: Builder, client: httpx.AsyncClient, sessions, clock: FrozenClock
) -> None:
    await client.get("/.well-known/gshare-internal-jwks.json")  # creates the key set
    cluster_id = (await build.cluster("lab")).id
    token = (await _keys(build.app)).mint(str(cluster_id), clock.now())
    first = _report(
        1, [("gpu-0", "GPU-a", True), ("gpu-0", "GPU-b", True), ("gpu-1", "GPU-c", False)]
    )
    response = await _put(client, cluster_id, token, first)
    assert response.status_code == 200, response.text
    assert response.json() == {"applied": True, "sequence": 1}
    second = _report(2, [("gpu-0", "GPU-a", True), ("gpu-1", "GPU-c", True)])
    assert (await _put(client, cluster_id, token, second)).json()["applied"] is True
    # A replay of the older report changes nothing.
    assert (await _put(client, cluster_id, token, first)).json()["applied"] is False

    root = await build.user(super_admin=True)
    admin = await build.signed_in(root)
    detail = (await admin.get(f"/api/v1/clusters/{cluster_id}")).json()
    listed_cards = (await admin.get(f"/api/v1/clusters/{cluster_id}/cards")).json()["items"]
    cards = {c["uuid"]: (c["healthy"], c["missing"]) for c in listed_cards}
    assert cards == {"GPU-a": (True, False), "GPU-b": (True, True), "GPU-c": (True, False)}
    assert (detail["nodes"], detail["cards"], detail["healthy_cards"], detail["missing_cards"]) == (
        2,
        3,
        2,
        1,
    )
    listed = (await admin.get("/api/v1/clusters")).json()["items"]
    assert [c["name"] for c in listed] == ["lab"]


async def test_bad_callbacks_get_401_and_are_audited(
    build: Builder, client: httpx.AsyncClient, sessions, clock: FrozenClock
) -> None:
    await client.get("/.well-known/gshare-internal-jwks.json")
    mine = (await build.cluster("mine")).id
    other = (await build.cluster("other")).id
    keys = await _keys(build.app)
    now = clock.now()
    stranger = KeySet([new_key(now)])
    key = keys.current
    wrong_audience = jwt.encode(
        {
            "iss": f"cluster:{mine}",
            "sub": f"cluster:{mine}",
            "aud": "kubernetes",
            "iat": int(now.timestamp()),
            "exp": int((now + timedelta(minutes=5)).timestamp()),
            "jti": "x",
        },
        key.private(),
        algorithm="RS256",
        headers={"kid": key.kid, "typ": "gshare-operator+jwt"},
    )
    cases = {
        "no token": None,
        "other key": stranger.mint(str(mine), now),
        "wrong audience": wrong_audience,
        "expired": keys.mint(str(mine), now - timedelta(hours=2), timedelta(minutes=10)),
        "other cluster": keys.mint(str(other), now),
    }
    for reason, token in cases.items():
        response = await _put(client, mine, token, _report(1, [("n", "GPU-x", True)]))
        assert response.status_code == 401, reason
        assert response.json()["error"]["code"] == "invalid_token"
    async with sessions() as db:
        denied = (
            await db.scalars(select(AuditEntry).where(AuditEntry.action == "cluster.callback"))
        ).all()
    assert sorted(e.detail["reason"] for e in denied) == [
        "expired",
        "invalid_claims",
        "no_token",
        "unknown_key",
        "wrong_cluster",
    ]
    assert all(e.outcome == "denied" and e.target_id == str(mine) for e in denied)
    detail_client = await build.signed_in(await build.user(super_admin=True))
    assert (await detail_client.get(f"/api/v1/clusters/{mine}")).json()["cards"] == 0


async def test_a_sessions_domain_must_be_a_domain_name(build: Builder) -> None:
    admin = await build.signed_in(await build.user(super_admin=True))
    bad_ones = (
        "https://sessions.example/",
        "localhost",
        "a..b",
        "-x.example",
        "x" * 201 + ".io",
        "sessions.example:0",
        "sessions.example:65536",
        "sessions.example:",
        "sessions.example:80:80",
        "sessions.example:123456",
    )
    for bad in bad_ones:
        response = await admin.post(
            "/api/v1/clusters", json={"name": "lab", "kubeconfig": "x", "sessions_domain": bad}
        )
        assert response.status_code == 422, bad
        assert response.json()["error"]["code"] == "invalid_request"


async def test_inventory_reports_out_of_bounds_are_refused(
    build: Builder, client: httpx.AsyncClient, sessions, clock: FrozenClock
) -> None:
    await client.get("/.well-known/gshare-internal-jwks.json")
    cluster_id = (await build.cluster("lab")).id
    token = (await _keys(build.app)).mint(str(cluster_id), clock.now())
    twice = _report(1, [("gpu-0", "GPU-a", True), ("gpu-1", "GPU-a", True)])
    huge = _report(1, [("gpu-0", "GPU-a", True)])
    huge["nodes"][0]["cards"][0]["memory_mib"] = 2**31
    for body in (twice, huge, _report(2**63, [])):
        assert (await _put(client, cluster_id, token, body)).status_code == 422
    # A sequence from far in the future would freeze the inventory until then.
    future_ms = int((clock.now() + timedelta(days=2)).timestamp() * 1000)
    ahead = await _put(client, cluster_id, token, _report(future_ms, [("n", "GPU-a", True)]))
    assert ahead.status_code == 422
    assert ahead.json()["error"]["code"] == "sequence_in_future"
    now_ms = int(clock.now().timestamp() * 1000)
    assert (await _put(client, cluster_id, token, _report(now_ms, []))).json()["applied"] is True


async def test_one_clusters_store_trouble_does_not_stop_the_token_refresh(
    build: Builder, sessions, clock: FrozenClock
) -> None:
    """The store fails for one cluster and has nothing for the other: both are marked, neither
    stops the pass."""
    from gshare.clusters.tasks import refresh_operator_tokens

    broken = (await build.cluster("a-broken")).id
    empty = (await build.cluster("b-empty")).id

    class FailingFirst:
        async def get(self, cluster_id: uuid.UUID) -> str | None:
            if cluster_id == broken:
                raise OSError("the secret store is down")
            return None

    outcome = await refresh_operator_tokens(
        sessions, FailingFirst(), KeySet([new_key(clock.now())]), clock.now()
    )  # type: ignore[arg-type]
    assert outcome.failed == 2
    async with sessions() as db:
        rows = {c.name: c for c in (await db.scalars(select(Cluster))).all()}
    assert rows["a-broken"].status == "unreachable"
    assert "the secret store is down" in rows["a-broken"].status_message
    assert (
        rows["b-empty"].status_message
        == "token refresh failed: its kubeconfig is missing from the store"
    )
    assert empty in {c.id for c in rows.values()}
