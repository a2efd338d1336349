"""Session use cases this far: operator status reports, entering a session's page, and the
guard that keeps a cluster with live sessions from being removed."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from gshare.audit.service import AuditEvent, record_later
from gshare.clusters.models import Cluster
from gshare.clusters.service import refuse_future_sequence
from gshare.clusters.tokens import InvalidToken, KeySet
from gshare.identity.authz import Context, audit
from gshare.identity.models import LoginSession, User
from gshare.kit.errors import Conflict, Forbidden, GShareError, NotAuthenticated, NotFound
from gshare.sessions import access
from gshare.sessions.models import InteractiveSession, UsedTicket
from gshare.sessions.schemas import StatusReport
from gshare.sessions.status import is_newer


class NotOwned(Exception):
    """A status report about a session the calling cluster does not run."""


async def record_status(
    session: AsyncSession,
    cluster_id: uuid.UUID,
    session_id: uuid.UUID,
    report: StatusReport,
    now: datetime,
) -> bool:
    """Store an operator's report if it is newer than the stored one; returns whether it was.

    Raises NotOwned unless the session is placed on `cluster_id`."""
    refuse_future_sequence(report.sequence, now)
    row = await session.scalar(
        select(InteractiveSession).where(InteractiveSession.id == session_id).with_for_update()
    )
    if row is None or row.cluster_id != cluster_id:
        raise NotOwned(f"session {session_id} does not run on cluster {cluster_id}")
    await session.execute(
        update(Cluster).where(Cluster.id == cluster_id).values(last_contact_at=now)
    )
    if row.ended_at is not None:
        return False  # an ended session's record is final
    if not is_newer(
        stored_generation=row.observed_generation,
        stored_sequence=row.status_sequence,
        generation=report.generation,
        sequence=report.sequence,
    ):
        return False
    row.observed_generation = report.generation
    row.status_sequence = report.sequence
    row.phase = report.phase
    row.phase_message = report.message
    row.status_at = now
    return True


async def refuse_while_sessions_live(session: AsyncSession, cluster_id: uuid.UUID) -> None:
    """A cluster that still runs sessions cannot be removed (called with its row locked)."""
    live = await session.scalar(
        select(func.count()).where(
            InteractiveSession.cluster_id == cluster_id, InteractiveSession.ended_at.is_(None)
        )
    )
    if live:
        raise Conflict(
            f"The cluster still runs {live} session(s); stop them before removing it.",
            code="cluster_has_live_sessions",
        )


async def ended_among(session: AsyncSession, ids: list[uuid.UUID]) -> set[uuid.UUID]:
    """Which of these sessions have ended (for the ledger check: none may keep an open hold)."""
    rows = await session.scalars(
        select(InteractiveSession.id).where(
            InteractiveSession.id.in_(ids), InteractiveSession.ended_at.is_not(None)
        )
    )
    return set(rows)


async def entry_link(ctx: Context, keys: KeySet, session_id: uuid.UUID, login_id: uuid.UUID) -> str:
    """A link that lets the session's owner, and only them, into its page.

    Nobody else gets one, the super admin included: a session is its owner's workspace. Others
    are told the session does not exist, so its existence does not leak."""
    row = await ctx.session.get(InteractiveSession, session_id)
    if row is None or row.owner_id != ctx.actor.user_id or row.ended_at is not None:
        raise NotFound("No such session.", code="session_not_found")
    cluster = await ctx.session.get(Cluster, row.cluster_id) if row.cluster_id else None
    if cluster is None or row.desired_state != "Running" or row.phase != "Running":
        raise Conflict(
            f"The session is not running (it is {row.phase.lower()}).", code="session_not_running"
        )
    grant = access.Grant(session_id, ctx.actor.user_id, login_id, ctx.now)
    ticket = access.mint_ticket(keys, grant, ctx.now)
    await audit(ctx, "session.enter", target_type="session", target_id=session_id)
    return access.entry_link(session_id, cluster.sessions_domain, ticket)


@dataclass(frozen=True)
class Admitted:
    """An allowed request to a session's page; `cookie` is a fresh access token to set, if any."""

    user_id: uuid.UUID
    email: str
    cookie: str | None


async def check_access(
    session: AsyncSession,
    keys: KeySet,
    session_id: uuid.UUID,
    *,
    ticket: str | None,
    cookie: str | None,
    now: datetime,
    client: str = "",
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
        user = await _owner_signed_in(session, grant, now)
        if user is None:
            refusals.append(_denied())
            continue
        if from_ticket and not await _first_use(session, grant):
            refusals.append(_ticket_reused(session_id, grant, now, client))
            continue
        renew = from_ticket or now - grant.issued_at >= access.ACCESS_RENEW_AFTER
        fresh = access.Grant(session_id, grant.user_id, grant.login_id, now)
        return Admitted(
            user.id, user.email, access.mint_access(keys, fresh, now) if renew else None
        )
    raise refusals[0]


async def _owner_signed_in(
    session: AsyncSession, grant: access.Grant, now: datetime
) -> User | None:
    """The session's owner, if the grant is theirs, the session is live and meant to run, and
    the console sign-in the grant came from is still live."""
    return await session.scalar(
        select(User)
        .join(InteractiveSession, InteractiveSession.owner_id == User.id)
        .join(LoginSession, LoginSession.user_id == User.id)
        .where(
            InteractiveSession.id == grant.session_id,
            InteractiveSession.owner_id == grant.user_id,
            InteractiveSession.ended_at.is_(None),
            InteractiveSession.desired_state == "Running",
            LoginSession.id == grant.login_id,
            LoginSession.revoked_at.is_(None),
            LoginSession.expires_at > now,
            User.active.is_(True),
        )
    )


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
    session_id: uuid.UUID, grant: access.Grant, now: datetime, client: str
) -> NotAuthenticated:
    """A ticket presented again: someone else may hold the link. Audited."""
    event = AuditEvent(
        action="session.access",
        outcome="denied",
        actor_id=grant.user_id,
        target_type="session",
        target_id=str(session_id),
        detail={"reason": "entry ticket used already", "client": client},
    )
    return NotAuthenticated(
        "This link was used already; open the session again from the console.",
        code="session_access_expired",
        durable=[record_later(event, now=now)],
    )


async def _first_use(session: AsyncSession, ticket: access.Grant) -> bool:
    """Record the ticket as used; False when it had been used before."""
    used = await session.execute(
        insert(UsedTicket)
        .values(jti=ticket.token_id, expires_at=ticket.expires_at)
        .on_conflict_do_nothing()
        .returning(UsedTicket.jti)
    )
    return used.first() is not None


async def forget_used_tickets(session: AsyncSession, now: datetime) -> None:
    """Used tickets past their expiry could not be used again anyway."""
    await session.execute(
        delete(UsedTicket).where(UsedTicket.expires_at < now - access.TICKET_LIFETIME)
    )
