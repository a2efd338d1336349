"""Entering a session's web page: tickets and access tokens. Pure apart from signing.

The console asks the API for an entry link; the link carries a one-minute, single-use
*ticket* on the session's own host. ingress-nginx asks the API about every request to that
host (its `auth-url`); the API exchanges the ticket for an *access token* in a cookie that
belongs to that host alone, and from then on checks the cookie. A request that carries a
ticket never reaches the session: the check answers 401 with the cookie, ingress-nginx sends
the browser to the API's sign-in route (its `auth-signin`), and that route sends it back to the
same address without the ticket, so no ticket stays in the address bar or the history.

Tickets and access tokens are RS256 tokens of the API's internal key set, each with its own
type and audience, and both name the session, its owner and the console sign-in they came
from, so signing out (or being deactivated) closes the session's page too.

The console's own sign-in cookie never travels to a session host, so code running in a session
can never act as its user on the console.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import parse_qs, unquote, unquote_plus, urlencode, urlsplit

from gshare.clusters.tokens import InvalidToken, KeySet, timed_claims

TICKET_TYPE = "gshare-session-ticket+jwt"
TICKET_AUDIENCE = "gshare-session-entry"
TICKET_LIFETIME = timedelta(minutes=1)
TICKET_PARAMETER = "gshare_ticket"

# A ticket's value as it may stand in a logged request line: raw, or inside the address that
# `auth-signin` is given, percent-encoded once or twice.
_TICKET_IN_TEXT = re.compile(r"(gshare_ticket(?:=|%3D|%253D))[A-Za-z0-9_.~-]+", re.IGNORECASE)

ACCESS_TYPE = "gshare-session-access+jwt"
ACCESS_AUDIENCE = "gshare-session-access"
ACCESS_LIFETIME = timedelta(hours=1)
# An access token older than this is replaced by a fresh one on the next request.
ACCESS_RENEW_AFTER = timedelta(minutes=15)
# The __Host- prefix makes browsers insist on Secure, Path=/ and no Domain: the cookie can only
# be set by, and is only sent to, the one session host.
ACCESS_COOKIE = "__Host-gshare_access"


@dataclass(frozen=True)
class Grant:
    """What a valid ticket or access token says: this user, signed in as `login_id`, may enter
    this session."""

    session_id: uuid.UUID
    user_id: uuid.UUID
    login_id: uuid.UUID
    issued_at: datetime
    token_id: str = ""
    expires_at: datetime | None = None


def _mint(keys: KeySet, grant: Grant, now: datetime, *, typ: str, aud: str, life: timedelta) -> str:
    claims = timed_claims(f"user:{grant.user_id}", aud, now, life)
    return keys.sign({**claims, "sid": str(grant.session_id), "lid": str(grant.login_id)}, typ)


def mint_ticket(keys: KeySet, grant: Grant, now: datetime) -> str:
    return _mint(keys, grant, now, typ=TICKET_TYPE, aud=TICKET_AUDIENCE, life=TICKET_LIFETIME)


def mint_access(keys: KeySet, grant: Grant, now: datetime) -> str:
    return _mint(keys, grant, now, typ=ACCESS_TYPE, aud=ACCESS_AUDIENCE, life=ACCESS_LIFETIME)


def _read(keys: KeySet, token: str, now: datetime, *, typ: str, aud: str) -> Grant:
    claims = keys.decode(token, typ=typ, audience=aud, now=now)
    subject = str(claims.get("sub", ""))
    if not subject.startswith("user:"):
        raise InvalidToken("the subject is not a user", "wrong_subject")
    try:
        grant = Grant(
            session_id=uuid.UUID(str(claims["sid"])),
            user_id=uuid.UUID(subject.removeprefix("user:")),
            login_id=uuid.UUID(str(claims["lid"])),
            issued_at=datetime.fromtimestamp(int(claims["iat"]), tz=now.tzinfo),
            token_id=str(claims["jti"])[:64],
            expires_at=datetime.fromtimestamp(int(claims["exp"]), tz=now.tzinfo),
        )
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise InvalidToken(f"malformed claims: {exc}", "invalid_claims") from exc
    # The key set allows for clocks a little apart; these tokens are minted and read by the
    # API's own clock, so they end when they say, to the second.
    if grant.expires_at is not None and now >= grant.expires_at:
        raise InvalidToken("expired", "expired")
    return grant


def read_ticket(keys: KeySet, token: str, now: datetime) -> Grant:
    return _read(keys, token, now, typ=TICKET_TYPE, aud=TICKET_AUDIENCE)


def read_access(keys: KeySet, token: str, now: datetime) -> Grant:
    return _read(keys, token, now, typ=ACCESS_TYPE, aud=ACCESS_AUDIENCE)


# Far above a ticket's link (its token is well under 2 KiB), far below what would make reading
# the URL cost the event loop anything: a longer one carries no ticket we would take.
MAX_ORIGINAL_URL = 8 * 1024
MAX_QUERY_FIELDS = 100


def ticket_in(original_url: str | None) -> str | None:
    """The ticket in the query of the URL the browser asked for (ingress-nginx passes it to the
    access check as X-Original-URL); none when there is not exactly one, or when the URL
    cannot be read (its host part is the client's Host header, which may be anything)."""
    if not original_url or len(original_url) > MAX_ORIGINAL_URL:
        return None
    try:
        query = urlsplit(original_url).query
        fields = parse_qs(query, keep_blank_values=True, max_num_fields=MAX_QUERY_FIELDS)
    except ValueError:  # unreadable, or more fields than any page of a session needs
        return None
    values = fields.get(TICKET_PARAMETER)
    return values[0] if values and len(values) == 1 else None


def session_url(session_id: uuid.UUID, sessions_domain: str) -> str:
    """Where a session's page is served: its own host under its cluster's sessions domain (which
    may name the ingress's port). Over HTTPS, except under `localhost`: browsers resolve those
    names to loopback themselves and treat them as secure origins, so the Secure access cookie
    works there over plain HTTP (how `make demo` serves its sessions)."""
    host = sessions_domain.rsplit(":", 1)[0] if ":" in sessions_domain else sessions_domain
    scheme = "http" if host == "localhost" or host.endswith(".localhost") else "https"
    return f"{scheme}://{session_id}.{sessions_domain}/"


def entry_link(session_id: uuid.UUID, sessions_domain: str, ticket: str) -> str:
    query = urlencode({TICKET_PARAMETER: ticket})
    return f"{session_url(session_id, sessions_domain)}?{query}"


# The parameter of ingress-nginx's auth-signin redirect that holds the address asked for (its
# default, set on each Ingress all the same: `auth-signin-redirect-param`).
RETURN_PARAMETER = "rd"


def return_address(query: str) -> str | None:
    """The address in the query of the sign-in redirect, from the raw query string.

    ingress-nginx puts `rd=` last, with the scheme and host as they are and the request URI
    escaped (`$escaped_request_uri`), so one unescaping gives the address back. nginx without
    the set-misc module (the demo's) cannot escape it: there the value runs to the end of the
    query unescaped, its own query and all, which a raw `?` in it gives away."""
    if len(query) > 3 * MAX_ORIGINAL_URL:
        return None
    key = f"{RETURN_PARAMETER}="
    if query.startswith(key):
        start = len(key)
    else:
        at = query.find(f"&{key}")
        if at < 0:
            return None
        start = at + 1 + len(key)
    value = query[start:]
    return value if "?" in value else unquote(value)


@dataclass(frozen=True)
class SessionAddress:
    """An address that names a session's host: what follows the host is kept as it was."""

    session_id: uuid.UUID
    host: str  # lower case, with the port when one is named
    path: str
    query: str


def session_address(address: str | None) -> SessionAddress | None:
    """The session an http(s) address names by its first host label; None for anything else."""
    if not address or len(address) > MAX_ORIGINAL_URL:
        return None
    try:
        parts = urlsplit(address)
        host = parts.netloc.lower()
        session_id = uuid.UUID(host.split(".", 1)[0])
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.path.startswith("/"):
        return None
    return SessionAddress(session_id, host, parts.path, parts.query)


def without_ticket(query: str) -> tuple[str, bool]:
    """The query without its ticket, every other field left exactly as it was; and whether it
    had one."""
    kept = [
        field
        for field in query.split("&")
        if field and unquote_plus(field.split("=", 1)[0]) != TICKET_PARAMETER
    ]
    return "&".join(kept), len(kept) != len([f for f in query.split("&") if f])


def redact_tickets(text: str) -> str:
    """`text` with every ticket's value replaced, so that no log line holds one."""
    return _TICKET_IN_TEXT.sub(r"\1[redacted]", text)
