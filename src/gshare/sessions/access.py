"""Entering a session's web page: tickets and access tokens. Pure apart from signing.

The console asks the API for an entry link; the link carries a one-minute, single-use
*ticket* on the session's own host. ingress-nginx asks the API about every request to that
host (its `auth-url`); the API exchanges the ticket for an *access token* in a cookie that
belongs to that host alone, and from then on checks the cookie. Both are RS256 tokens of the
API's internal key set, each with its own type and audience, and both name the session, its
owner and the console sign-in they came from, so signing out (or being deactivated) closes the
session's page too.

The console's own sign-in cookie never travels to a session host, so code running in a session
can never act as its user on the console.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import parse_qs, urlencode, urlsplit

from gshare.clusters.tokens import InvalidToken, KeySet, timed_claims

TICKET_TYPE = "gshare-session-ticket+jwt"
TICKET_AUDIENCE = "gshare-session-entry"
TICKET_LIFETIME = timedelta(minutes=1)
TICKET_PARAMETER = "gshare_ticket"

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
