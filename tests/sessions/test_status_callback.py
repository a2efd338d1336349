"""The operator's status callback: only the cluster a session runs on may report it, and only a
newer report changes what the API stores."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import httpx
from sqlalchemy import select

from gshare.audit.models import AuditEntry
from gshare.clusters.callbacks import key_ring_of
from gshare.clusters.models import Cluster
from gshare.clusters.tokens import AUDIENCE, TOKEN_TYPE, KeySet, new_key, timed_claims
from gshare.kit.clock import FrozenClock
from gshare.sessions import access
from gshare.sessions.models import InteractiveSession
from tests.builders import Builder


def _access_token(keys: KeySet, placed: InteractiveSession, now) -> str:
    grant = access.Grant(placed.id, placed.owner_id, uuid.uuid4(), now)
    return access.mint_access(keys, grant, now)


def _forged_issuer(keys: KeySet, cluster_id: uuid.UUID, now) -> str:
    claims = timed_claims(f"cluster:{cluster_id}", AUDIENCE, now, timedelta(minutes=5))
    return keys.sign({**claims, "iss": "someone-else"}, TOKEN_TYPE)


async def _keys(build: Builder) -> KeySet:
    return await key_ring_of(build.app).get(datetime.now(UTC))


def _report(generation: int, sequence: int, phase: str = "Running") -> dict:
    return {"generation": generation, "sequence": sequence, "phase": phase, "message": ""}


async def _post(client: httpx.AsyncClient, session_id, token: str | None, body: dict):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return await client.post(
        f"/internal/v1/sessions/{session_id}/status", json=body, headers=headers
    )


async def _stored(build: Builder, session_id: uuid.UUID) -> InteractiveSession:
    async with build.sessions() as db:
        row = await db.get(InteractiveSession, session_id)
        assert row is not None
        return row


async def test_newer_reports_are_stored_and_stale_ones_change_nothing(
    build: Builder, client: httpx.AsyncClient, clock: FrozenClock
) -> None:
    await client.get("/.well-known/gshare-internal-jwks.json")  # creates the key set
    cluster = await build.cluster()
    running = await build.interactive_session(await build.user(), cluster)
    token = (await _keys(build)).mint(str(cluster.id), clock.now())

    first = await _post(client, running.id, token, _report(1, 100, "Pending"))
    assert first.status_code == 200, first.text
    assert first.json() == {"applied": True, "sequence": 100}
    ready = _report(1, 101, "Running")
    assert (await _post(client, running.id, token, ready)).json()["applied"] is True
    row = await _stored(build, running.id)
    assert (row.phase, row.observed_generation, row.status_sequence) == ("Running", 1, 101)
    # A replay, an older sequence, and an older generation with a newer sequence: ignored.
    for stale in (ready, _report(1, 100, "Pending"), _report(0, 500, "Failed")):
        response = await _post(client, running.id, token, stale)
        assert response.json()["applied"] is False
    assert (await _stored(build, running.id)).phase == "Running"
    # A newer generation wins even with a lower sequence (say, after the operator's clock moved).
    paused = _report(2, 50, "Paused")
    assert (await _post(client, running.id, token, paused)).json()["applied"] is True
    row = await _stored(build, running.id)
    assert (row.phase, row.observed_generation, row.status_at) == ("Paused", 2, clock.now())
    async with build.sessions() as db:
        contacted = await db.get(Cluster, cluster.id)
        assert contacted is not None
        assert contacted.last_contact_at == clock.now()


async def test_an_ended_sessions_record_is_final(
    build: Builder, client: httpx.AsyncClient, clock: FrozenClock
) -> None:
    await client.get("/.well-known/gshare-internal-jwks.json")
    cluster = await build.cluster()
    ended = await build.interactive_session(await build.user(), cluster, ended=True)
    token = (await _keys(build)).mint(str(cluster.id), clock.now())
    response = await _post(client, ended.id, token, _report(9, 9, "Running"))
    assert response.json()["applied"] is False
    assert (await _stored(build, ended.id)).phase == "Pending"


async def test_only_the_sessions_own_cluster_may_report_it(
    build: Builder, client: httpx.AsyncClient, clock: FrozenClock
) -> None:
    await client.get("/.well-known/gshare-internal-jwks.json")
    mine, other = await build.cluster("mine"), await build.cluster("other")
    owner = await build.user()
    placed = await build.interactive_session(owner, mine)
    unplaced = await build.interactive_session(owner, None)
    keys = await _keys(build)
    now = clock.now()
    cases = {
        "no token": (placed.id, None),
        "a key that is not ours": (placed.id, KeySet([new_key(now)]).mint(str(mine.id), now)),
        "expired": (placed.id, keys.mint(str(mine.id), now - timedelta(hours=2))),
        "another cluster's session": (placed.id, keys.mint(str(other.id), now)),
        "a session access token": (placed.id, _access_token(keys, placed, now)),
        "issuer is not the subject": (placed.id, _forged_issuer(keys, mine.id, now)),
        "a session on no cluster": (unplaced.id, keys.mint(str(mine.id), now)),
        "no such session": (uuid.uuid4(), keys.mint(str(mine.id), now)),
    }
    for reason, (session_id, token) in cases.items():
        response = await _post(client, session_id, token, _report(1, 1, "Failed"))
        assert response.status_code == 401, reason
        assert response.json()["error"]["code"] == "invalid_token", reason
    assert (await _stored(build, placed.id)).phase == "Pending"
    assert (await _stored(build, unplaced.id)).phase == "Pending"
    async with build.sessions() as db:
        denied = (
            await db.scalars(select(AuditEntry).where(AuditEntry.action == "cluster.callback"))
        ).all()
    # One entry per reason from this client in the window; the three sessions this cluster does
    # not run share one.
    assert sorted(e.detail["reason"] for e in denied) == [
        "expired",
        "no_token",
        "not_owned",
        "unknown_key",
        "wrong_issuer",
        "wrong_type",
    ]
    assert all(e.outcome == "denied" and e.target_type == "session" for e in denied)
    assert {e.target_id for e in denied if e.detail["reason"] == "not_owned"} == {str(placed.id)}


async def test_bad_reports_are_refused_and_change_nothing(
    build: Builder, client: httpx.AsyncClient, clock: FrozenClock
) -> None:
    await client.get("/.well-known/gshare-internal-jwks.json")
    cluster = await build.cluster()
    placed = await build.interactive_session(await build.user(), cluster)
    token = (await _keys(build)).mint(str(cluster.id), clock.now())
    for bad in (
        {**_report(1, 1), "phase": "Exploded"},
        {**_report(1, 1), "url": "https://elsewhere.example/"},  # links are the API's own
        {**_report(2**63, 1)},
        {**_report(1, 2**63)},
        {**_report(1, int(clock.now().timestamp() * 1000) + 2 * 3600 * 1000)},  # clock ahead
        {**_report(1, 1), "message": "x" * 1001},
        {**_report(1, 0)},
        {**_report(1, 1), "extra": True},
    ):
        response = await _post(client, placed.id, token, bad)
        assert response.status_code == 422, bad
    assert (await _stored(build, placed.id)).status_sequence == 0
