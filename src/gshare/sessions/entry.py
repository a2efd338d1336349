"""Letting a session's owner into its page: the entry link and the ingress access check."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from gshare.clusters import service as clusters
from gshare.clusters.tokens import InvalidToken, KeySet
from gshare.identity import service as identity
from gshare.identity.authz import Context, audit
from gshare.kit.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    GShareError,
    NotAuthenticated,
    NotFound,
)
from gshare.sessions import access, repository
from gshare.sessions.service import left_group, still_in_group


async def entry_link(ctx: Context, keys: KeySet, session_id: uuid.UUID, login_id: uuid.UUID) -> str:
    """A link that lets the session's owner, and only them, into its page.

    Nobody else gets one, the super admin included: a session is its owner's workspace. Others
    are told the session does not exist, so its existence does not leak."""
    row = await repository.session_row(ctx.db, session_id)
    if row is None or row.owner_id != ctx.actor.user_id or row.ended_at is not None:
        raise NotFound("No such session.", code="session_not_found")
    domain = await clusters.sessions_domain_of(ctx.db, row.cluster_id) if row.cluster_id else None
    if domain is None or row.state != "running" or row.phase != "Running":
        what = row.state if row.state != "running" else "not ready yet"
        raise Conflict(f"The session is not running (it is {what}).", code="session_not_running")
    if not await still_in_group(ctx.db, row.owner_id, row.group_id, ctx.now):
        raise left_group()
    grant = access.Grant(session_id, ctx.actor.user_id, login_id, ctx.now)
    ticket = access.mint_ticket(keys, grant, ctx.now)
    await audit(ctx, "session.enter", target_type="session", target_id=session_id)
    return access.entry_link(session_id, domain, ticket)


@dataclass(frozen=True)
class Admitted:
    """An allowed request to a session's page; `cookie` is a fresh access token to set, if any."""

    user_id: uuid.UUID
    email: str
    cookie: str | None


async def check_access(
    db: AsyncSession,
    keys: KeySet,
    session_id: uuid.UUID,
    *,
    ticket: str | None,
    cookie: str | None,
    now: datetime,
    client: str = "",
    route: str = "",
) -> Admitted:
    """Decide one request to a session's page (ingress-nginx's auth-url).

    A ticket in the URL (a fresh entry from the console) is tried first and used up; otherwise,
    or if it fails, the access cookie. Either must name this session, and its owner's console
    sign-in must still be live. A ticket, or a cookie a quarter of an hour old, earns a fresh
    cookie."""
    presented = [(t, from_ticket) for t, from_ticket in ((ticket, True), (cookie, False)) if t]
    if not presented:
        raise NotAuthenticated("Open the session from the console.", code="no_session_access")
    refusals: list[GShareError] = []
    for token, from_ticket in presented:
        read = access.read_ticket if from_ticket else access.read_access
        try:
            grant = read(keys, token, now)
        except InvalidToken:
            refusals.append(_expired())
            continue
        if grant.session_id != session_id:
            refusals.append(_denied("This access is for another session."))
            continue
        email = await _owner_signed_in(db, grant, now)
        if email is None:
            refusals.append(_denied())
            continue
        if from_ticket and not await repository.use_ticket(db, grant.token_id, grant.expires_at):
            refusals.append(_ticket_reused(session_id, grant, now, client, route))
            continue
        renew = from_ticket or now - grant.issued_at >= access.ACCESS_RENEW_AFTER
        fresh = access.Grant(session_id, grant.user_id, grant.login_id, now)
        return Admitted(
            grant.user_id, email, access.mint_access(keys, fresh, now) if renew else None
        )
    raise refusals[0]


async def address_without_ticket(db: AsyncSession, address: str | None) -> str:
    """Where the browser goes once the access check has taken the ticket in the address it
    asked for (ingress-nginx's auth-signin): the same page of the same session, without the
    ticket. Only an address on a session's own host, under its cluster's sessions domain, is
    taken; the browser is never sent anywhere else.

    An address without a ticket means the check refused the request itself (no cookie, or an
    expired one, or a ticket already used and stripped): sending it back would only loop."""
    found = access.session_address(address)
    domain = None
    if found is not None:
        row = await repository.session_row(db, found.session_id)
        if row is not None and row.cluster_id is not None:
            domain = await clusters.sessions_domain_of(db, row.cluster_id)
    if found is None or domain is None or found.host != f"{found.session_id}.{domain}".lower():
        raise BadRequest(
            "This address is not a GShare session's page; open the session from the console.",
            code="not_a_session_address",
        )
    query, had_ticket = access.without_ticket(found.query)
    if not had_ticket:
        raise NotAuthenticated(
            "Your access to this session has ended, or its link was used already; open the "
            "session again from the console.",
            code="session_access_expired",
        )
    page = access.session_url(found.session_id, domain) + found.path.removeprefix("/")
    return f"{page}?{query}" if query else page


async def _owner_signed_in(db: AsyncSession, grant: access.Grant, now: datetime) -> str | None:
    """The owner's email, if the grant is theirs, the session is live and meant to run, its
    owner is still in the group it runs for, and the console sign-in the grant came from is
    still live."""
    found = await repository.open_group(db, grant.session_id, grant.user_id)
    if found is None or not await still_in_group(db, grant.user_id, found[0], now):
        return None
    return await identity.signed_in_email(db, grant.user_id, grant.login_id, now)


def _expired() -> NotAuthenticated:
    return NotAuthenticated(
        "Your access to this session has ended; open it again from the console.",
        code="session_access_expired",
    )


def _denied(
    message: str = "You cannot enter this session; open it again from the console.",
) -> Forbidden:
    return Forbidden(message, code="session_access_denied")


def _ticket_reused(
    session_id: uuid.UUID, grant: access.Grant, now: datetime, client: str, route: str
) -> NotAuthenticated:
    """A ticket presented again: someone else may hold the link. Counted, and the first of each
    window audited, like every refused internal call."""
    refusal = clusters.Refusal(
        action="session.access",
        reason="ticket_reused",
        route=route or "/internal/v1/session-access/{session_id}",
        client=client,
        target_type="session",
        target_id=session_id,
        actor_id=grant.user_id,
    )
    return NotAuthenticated(
        "This link was used already; open the session again from the console.",
        code="session_access_expired",
        durable=[clusters.refusal_later(refusal, now)],
    )


async def forget_used_tickets(db: AsyncSession, now: datetime) -> None:
    """Used tickets past their expiry could not be used again anyway."""
    await repository.forget_tickets_before(db, now - access.TICKET_LIFETIME)
