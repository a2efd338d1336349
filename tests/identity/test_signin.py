"""Sign-in hardening, through the real API on a real database."""

from __future__ import annotations

from datetime import datetime, timedelta
from ipaddress import IPv4Network
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from gshare.audit.models import AuditEntry
from gshare.identity.models import LoginSession, SignInFailure
from gshare.kit.clock import FrozenClock
from gshare.kit.settings import Settings
from tests.builders import PASSWORD, Builder

LOGIN = "/api/v1/auth/login"
NEW_PASSWORD = "orbit-lantern-quiet-river-88"


async def test_sign_in_sets_a_hardened_cookie_and_returns_the_csrf_token(build: Builder) -> None:
    user = await build.user("Ada Lovelace")
    client = build.anonymous()
    response = await client.post(LOGIN, json={"email": user.email.upper(), "password": PASSWORD})
    assert response.status_code == 200
    body = response.json()
    assert body["user"]["email"] == user.email
    assert body["must_change_password"] is False
    assert len(body["csrf_token"]) >= 32
    cookie = response.headers["set-cookie"]
    assert cookie.startswith("gshare_session=")
    assert "HttpOnly" in cookie
    assert "SameSite=lax" in cookie or "samesite=lax" in cookie.lower()
    assert "Secure" not in cookie  # plain HTTP in tests


async def test_cookie_is_secure_over_https(build: Builder) -> None:
    user = await build.user()
    transport = httpx.ASGITransport(app=build.app)
    async with httpx.AsyncClient(transport=transport, base_url="https://testserver") as client:
        response = await client.post(LOGIN, json={"email": user.email, "password": PASSWORD})
    assert response.status_code == 200
    assert "Secure" in response.headers["set-cookie"]


async def test_unknown_email_and_wrong_password_get_the_same_answer(build: Builder) -> None:
    user = await build.user()
    client = build.anonymous()
    wrong = await client.post(LOGIN, json={"email": user.email, "password": "not-the-password1"})
    unknown = await client.post(
        LOGIN, json={"email": "nobody@example.org", "password": "not-the-password1"}
    )
    assert wrong.status_code == unknown.status_code == 401
    assert wrong.json() == unknown.json()
    assert wrong.json()["error"]["code"] == "invalid_credentials"


async def test_failed_sign_ins_are_throttled_per_account(
    build: Builder, clock: FrozenClock
) -> None:
    user = await build.user()
    for i in range(10):
        client = build.anonymous(client_ip=f"198.51.100.{i + 20}")
        response = await client.post(
            LOGIN, json={"email": user.email, "password": "wrong-pass-123"}
        )
        assert response.status_code == 401
    # The right password is refused too while the account is throttled.
    client = build.anonymous(client_ip="198.51.100.99")
    response = await client.post(LOGIN, json={"email": user.email, "password": PASSWORD})
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "too_many_attempts"
    assert 1 <= int(response.headers["Retry-After"]) <= 60
    clock.advance(timedelta(seconds=61))
    response = await client.post(LOGIN, json={"email": user.email, "password": PASSWORD})
    assert response.status_code == 200


async def test_hourly_account_limit(build: Builder, clock: FrozenClock) -> None:
    user = await build.user()
    for i in range(100):
        client = build.anonymous(client_ip=f"10.0.{i // 200}.{i % 200}")
        if i % 10 == 0:
            clock.advance(timedelta(seconds=61))
        response = await client.post(
            LOGIN, json={"email": user.email, "password": "wrong-pass-123"}
        )
        assert response.status_code == 401, i
    clock.advance(timedelta(seconds=61))
    response = await build.anonymous().post(LOGIN, json={"email": user.email, "password": PASSWORD})
    assert response.status_code == 429
    assert int(response.headers["Retry-After"]) > 60


async def test_failed_sign_ins_are_throttled_per_client(build: Builder) -> None:
    client = build.anonymous(client_ip="192.0.2.50")
    for i in range(30):
        response = await client.post(
            LOGIN, json={"email": f"guess{i}@example.org", "password": "wrong-pass-123"}
        )
        assert response.status_code == 401
    response = await client.post(
        LOGIN, json={"email": "guess-more@example.org", "password": "wrong-pass-123"}
    )
    assert response.status_code == 429
    assert "Retry-After" in response.headers


async def test_one_ipv6_host_cannot_step_around_the_client_throttle(build: Builder) -> None:
    # A host is routinely handed a whole /64: each guess from a new address in it still counts.
    for i in range(30):
        client = build.anonymous(client_ip=f"2001:db8:0:7::{i + 1:x}")
        response = await client.post(
            LOGIN, json={"email": f"guess{i}@example.org", "password": "wrong-pass-123"}
        )
        assert response.status_code == 401
    response = await build.anonymous(client_ip="2001:db8:0:7::ffff").post(
        LOGIN, json={"email": "guess-more@example.org", "password": "wrong-pass-123"}
    )
    assert response.status_code == 429
    elsewhere = await build.anonymous(client_ip="2001:db8:0:8::1").post(
        LOGIN, json={"email": "guess-more@example.org", "password": "wrong-pass-123"}
    )
    assert elsewhere.status_code == 401


async def test_failed_sign_in_is_audited_even_though_the_request_failed(
    build: Builder, sessions
) -> None:
    user = await build.user()
    await build.anonymous().post(LOGIN, json={"email": user.email, "password": "wrong-pass-123"})
    async with sessions() as db:
        rows = (await db.scalars(select(AuditEntry).where(AuditEntry.action == "auth.login"))).all()
    assert [(r.outcome, r.target_id, r.detail["reason"]) for r in rows] == [
        ("failed", user.email, "wrong_password")
    ]


async def test_state_changes_need_the_csrf_header(build: Builder) -> None:
    admin = await build.user(super_admin=True)
    client = await build.signed_in(admin)
    token = client.headers.pop("X-CSRF-Token")
    response = await client.post("/api/v1/orgs", json={"name": "Physics"})
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "csrf_failed"
    forged = ("y" if token[0] == "x" else "x") + token[1:]  # differs from the token
    response = await client.post(
        "/api/v1/orgs", json={"name": "Physics"}, headers={"X-CSRF-Token": forged}
    )
    assert response.status_code == 403
    response = await client.post(
        "/api/v1/orgs", json={"name": "Physics"}, headers={"X-CSRF-Token": token}
    )
    assert response.status_code == 201
    me = await client.get("/api/v1/me")
    assert me.json()["csrf_token"] == token


async def test_a_new_user_must_change_the_password_first(build: Builder) -> None:
    user = await build.user("Grace Hopper", must_change=True)
    client = await build.signed_in(user)
    me = await client.get("/api/v1/me")
    assert me.status_code == 200
    assert me.json()["must_change_password"] is True
    blocked = await client.get("/api/v1/orgs")
    assert blocked.status_code == 403
    assert blocked.json()["error"]["code"] == "password_change_required"
    weak = await client.post(
        "/api/v1/auth/password",
        json={"current_password": PASSWORD, "new_password": "password1234"},
    )
    assert weak.status_code == 400
    assert weak.json()["error"]["code"] == "password_rejected"
    personal = await client.post(
        "/api/v1/auth/password",
        json={"current_password": PASSWORD, "new_password": "grace-hopper-zebra-77"},
    )
    assert personal.status_code == 400
    changed = await client.post(
        "/api/v1/auth/password",
        json={"current_password": PASSWORD, "new_password": NEW_PASSWORD},
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["must_change_password"] is False
    assert (await client.get("/api/v1/orgs")).status_code == 200


async def test_password_change_needs_the_current_password(build: Builder) -> None:
    user = await build.user()
    client = await build.signed_in(user)
    response = await client.post(
        "/api/v1/auth/password",
        json={"current_password": "not-my-password-1", "new_password": NEW_PASSWORD},
    )
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_credentials"


async def test_password_change_ends_the_other_sessions(build: Builder) -> None:
    user = await build.user()
    laptop = await build.signed_in(user)
    phone = await build.signed_in(user)
    old_cookie = laptop.cookies.get("gshare_session")
    old_csrf = laptop.headers["X-CSRF-Token"]
    response = await laptop.post(
        "/api/v1/auth/password",
        json={"current_password": PASSWORD, "new_password": NEW_PASSWORD},
    )
    assert response.status_code == 200
    # This browser continues with a new cookie and a new CSRF token; the old ones are dead.
    new_csrf = response.json()["csrf_token"]
    assert new_csrf != old_csrf
    assert laptop.cookies.get("gshare_session") != old_cookie
    assert (await laptop.get("/api/v1/me")).status_code == 200
    stale = await laptop.post("/api/v1/auth/logout")
    assert stale.status_code == 403  # the old CSRF token
    replay = build.anonymous()
    replay.cookies.set("gshare_session", old_cookie)
    assert (await replay.get("/api/v1/me")).status_code == 401
    assert (await phone.get("/api/v1/me")).status_code == 401
    laptop.headers["X-CSRF-Token"] = new_csrf
    assert (await laptop.post("/api/v1/auth/logout")).status_code == 204
    assert (await build.signed_in(user, NEW_PASSWORD)).headers["X-CSRF-Token"]


async def test_sign_out_revokes_the_session(build: Builder) -> None:
    user = await build.user()
    client = await build.signed_in(user)
    cookie = client.cookies.get("gshare_session")
    assert (await client.post("/api/v1/auth/logout")).status_code == 204
    replay = build.anonymous()
    replay.cookies.set("gshare_session", cookie)
    assert (await replay.get("/api/v1/me")).status_code == 401


async def test_idle_timeout_ends_the_session(build: Builder, clock: FrozenClock) -> None:
    user = await build.user()
    client = await build.signed_in(user)
    clock.advance(timedelta(hours=7, minutes=59))
    assert (await client.get("/api/v1/me")).status_code == 200  # activity keeps it alive
    clock.advance(timedelta(hours=7, minutes=59))
    assert (await client.get("/api/v1/me")).status_code == 200
    clock.advance(timedelta(hours=8))
    response = await client.get("/api/v1/me")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "session_expired"


async def test_absolute_timeout_ends_even_an_active_session(
    build: Builder, clock: FrozenClock
) -> None:
    user = await build.user()
    client = await build.signed_in(user)
    started = clock.now()
    while clock.now() - started < timedelta(days=8):
        clock.advance(timedelta(hours=7))  # active every 7 hours, never idle for 8
        if (await client.get("/api/v1/me")).status_code != 200:
            break
    assert clock.now() - started == timedelta(days=7)


async def test_deactivating_a_user_ends_their_sessions_at_once(build: Builder) -> None:
    admin = await build.user(super_admin=True)
    user = await build.user()
    admin_client = await build.signed_in(admin)
    user_client = await build.signed_in(user)
    response = await admin_client.patch(f"/api/v1/users/{user.id}", json={"active": False})
    assert response.status_code == 200
    assert response.json()["active"] is False
    assert (await user_client.get("/api/v1/me")).status_code == 401
    again = await build.anonymous().post(LOGIN, json={"email": user.email, "password": PASSWORD})
    assert again.status_code == 401


async def test_password_check_reports_the_estimators_verdict(build: Builder) -> None:
    user = await build.user("Alan Turing", must_change=True)
    client = await build.signed_in(user)
    weak = await client.post("/api/v1/auth/password-check", json={"password": "alanturing123"})
    assert weak.status_code == 200
    assert weak.json()["acceptable"] is False
    strong = await client.post("/api/v1/auth/password-check", json={"password": NEW_PASSWORD})
    assert strong.json()["acceptable"] is True
    assert strong.json()["score"] >= 3


async def test_long_passwords_up_to_256_characters_are_accepted(build: Builder) -> None:
    user = await build.user()
    client = await build.signed_in(user)
    long_password = "correct horse battery staple " * 8  # 232 characters
    response = await client.post(
        "/api/v1/auth/password",
        json={"current_password": PASSWORD, "new_password": long_password},
    )
    assert response.status_code == 200, response.text
    assert await build.signed_in(user, long_password)


async def test_login_records_one_audit_entry(build: Builder, sessions) -> None:
    user = await build.user()
    await build.signed_in(user)
    async with sessions() as db:
        count = await db.scalar(
            select(func.count()).where(
                AuditEntry.action == "auth.login", AuditEntry.outcome == "allowed"
            )
        )
    assert count == 1


async def test_long_emails_are_throttled_and_audited_too(build: Builder, sessions) -> None:
    user = await build.user(email=("x" * 90) + "@example.org")
    for i in range(10):
        client = build.anonymous(client_ip=f"198.51.100.{i + 20}")
        response = await client.post(LOGIN, json={"email": user.email, "password": "wrong-123"})
        assert response.status_code == 401, response.text
    refused = await build.anonymous("198.51.100.99").post(
        LOGIN, json={"email": user.email, "password": PASSWORD}
    )
    assert refused.status_code == 429
    async with sessions() as db:
        failed = await db.scalar(
            select(func.count()).where(
                AuditEntry.action == "auth.login", AuditEntry.target_id == user.email
            )
        )
    assert failed == 10


async def test_guesses_sent_in_parallel_do_not_slip_past_the_throttle(build: Builder) -> None:
    import asyncio

    user = await build.user()

    async def guess(i: int) -> int:
        client = build.anonymous(client_ip=f"203.0.113.{i + 1}")
        response = await client.post(LOGIN, json={"email": user.email, "password": f"wrong-{i}"})
        return response.status_code

    outcomes = await asyncio.gather(*(guess(i) for i in range(40)))
    assert set(outcomes) <= {401, 429}
    assert outcomes.count(401) <= 10, outcomes  # the limit is 10 a minute
    assert outcomes.count(429) >= 30


async def test_a_guess_ending_while_another_reads_the_failures_is_still_counted(
    build: Builder, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gap between reading the failures stored and the attempts under way: a parallel
    guess that commits its failure and ends in between must not go uncounted."""
    from gshare.identity import repository, signin
    from gshare.identity.throttle import LONGEST_WINDOW

    user = await build.user()
    async with build.sessions() as db, db.begin():
        for i in range(9):  # one short of the limit of 10 a minute
            at = clock.now() - timedelta(seconds=i + 1)
            await repository.add_failure(db, user.email, f"192.0.2.{i}", at, keep=LONGEST_WINDOW)
    other = signin._begin(user.email, "192.0.2.200", clock.now())
    read = repository.failure_times
    ended: list[bool] = []

    async def read_then_other_guess_fails(db: AsyncSession, **where: Any) -> list[datetime]:
        times = await read(db, **where)
        if where.get("email_key") and not ended:
            ended.append(True)
            async with build.sessions() as own, own.begin():
                await repository.add_failure(
                    own, user.email, "192.0.2.200", clock.now(), keep=LONGEST_WINDOW
                )
            other.end()
        return times

    monkeypatch.setattr(repository, "failure_times", read_then_other_guess_fails)
    response = await build.anonymous(client_ip="192.0.2.201").post(
        LOGIN, json={"email": user.email, "password": "wrong-again"}
    )
    assert response.status_code == 429, response.json()


async def test_guessing_the_current_password_is_throttled(build: Builder) -> None:
    user = await build.user()
    client = await build.signed_in(user)
    for _ in range(10):
        wrong = await client.post(
            "/api/v1/auth/password",
            json={"current_password": "not-it-at-all-1", "new_password": NEW_PASSWORD},
        )
        assert wrong.status_code == 401
    right = await client.post(
        "/api/v1/auth/password", json={"current_password": PASSWORD, "new_password": NEW_PASSWORD}
    )
    assert right.status_code == 429
    assert right.json()["error"]["code"] == "too_many_attempts"


async def test_nul_characters_are_refused_not_a_500(build: Builder) -> None:
    root = await build.signed_in(await build.user(super_admin=True))
    anonymous = build.anonymous()
    sign_in = await anonymous.post(LOGIN, json={"email": "a\x00b@example.org", "password": "x"})
    assert sign_in.status_code == 422
    org = await root.post("/api/v1/orgs", json={"name": "Phys\x00ics"})
    assert org.status_code == 422
    assert org.json()["error"]["code"] == "invalid_request"
    for path, params in (
        ("/api/v1/users", {"q": "a\x00"}),
        ("/api/v1/audit", {"action": "\x00"}),
        ("/api/v1/audit", {"target_id": "\x00"}),
        ("/api/v1/audit", {"target_type": "\x00"}),
    ):
        response = await root.get(path, params=params)
        assert response.status_code == 422, path
    # A lowercase form longer than the limit is refused too (some letters grow when lowered).
    grown = "\u0130" * 200 + "@example.org"
    created = await root.post(
        "/api/v1/users", json={"email": grown, "name": "Long", "initial_password": NEW_PASSWORD}
    )
    assert created.status_code == 422
    assert (await anonymous.post(LOGIN, json={"email": grown, "password": "x"})).status_code == 401


async def test_garbage_cursors_on_tenancy_lists_are_a_400(build: Builder) -> None:
    import base64
    import json

    root = await build.signed_in(await build.user(super_admin=True))
    for value in (
        ["x"],
        [1, 2],
        [None, None],
        ["2026-01-01T00:00:00+00:00", "nope"],
        ["2026-01-01T00:00:00+00:00", 5],
        ["2026-01-01T00:00:00", "00000000-0000-4000-8000-000000000001"],
    ):
        cursor = base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")
        for path in ("/api/v1/orgs", "/api/v1/users"):
            response = await root.get(path, params={"cursor": cursor})
            assert response.status_code == 400, (path, value, response.text)
            assert response.json()["error"]["code"] == "invalid_cursor"


def test_attempts_whose_outcome_never_came_are_forgotten() -> None:
    from datetime import UTC, datetime

    from gshare.identity.signin import Attempts

    attempts = Attempts()
    start = datetime(2026, 1, 1, tzinfo=UTC)
    lost = attempts.begin(("account:a", "client:c"), start)
    later = start + timedelta(minutes=2)
    current = attempts.begin(("account:a", "client:c"), later)
    assert attempts.others("account:a", current, later) == []
    assert attempts._open["account:a"] == [current]  # the lost one is gone, not only ignored
    current.end()
    lost.end()  # ending twice, or after pruning, is harmless
    assert attempts._open == {}


async def _failures_by_client(sessions) -> list[str]:
    async with sessions() as db:
        return list(await db.scalars(select(SignInFailure.client).order_by(SignInFailure.id)))


async def _failed_login_clients(sessions) -> list[str]:
    async with sessions() as db:
        rows = await db.scalars(
            select(AuditEntry)
            .where(AuditEntry.action == "auth.login", AuditEntry.outcome == "failed")
            .order_by(AuditEntry.id)
        )
        return [row.detail["client"] for row in rows]


def _behind(app, peer: str, **headers: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(peer, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://testserver", headers=headers)


async def test_a_long_forwarded_address_is_still_counted_and_audited(
    build: Builder, sessions
) -> None:
    # A trusted proxy (loopback by default) relays whatever the client put in X-Forwarded-For.
    garbage = "1.2.3.4, " + "x" * 300
    async with _behind(build.app, "127.0.0.1", **{"X-Forwarded-For": garbage}) as client:
        for i in range(30):
            response = await client.post(
                LOGIN, json={"email": f"guess{i}@example.org", "password": "wrong-pass-123"}
            )
            assert response.status_code == 401, response.text
        refused = await client.post(
            LOGIN, json={"email": "one-more@example.org", "password": "wrong-pass-123"}
        )
    assert refused.status_code == 429
    assert await _failures_by_client(sessions) == ["unknown"] * 30
    assert await _failed_login_clients(sessions) == ["unknown"] * 30


async def test_an_unparseable_peer_address_is_recorded_as_a_bounded_placeholder(
    build: Builder, sessions
) -> None:
    user = await build.user()
    for peer in ("y" * 200, "fe80::1%" + "z" * 200):
        response = await build.anonymous(client_ip=peer).post(
            LOGIN, json={"email": user.email, "password": "wrong-pass-123"}
        )
        assert response.status_code == 401, response.text
    signed_in = await build.anonymous(client_ip="::ffff:198.51.100.7").post(
        LOGIN, json={"email": user.email, "password": PASSWORD}
    )
    assert signed_in.status_code == 200
    # Failures are counted per client bucket: an IPv6 address by its /64.
    assert await _failures_by_client(sessions) == ["unknown", "fe80::/64"]
    async with sessions() as db:
        login = (await db.scalars(select(LoginSession))).one()
    assert login.client == "198.51.100.7"


async def test_forwarded_for_is_believed_only_from_a_trusted_proxy(
    build: Builder, sessions
) -> None:
    user = await build.user()
    body = {"email": user.email, "password": "wrong-pass-123"}
    forwarded = {"X-Forwarded-For": "192.0.2.1, 198.51.100.5"}
    async with _behind(build.app, "127.0.0.1", **forwarded) as via_proxy:
        assert (await via_proxy.post(LOGIN, json=body)).status_code == 401
    async with _behind(build.app, "203.0.113.9", **forwarded) as direct:
        assert (await direct.post(LOGIN, json=body)).status_code == 401
    # The proxy's own hop, not the client's claim left of it; the untrusted peer itself.
    assert await _failures_by_client(sessions) == ["198.51.100.5", "203.0.113.9"]
    assert await _failed_login_clients(sessions) == ["198.51.100.5", "203.0.113.9"]


async def test_trusted_proxies_are_a_setting(
    settings: Settings, database_url: str, engine, clock: FrozenClock, sessions
) -> None:
    from gshare.api.app import create_app

    configured = settings.model_copy(update={"trusted_proxies": (IPv4Network("10.0.0.0/8"),)})
    app = create_app(configured, database_url=database_url, clock=clock, engine=engine)
    body = {"email": "someone@example.org", "password": "wrong-pass-123"}
    async with app.router.lifespan_context(app):
        chain = {"X-Forwarded-For": "192.0.2.1, 198.51.100.5, 10.1.2.3"}
        async with _behind(app, "10.0.0.1", **chain) as client:
            assert (await client.post(LOGIN, json=body)).status_code == 401
        # Loopback is no longer trusted once the setting names other proxies.
        async with _behind(app, "127.0.0.1", **chain) as client:
            assert (await client.post(LOGIN, json=body)).status_code == 401
    assert await _failures_by_client(sessions) == ["198.51.100.5", "127.0.0.1"]


async def test_the_scheme_comes_from_a_trusted_proxy_only(build: Builder) -> None:
    user = await build.user()
    body = {"email": user.email, "password": PASSWORD}
    async with _behind(build.app, "127.0.0.1", **{"X-Forwarded-Proto": "https"}) as client:
        behind_tls = await client.post(LOGIN, json=body)
    async with _behind(build.app, "203.0.113.9", **{"X-Forwarded-Proto": "https"}) as client:
        claimed = await client.post(LOGIN, json=body)
    assert "Secure" in behind_tls.headers["set-cookie"]
    assert "Secure" not in claimed.headers["set-cookie"]
