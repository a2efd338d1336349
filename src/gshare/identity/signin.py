"""Sign-in, server-side login sessions, sign-out, password change and the first super admin."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import unicodedata
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from gshare.audit.service import AuditEvent, record, record_later
from gshare.events.notifications import notify_user
from gshare.identity import passwords, repository
from gshare.identity.models import LoginSession, User
from gshare.identity.password_policy import judge_password
from gshare.identity.principals import Principal, announce_user_changed
from gshare.identity.throttle import ACCOUNT_LIMITS, CLIENT_LIMITS, LONGEST_WINDOW, wait_seconds
from gshare.kit.clients import client_bucket
from gshare.kit.errors import (
    BadRequest,
    Conflict,
    GShareError,
    NotAuthenticated,
    TooManyRequests,
)
from gshare.kit.ids import new_id

TOUCH_EVERY = timedelta(minutes=1)  # last_seen_at is written at most this often per session


class InvalidCredentials(GShareError):
    status = 401
    code = "invalid_credentials"
    message = "The email or password is not correct."


class PasswordRejected(BadRequest):
    code = "password_rejected"


@dataclass(frozen=True)
class SessionPolicy:
    idle_timeout: timedelta
    absolute_timeout: timedelta


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class Attempt:
    """One sign-in (or password check) under way, counted against its account and client."""

    def __init__(self, attempts: Attempts, keys: tuple[str, ...], started: datetime) -> None:
        self._attempts = attempts
        self.keys = keys
        self.started = started
        self._open = True

    def end(self) -> None:
        if self._open:
            self._open = False
            self._attempts.end(self)


class Attempts:
    """Attempts under way in this process. Until its outcome is recorded an attempt counts as a
    failure for the throttle, so guesses sent in parallel cannot all pass the check before any
    failure is written. An attempt whose outcome never came is forgotten after a minute."""

    STALE = timedelta(minutes=1)

    def __init__(self) -> None:
        self._open: dict[str, list[Attempt]] = {}

    def begin(self, keys: tuple[str, ...], now: datetime) -> Attempt:
        attempt = Attempt(self, keys, now)
        for key in keys:
            open_now = [a for a in self._open.get(key, []) if now - a.started < self.STALE]
            self._open[key] = [*open_now, attempt]
        return attempt

    def others(self, key: str, attempt: Attempt, now: datetime) -> list[datetime]:
        return [
            a.started
            for a in self._open.get(key, [])
            if a is not attempt and now - a.started < self.STALE
        ]

    def end(self, attempt: Attempt) -> None:
        for key in attempt.keys:
            open_now = [a for a in self._open.get(key, []) if a is not attempt]
            if open_now:
                self._open[key] = open_now
            else:
                self._open.pop(key, None)


_attempts = Attempts()


def _begin(email_key: str, client: str, now: datetime) -> Attempt:
    return _attempts.begin((f"account:{email_key}", f"client:{client_bucket(client)}"), now)


def _failed(
    error: GShareError,
    email_key: str,
    client: str,
    now: datetime,
    event: AuditEvent,
    attempt: Attempt,
) -> GShareError:
    """`error`, with what to write after the request's rollback: the failure for the throttle
    and its audit entry. The attempt stops counting as under way once they are committed."""

    async def add(db: AsyncSession) -> None:
        await repository.add_failure(db, email_key, client_bucket(client), now, keep=LONGEST_WINDOW)

    error.durable += [add, record_later(event, now=now)]
    error.then.append(attempt.end)
    return error


AUDITED_EMAIL_LENGTH = 254  # the longest address SMTP carries


def typed_email(email_key: str) -> str:
    """The email a failed sign-in typed, as the audit log keeps and shows it: printable
    characters only (no terminal escapes, direction overrides or zero-width marks) and bounded.
    An account's own email has none of those, so it still matches its user."""
    kept = "".join(c for c in email_key if unicodedata.category(c) not in ("Cc", "Cf"))
    return kept[:AUDITED_EMAIL_LENGTH] or "(empty)"


def _failed_login(email_key: str, client: str, reason: str) -> AuditEvent:
    """Who tried is the email typed: nobody signed in, so no actor id, but the log names the
    attempt (the password never leaves `login`). Only super admins see an unknown email: an
    organization's admins see account entries whose target is one of their users."""
    typed = typed_email(email_key)
    return AuditEvent(
        action="auth.login",
        outcome="failed",
        actor_email=typed,
        target_type="user",
        target_id=typed,
        detail={"reason": reason, "client": client},
    )


async def _throttle(
    db: AsyncSession, email_key: str, client: str, now: datetime, attempt: Attempt
) -> None:
    since = now - LONGEST_WINDOW
    bucket = client_bucket(client)
    # Attempts under way are read before the failures stored: one that ends between the two
    # reads has committed its failure first, so it is counted once or twice, never missed.
    by_account = _attempts.others(f"account:{email_key}", attempt, now)
    by_client = _attempts.others(f"client:{bucket}", attempt, now)
    by_account += await repository.failure_times(db, email_key=email_key, since=since)
    by_client += await repository.failure_times(db, client=bucket, since=since)
    wait = max(
        wait_seconds(sorted(by_account), now, ACCOUNT_LIMITS),
        wait_seconds(sorted(by_client), now, CLIENT_LIMITS),
    )
    if wait:
        raise TooManyRequests(
            "Too many failed attempts. Wait before trying again.",
            code="too_many_attempts",
            retry_after=wait,
        )


async def _checked_password(
    db: AsyncSession,
    email_key: str,
    client: str,
    now: datetime,
    password: str,
    password_hash: str,
) -> tuple[bool, Attempt]:
    """Throttle, then verify; the attempt stays open for the caller to end or record."""
    attempt = _begin(email_key, client, now)  # before any await: parallel calls see each other
    try:
        await _throttle(db, email_key, client, now, attempt)
        ok = await passwords.verify_password(password_hash, password)
    except BaseException:
        attempt.end()
        raise
    return ok, attempt


def stored_user_agent(user_agent: str | None) -> str | None:
    """A User-Agent as it is kept and shown: caller text, so printable characters only
    (PostgreSQL refuses NUL in text) and bounded by its column."""
    kept = "".join(c for c in (user_agent or "") if c.isprintable())[:300]
    return kept or None


def _agent_name(user_agent: str | None) -> str:
    return (stored_user_agent(user_agent) or "an unnamed client")[:120]


def _open_login_session(
    db: AsyncSession,
    user: User,
    *,
    client: str,
    user_agent: str | None,
    now: datetime,
    policy: SessionPolicy,
) -> tuple[str, LoginSession]:
    """A new login session with a fresh cookie token and CSRF token; returns the raw token."""
    token = secrets.token_urlsafe(32)
    login_session = LoginSession(
        id=new_id(),
        token_hash=token_hash(token),
        user_id=user.id,
        csrf_token=secrets.token_urlsafe(32),
        created_at=now,
        last_seen_at=now,
        expires_at=now + policy.absolute_timeout,
        client=client[:64],
        user_agent=stored_user_agent(user_agent),
    )
    db.add(login_session)
    return token, login_session


async def login(
    db: AsyncSession,
    *,
    email: str,
    password: str,
    client: str,
    user_agent: str | None,
    now: datetime,
    policy: SessionPolicy,
) -> tuple[User, str, LoginSession]:
    """Check the password and open a login session; returns the raw cookie token once."""
    email_key = email.strip().lower()[:320]
    user = await repository.user_by_email(db, email_key)
    # Unknown accounts verify against a dummy hash so both failures cost the same time.
    ok, attempt = await _checked_password(
        db,
        email_key,
        client,
        now,
        password,
        user.password_hash if user else passwords.DUMMY_HASH,
    )
    if user is None or not ok or not user.active:
        reason = "unknown_email" if user is None else ("inactive" if ok else "wrong_password")
        event = _failed_login(email_key, client, reason)
        raise _failed(InvalidCredentials(), email_key, client, now, event, attempt)
    attempt.end()
    if passwords.needs_rehash(user.password_hash):
        user.password_hash = await passwords.hash_password(password)
    agent = stored_user_agent(user_agent)
    if await repository.signs_in_from_new_client(db, user.id, client, agent):
        await notify_user(
            db,
            user.id,
            "account.new_sign_in",
            title="New sign-in to your account",
            body=f"A sign-in from {client} ({_agent_name(user_agent)}). If it was not you, "
            "change your password.",
            now=now,
            data={"client": client},
        )
    token, login_session = _open_login_session(
        db, user, client=client, user_agent=user_agent, now=now, policy=policy
    )
    await record(
        db, _about_self(user.id, user.email, "auth.login", detail={"client": client}), now=now
    )
    await db.flush()
    return user, token, login_session


async def authenticate(
    db: AsyncSession, key: bytes, *, now: datetime, policy: SessionPolicy
) -> Principal:
    """The live login session behind a cookie token's hash; raises NotAuthenticated otherwise."""
    found = await repository.session_with_user(db, key)
    if found is None:
        raise NotAuthenticated()
    login_session, user = found
    if login_session.revoked_at is not None or not user.active:
        raise NotAuthenticated("Your sign-in has ended. Sign in again.", code="session_expired")
    rows = await repository.role_rows(db, user.id)
    principal = Principal(
        login_id=login_session.id,
        csrf_token=login_session.csrf_token,
        login_expires_at=login_session.expires_at,
        last_seen_at=login_session.last_seen_at,
        user_id=user.id,
        email=user.email,
        name=user.name,
        is_super_admin=user.is_super_admin,
        must_change_password=user.must_change_password,
        active=user.active,
        created_at=user.created_at,
        actor=repository.actor_from_rows(user, rows, now),
        changes_at=min(
            (r.expires_at for r in rows if r.expires_at is not None and r.expires_at > now),
            default=None,
        ),
    )
    check_live(principal, now=now, policy=policy)
    return principal


def check_live(principal: Principal, *, now: datetime, policy: SessionPolicy) -> None:
    if now >= principal.login_expires_at or now - principal.last_seen_at >= policy.idle_timeout:
        raise NotAuthenticated("Your sign-in has ended. Sign in again.", code="session_expired")


def needs_touch(principal: Principal, now: datetime) -> bool:
    return now - principal.last_seen_at >= TOUCH_EVERY


def csrf_matches(principal: Principal, presented: str | None) -> bool:
    return presented is not None and hmac.compare_digest(
        presented.encode(), principal.csrf_token.encode()
    )


async def _own_rows(db: AsyncSession, principal: Principal) -> tuple[User, LoginSession]:
    user = await repository.user_by_id(db, principal.user_id)
    login_session = await db.get(LoginSession, principal.login_id)
    if user is None or login_session is None:
        raise NotAuthenticated()
    return user, login_session


def _about_self(user_id: uuid.UUID, email: str, action: str, **fields: Any) -> AuditEvent:
    """An audit event of a user acting on their own account."""
    return AuditEvent(
        action=action,
        actor_id=user_id,
        actor_email=email,
        target_type="user",
        target_id=str(user_id),
        **fields,
    )


async def logout(db: AsyncSession, principal: Principal, *, now: datetime) -> None:
    _, login_session = await _own_rows(db, principal)
    login_session.revoked_at = now
    await announce_user_changed(db, principal.user_id)
    await record(db, _about_self(principal.user_id, principal.email, "auth.logout"), now=now)
    await db.flush()


def check_new_password(password: str, *, email: str | None, name: str | None) -> None:
    verdict = judge_password(password, email=email, name=name)
    if not verdict.acceptable:
        raise PasswordRejected(verdict.warning or "This password is not strong enough.")


async def change_password(
    db: AsyncSession,
    principal: Principal,
    *,
    current: str,
    new: str,
    now: datetime,
    policy: SessionPolicy,
    client: str = "",
    user_agent: str | None = None,
) -> tuple[str, LoginSession]:
    """Change the caller's password. Every sign-in of the user ends, this one included, and a
    new one takes its place: the returned cookie token and its CSRF token replace the old.

    Guesses of the current password count against the same throttle as sign-ins, so a stolen
    cookie is no way around it."""
    user, _ = await _own_rows(db, principal)
    ok, attempt = await _checked_password(db, user.email, client, now, current, user.password_hash)
    if not ok:
        event = _about_self(
            user.id,
            user.email,
            "auth.password_change",
            outcome="failed",
            detail={"reason": "wrong_current_password", "client": client},
        )
        error = InvalidCredentials("The current password is not correct.")
        raise _failed(error, user.email, client, now, event, attempt)
    attempt.end()
    if current == new:
        raise PasswordRejected("Choose a password different from the current one.")
    check_new_password(new, email=user.email, name=user.name)
    user.password_hash = await passwords.hash_password(new)
    user.must_change_password = False
    user.password_changed_at = now
    await repository.revoke_login_sessions(db, user.id, now)
    token, fresh = _open_login_session(
        db, user, client=client, user_agent=user_agent, now=now, policy=policy
    )
    await announce_user_changed(db, user.id)
    await record(db, _about_self(user.id, user.email, "auth.password_change"), now=now)
    await notify_user(
        db,
        user.id,
        "account.password_changed",
        title="Your password was changed",
        body="Every other sign-in of yours has ended. If it was not you, tell an administrator.",
        now=now,
    )
    await db.flush()
    return token, fresh


async def set_initial_password(db: AsyncSession, user: User, password: str, now: datetime) -> None:
    """A password the user must change at their next sign-in; every sign-in of theirs ends."""
    user.password_hash = await passwords.hash_password(password)
    user.must_change_password = True
    user.password_changed_at = now
    await repository.revoke_login_sessions(db, user.id, now)
    await announce_user_changed(db, user.id)
    await db.flush()


async def bootstrap_super_admin(
    db: AsyncSession,
    *,
    email: str,
    password: str,
    name: str,
    now: datetime,
    recovery: dict[str, Any] | None = None,
) -> bool:
    """A super admin made by whoever runs the host, straight on the database. Returns whether
    the account was created.

    At start (no `recovery`): the first super admin, from the configured password, and only
    while there is none; an account that already has the email is refused, never touched.

    Recovery (`gshare recover-admin`; `recovery` says who asked, for the audit entry): the
    account with the email becomes an active super admin with a new initial password and no
    sign-ins left, or is created as one with that initial password.
    """
    recovering = recovery is not None
    if not recovering and await repository.any_super_admin(db):
        return False
    email = email.strip().lower()
    user = await repository.user_by_email(db, email)
    created = user is None
    if user is None:
        check_new_password(password, email=email, name=name)
        user = User(
            id=new_id(),
            email=email,
            name=name,
            password_hash=await passwords.hash_password(password),
            must_change_password=recovering,
            is_super_admin=True,
            active=True,
            created_at=now,
            password_changed_at=now,
        )
        db.add(user)
        await db.flush()
    elif recovering:
        check_new_password(password, email=user.email, name=user.name)
        user.is_super_admin = True
        user.active = True
        await set_initial_password(db, user, password, now)
    else:
        raise Conflict(
            f"{email} already belongs to an account that is not a super admin; "
            "choose another GSHARE_BOOTSTRAP_ADMIN_EMAIL",
            code="email_taken",
        )
    if recovery is not None:
        event = AuditEvent(
            action="user.recover_admin",
            target_type="user",
            target_id=str(user.id),
            detail={**recovery, "created": created},
        )
    else:
        event = AuditEvent(action="user.bootstrap_super_admin", target_type="user", target_id=email)
    await record(db, event, now=now)
    await db.flush()
    return created
