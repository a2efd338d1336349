"""Entering a session's page: the console's entry link, and the check ingress-nginx makes before
every request to the session's host. Only the session's owner, signed in, gets through."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, quote, urlsplit

import httpx
import pytest
from sqlalchemy import select, update

from gshare.audit.models import AuditEntry
from gshare.clusters.callbacks import key_ring_of
from gshare.clusters.tokens import KeySet
from gshare.identity.models import User
from gshare.sessions import access
from gshare.sessions.models import InteractiveSession
from tests.builders import Builder

COOKIE = access.ACCESS_COOKIE


async def _keys(build: Builder) -> KeySet:
    return await key_ring_of(build.app).get(datetime.now(UTC))


async def _running(build: Builder, owner: User) -> InteractiveSession:
    return await build.interactive_session(owner, await build.cluster(), phase="Running")


async def _set_desired(build: Builder, session_id: uuid.UUID, state: str) -> None:
    async with build.sessions() as db, db.begin():
        await db.execute(
            update(InteractiveSession)
            .where(InteractiveSession.id == session_id)
            .values(desired_state=state)
        )


async def _check(
    client: httpx.AsyncClient,
    session_id: uuid.UUID,
    *,
    link: str | None = None,
    cookie: str | None = None,
) -> httpx.Response:
    """What ingress-nginx sends: the browser's cookies and the URL it asked for."""
    headers = {"X-Original-URL": link or "https://somewhere/"}
    if cookie:
        headers["Cookie"] = f"{COOKIE}={cookie}"
    return await client.get(f"/internal/v1/session-access/{session_id}", headers=headers)


def _taken(response: httpx.Response) -> str | None:
    """A ticket taken: 401 without an error, so that ingress-nginx sends the browser on to
    auth-signin; the cookie it set, if any."""
    assert response.status_code == 401, response.text
    assert response.content == b"", response.text
    return _set_cookie(response)


def _set_cookie(response: httpx.Response) -> str | None:
    header = response.headers.get("set-cookie")
    if header is None:
        return None
    assert "HttpOnly" in header
    assert "Max-Age=3600" in header
    assert "Path=/" in header
    assert "Secure" in header
    assert "Domain" not in header
    assert "SameSite=lax" in header or "samesite=lax" in header.lower()
    return header.split(";")[0].removeprefix(f"{COOKIE}=")


async def test_the_owner_enters_with_a_ticket_then_a_cookie(build: Builder) -> None:
    owner = await build.user()
    mine = await _running(build, owner)
    console = await build.signed_in(owner)
    entry = await console.post(f"/api/v1/sessions/{mine.id}/entry")
    assert entry.status_code == 200, entry.text
    link = entry.json()["url"]
    assert link.startswith(f"https://{mine.id}.sessions.gshare.local/?gshare_ticket=")

    ingress = build.anonymous("10.0.0.5")
    first = await _check(ingress, mine.id, link=link)
    cookie = _taken(first)
    assert cookie
    assert "x-gshare-user" not in first.headers
    assert cookie != parse_qs(urlsplit(link).query)["gshare_ticket"][0]

    # A ticket works once: the same link again, from anywhere, is refused.
    replay = await _check(build.anonymous("192.0.2.66"), mine.id, link=link)
    assert replay.status_code == 401
    assert "used already" in replay.json()["error"]["message"]

    # The browser comes back without the ticket, with the cookie: in, as its owner.
    back = await _check(ingress, mine.id, cookie=cookie)
    assert back.status_code == 204
    assert back.headers["x-gshare-user"] == owner.email

    # Later requests carry the cookie; the ticket has long expired by then.
    build.clock.advance(timedelta(minutes=5))
    later = await _check(ingress, mine.id, cookie=cookie)
    assert later.status_code == 204
    assert _set_cookie(later) is None
    # A quarter of an hour on, the cookie is renewed; the renewed one keeps working.
    build.clock.advance(timedelta(minutes=11))
    renewed = _set_cookie(await _check(ingress, mine.id, cookie=cookie))
    assert renewed
    assert renewed != cookie
    build.clock.advance(timedelta(minutes=55))
    assert (await _check(ingress, mine.id, cookie=renewed)).status_code == 204
    assert (await _check(ingress, mine.id, cookie=cookie)).status_code == 401  # expired
    # The ticket, replayed now, is refused too.
    assert (await _check(ingress, mine.id, link=link)).status_code == 401

    async with build.sessions() as db:
        entered = (
            await db.scalars(select(AuditEntry).where(AuditEntry.action == "session.enter"))
        ).all()
    assert [(e.actor_id, e.target_id) for e in entered] == [(owner.id, str(mine.id))]


async def test_the_link_is_built_from_the_clusters_sessions_domain(build: Builder) -> None:
    owner = await build.user()
    cluster = await build.cluster(sessions_domain="gpu.lab.example")
    mine = await build.interactive_session(owner, cluster, phase="Running")
    console = await build.signed_in(owner)
    link = (await console.post(f"/api/v1/sessions/{mine.id}/entry")).json()["url"]
    parts = urlsplit(link)
    assert (parts.scheme, parts.netloc, parts.path) == ("https", f"{mine.id}.gpu.lab.example", "/")
    assert list(parse_qs(parts.query)) == ["gshare_ticket"]


async def test_nobody_else_gets_a_link_not_even_the_super_admin(build: Builder) -> None:
    owner = await build.user()
    mine = await _running(build, owner)
    for other in (await build.user(), await build.user(super_admin=True)):
        response = await (await build.signed_in(other)).post(f"/api/v1/sessions/{mine.id}/entry")
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "session_not_found"
    console = await build.signed_in(owner)
    missing = await console.post(f"/api/v1/sessions/{uuid.uuid4()}/entry")
    assert missing.status_code == 404
    paused = await build.interactive_session(
        owner, await build.cluster(), desired_state="Paused", phase="Paused"
    )
    refused = await console.post(f"/api/v1/sessions/{paused.id}/entry")
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "session_not_running"
    assert (await build.anonymous().post(f"/api/v1/sessions/{mine.id}/entry")).status_code == 401


async def test_access_ends_with_the_sign_in_the_account_or_the_session(build: Builder) -> None:
    owner = await build.user()
    mine, other = await _running(build, owner), await _running(build, owner)
    console = await build.signed_in(owner)
    ingress = build.anonymous("10.0.0.5")

    async def cookie_for(session: InteractiveSession) -> str:
        link = (await console.post(f"/api/v1/sessions/{session.id}/entry")).json()["url"]
        value = _set_cookie(await _check(ingress, session.id, link=link))
        assert value
        return value

    cookie = await cookie_for(mine)
    # A cookie or ticket for one session does not open another.
    assert (await _check(ingress, other.id, cookie=cookie)).status_code == 403
    other_link = (await console.post(f"/api/v1/sessions/{other.id}/entry")).json()["url"]
    assert (await _check(ingress, mine.id, link=other_link)).status_code == 403
    # No cookie at all, a forged one, or an operator's token in its place.
    assert (await _check(ingress, mine.id)).json()["error"]["code"] == "no_session_access"
    assert (await _check(ingress, mine.id, cookie="forged")).status_code == 401
    operator_token = (await _keys(build)).mint(str(uuid.uuid4()), build.clock.now())
    assert (await _check(ingress, mine.id, cookie=operator_token)).status_code == 401
    # A ticket is not a cookie, nor the other way round.
    ticket = parse_qs(urlsplit(other_link).query)["gshare_ticket"][0]
    assert (await _check(ingress, other.id, cookie=ticket)).status_code == 401

    # Pausing the session closes its page.
    await _set_desired(build, mine.id, "Paused")
    assert (await _check(ingress, mine.id, cookie=cookie)).status_code == 403
    await _set_desired(build, mine.id, "Running")
    assert (await _check(ingress, mine.id, cookie=cookie)).status_code == 204

    # Signing out of the console closes it too.
    assert (await console.post("/api/v1/auth/logout")).status_code == 204
    denied = await _check(ingress, mine.id, cookie=cookie)
    assert denied.status_code == 403
    assert denied.json()["error"]["code"] == "session_access_denied"

    # So does deactivating the account, whatever sign-in the cookie came from.
    console = await build.signed_in(owner)
    cookie = await cookie_for(mine)
    async with build.sessions() as db, db.begin():
        await db.execute(update(User).where(User.id == owner.id).values(active=False))
    assert (await _check(ingress, mine.id, cookie=cookie)).status_code == 403


async def test_used_tickets_are_forgotten_once_expired(build: Builder) -> None:
    from gshare.sessions.entry import forget_used_tickets
    from gshare.sessions.models import UsedTicket

    owner = await build.user()
    mine = await _running(build, owner)
    console = await build.signed_in(owner)
    link = (await console.post(f"/api/v1/sessions/{mine.id}/entry")).json()["url"]
    assert _taken(await _check(build.anonymous(), mine.id, link=link))

    async def count() -> int:
        async with build.sessions() as db:
            return len((await db.scalars(select(UsedTicket))).all())

    async with build.sessions() as db, db.begin():
        await forget_used_tickets(db, build.clock.now())
    assert await count() == 1
    async with build.sessions() as db, db.begin():
        await forget_used_tickets(db, build.clock.now() + timedelta(minutes=3))
    assert await count() == 0


async def test_a_fresh_ticket_beats_an_old_cookie_and_is_used_up_either_way(
    build: Builder,
) -> None:
    import asyncio

    owner = await build.user()
    mine = await _running(build, owner)
    console = await build.signed_in(owner)
    ingress = build.anonymous("10.0.0.5")
    link = (await console.post(f"/api/v1/sessions/{mine.id}/entry")).json()["url"]
    old_cookie = _taken(await _check(ingress, mine.id, link=link))
    assert old_cookie

    # Signed out and in again: the old cookie names the ended sign-in; a new link still works.
    assert (await console.post("/api/v1/auth/logout")).status_code == 204
    console = await build.signed_in(owner)
    link = (await console.post(f"/api/v1/sessions/{mine.id}/entry")).json()["url"]
    new_cookie = _taken(await _check(ingress, mine.id, link=link, cookie=old_cookie))
    assert new_cookie
    # That URL again with the new cookie is sent on without the ticket (no new cookie needed);
    # without the cookie, the spent ticket is refused.
    assert _taken(await _check(ingress, mine.id, link=link, cookie=new_cookie)) is None
    assert (await _check(ingress, mine.id, link=link)).json()["error"]["code"] == (
        "session_access_expired"
    )

    # A ticket that arrives with a valid cookie is used up all the same.
    link = (await console.post(f"/api/v1/sessions/{mine.id}/entry")).json()["url"]
    assert _taken(await _check(ingress, mine.id, link=link, cookie=new_cookie))
    assert (await _check(build.anonymous(), mine.id, link=link)).status_code == 401

    # Two requests racing with one ticket: exactly one gets in.
    link = (await console.post(f"/api/v1/sessions/{mine.id}/entry")).json()["url"]
    racing = await asyncio.gather(
        _check(build.anonymous("192.0.2.1"), mine.id, link=link),
        _check(build.anonymous("192.0.2.2"), mine.id, link=link),
    )
    assert sorted(bool(r.headers.get("set-cookie")) for r in racing) == [False, True]
    assert sorted(bool(r.content) for r in racing) == [False, True]  # one error: the loser

    # An access cookie is not a ticket, and a URL with two tickets carries none.
    query_cookie = f"https://{mine.id}.sessions.gshare.local/?gshare_ticket={new_cookie}"
    assert (await _check(build.anonymous(), mine.id, link=query_cookie)).status_code == 401
    link = (await console.post(f"/api/v1/sessions/{mine.id}/entry")).json()["url"]
    doubled = f"{link}&gshare_ticket=other"
    assert (await _check(build.anonymous(), mine.id, link=doubled)).status_code == 401
    async with build.sessions() as db:
        reused = (
            await db.scalars(
                select(AuditEntry).where(
                    AuditEntry.action == "session.access", AuditEntry.outcome == "denied"
                )
            )
        ).all()
    assert len(reused) == 3  # each spent ticket presented alone, and the loser of the race


@pytest.mark.parametrize(
    ("domain", "url"),
    [
        ("sessions.gshare.local", "https://{id}.sessions.gshare.local/"),
        ("sessions.example.org:8443", "https://{id}.sessions.example.org:8443/"),
        ("sessions.localhost:8001", "http://{id}.sessions.localhost:8001/"),
        ("localhost", "http://{id}.localhost/"),
        ("sessions.notlocalhost", "https://{id}.sessions.notlocalhost/"),
        ("localhost.example.org", "https://{id}.localhost.example.org/"),
    ],
)
def test_a_session_page_is_https_except_on_loopback_names(domain: str, url: str) -> None:
    session_id = uuid.UUID(int=7)
    assert access.session_url(session_id, domain) == url.format(id=session_id)


async def test_a_stopping_or_deleted_session_closes_its_page_at_once(build: Builder) -> None:
    """Stopping (before the resource is gone) and deleting close the page as pausing does:
    neither the cookie nor a ticket minted before gets in."""
    owner = await build.user()
    console = await build.signed_in(owner)
    ingress = build.anonymous("10.0.0.5")
    for end in ("stop", "delete"):
        mine = await _running(build, owner)
        first = (await console.post(f"/api/v1/sessions/{mine.id}/entry")).json()["url"]
        cookie = _taken(await _check(ingress, mine.id, link=first))
        unused = (await console.post(f"/api/v1/sessions/{mine.id}/entry")).json()["url"]
        if end == "stop":
            ended = await console.post(f"/api/v1/sessions/{mine.id}/stop")
        else:
            ended = await console.delete(f"/api/v1/sessions/{mine.id}")
        assert ended.is_success, ended.text
        assert (await _check(ingress, mine.id, cookie=cookie)).status_code == 403, end
        assert (await _check(ingress, mine.id, link=unused)).status_code == 403, end


async def test_a_ticket_ends_after_one_minute_to_the_second(build: Builder) -> None:
    owner = await build.user()
    mine = await _running(build, owner)
    console = await build.signed_in(owner)
    link = (await console.post(f"/api/v1/sessions/{mine.id}/entry")).json()["url"]
    build.clock.advance(access.TICKET_LIFETIME)
    late = await _check(build.anonymous(), mine.id, link=link)
    assert late.status_code == 401
    assert late.json()["error"]["code"] == "session_access_expired"


@pytest.mark.parametrize(
    "original",
    [
        "http://[/?gshare_ticket=x",
        "http://[::1/?gshare_ticket=x",
        "http://a]/?gshare_ticket=x",
        "http://x[y/",
        "http://h:99999999999/?gshare_ticket=x",
        "\x00",
    ],
)
async def test_an_unreadable_original_url_is_refused_not_an_error(
    build: Builder, original: str
) -> None:
    """Its host part is the client's Host header: anything may be there."""
    owner = await build.user()
    mine = await _running(build, owner)
    answer = await build.anonymous().get(
        f"/internal/v1/session-access/{mine.id}", headers={"X-Original-URL": original}
    )
    assert answer.status_code == 401


def test_a_ticket_is_read_only_when_there_is_exactly_one() -> None:
    assert access.ticket_in("https://h/?gshare_ticket=a") == "a"
    assert access.ticket_in("https://h/?gshare_ticket=a&gshare_ticket=") is None
    assert access.ticket_in("https://h/?gshare_ticket=a&gshare_ticket=b") is None
    assert access.ticket_in("https://h/#gshare_ticket=a") is None


def test_a_huge_original_url_is_not_read_at_all() -> None:
    """Session pods cannot reach the API past the ingress, but the check must not cost the event
    loop seconds for whoever can: a URL past 8 KiB, or with a flood of fields, carries no
    ticket we take."""
    assert access.ticket_in("https://h/?gshare_ticket=a&" + "x" * 9000) is None
    assert access.ticket_in("https://h/?gshare_ticket=a&" + "&".join(["x=1"] * 150)) is None
    assert access.ticket_in("https://h/?gshare_ticket=a&" + "&".join(["x=1"] * 50)) == "a"


# ---- leaving the ticket behind (ingress-nginx's auth-signin) -------------------------------


def _escaped(address: str) -> str:
    """`rd` as ingress-nginx writes it: scheme and host as they are, the request URI escaped."""
    parts = urlsplit(address)
    uri = parts.path + (f"?{parts.query}" if parts.query else "")
    return f"rd={parts.scheme}://{parts.netloc}{quote(uri, safe='')}"


async def test_the_browser_is_sent_back_to_the_same_page_without_the_ticket(
    build: Builder,
) -> None:
    owner = await build.user()
    mine = await _running(build, owner)
    console = await build.signed_in(owner)
    link = (await console.post(f"/api/v1/sessions/{mine.id}/entry")).json()["url"]
    ticket = parse_qs(urlsplit(link).query)["gshare_ticket"][0]
    asked = f"https://{mine.id}.sessions.gshare.local/lab/tree/a%20b.ipynb?x=1&gshare_ticket={ticket}&y=%2F"
    assert _taken(await _check(build.anonymous(), mine.id, link=asked))

    browser = build.anonymous()
    page = f"https://{mine.id}.sessions.gshare.local/lab/tree/a%20b.ipynb?x=1&y=%2F"
    for query in (_escaped(asked), f"rd={asked}"):  # ingress-nginx's form, and the demo's
        back = await browser.get(f"/api/v1/session-entry?{query}")
        assert back.status_code == 303, back.text
        assert back.headers["location"] == page
        assert back.headers["cache-control"] == "no-store"

    # Back without the ticket and without a cookie: refused by the check, and then here too,
    # instead of going round again.
    assert (await _check(build.anonymous(), mine.id, link=page)).status_code == 401
    again = await browser.get(f"/api/v1/session-entry?{_escaped(page)}")
    assert again.status_code == 401
    assert again.json()["error"]["code"] == "session_access_expired"
    assert "open the session again from the console" in again.json()["error"]["message"]


async def test_only_a_sessions_own_address_is_followed(build: Builder) -> None:
    owner = await build.user()
    mine = await _running(build, owner)
    elsewhere = await build.interactive_session(
        owner, await build.cluster(sessions_domain="gpu.lab.example"), phase="Running"
    )
    browser = build.anonymous()
    for address in (
        "https://evil.example/?gshare_ticket=t",
        f"https://{mine.id}.evil.example/?gshare_ticket=t",
        f"https://{mine.id}.sessions.gshare.local.evil.example/?gshare_ticket=t",
        f"https://{mine.id}.gpu.lab.example/?gshare_ticket=t",  # another cluster's domain
        f"https://{elsewhere.id}.sessions.gshare.local/?gshare_ticket=t",
        f"https://user@{mine.id}.sessions.gshare.local/?gshare_ticket=t",
        f"https://{uuid.uuid4()}.sessions.gshare.local/?gshare_ticket=t",
        f"javascript://{mine.id}.sessions.gshare.local/?gshare_ticket=t",
        "//evil.example/?gshare_ticket=t",
        "",
    ):
        answer = await browser.get(f"/api/v1/session-entry?{_escaped(address)}")
        assert answer.status_code == 400, address
        assert answer.json()["error"]["code"] == "not_a_session_address", address
    missing = await browser.get("/api/v1/session-entry")
    assert missing.json()["error"]["code"] == "not_a_session_address"
    # The right host under another scheme is sent to the session's own (https) address.
    plain = await browser.get(
        f"/api/v1/session-entry?rd=http://{mine.id}.sessions.gshare.local/?gshare_ticket=t"
    )
    assert plain.headers["location"] == f"https://{mine.id}.sessions.gshare.local/"


def test_the_address_is_read_from_either_form_of_rd() -> None:
    raw = "https://h.example/p?a=1&gshare_ticket=t"
    assert access.return_address("rd=https://h.example%2Fp%3Fa%3D1%26gshare_ticket%3Dt") == raw
    assert access.return_address(f"rd={raw}") == raw
    assert access.return_address(f"other=1&rd={raw}") == raw
    assert access.return_address("ird=x") is None
    assert access.return_address("") is None
    assert access.without_ticket("a=1&gshare_ticket=t&b=%2F&&c") == ("a=1&b=%2F&c", True)
    assert access.without_ticket("gshare%5Fticket=t") == ("", True)
    assert access.without_ticket("a=gshare_ticket") == ("a=gshare_ticket", False)


def test_no_ticket_survives_in_a_logged_request_line() -> None:
    ticket = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl-_~"
    lines = [
        f"/lab?gshare_ticket={ticket}&x=1",
        f"/api/v1/session-entry?rd=https%3A%2F%2Fs.example.org%2Flab%3Fgshare_ticket%3D{ticket}%26x%3D1",
        f"/api/v1/session-entry?rd=https%253A%252F%252Fs%252Flab%253Fgshare_ticket%253D{ticket}",
        f"/lab?GSHARE_TICKET={ticket}",
    ]
    for line in lines:
        redacted = access.redact_tickets(line)
        assert "c2lnbmF0dXJl" not in redacted, redacted
        assert "[redacted]" in redacted
    # The rest of the line stays as it was.
    assert access.redact_tickets(f"/lab?gshare_ticket={ticket}&x=1") == (
        "/lab?gshare_ticket=[redacted]&x=1"
    )
    assert access.redact_tickets("/lab?x=1&ticket=abc") == "/lab?x=1&ticket=abc"
