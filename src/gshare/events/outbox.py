"""Recording events: the one call a service makes, inside its own transaction.

An event row commits or rolls back with the change it describes, so a rolled-back change is
never announced and a committed one is never lost. Recording sends no NOTIFY: a transaction
that notifies takes a cluster-wide lock at commit, which would serialize every writer. Instead
each process's relay is woken once the recording transaction commits (and polls as a safety
net), numbers the new rows and notifies once per batch.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

_RECORDED = "gshare_events_recorded"


@dataclass(frozen=True)
class Audience:
    """Who may see an event: the user it is about, the admins of its group or organization
    (super admins see every event). An event with no audience is seen by super admins only;
    one for `everyone` by every signed-in user (it must name nothing private)."""

    user_id: uuid.UUID | None = None
    group_id: uuid.UUID | None = None
    org_id: uuid.UUID | None = None
    private: bool = False  # the user alone
    everyone: bool = False

    @classmethod
    def only(cls, user_id: uuid.UUID) -> Audience:
        return cls(user_id=user_id, private=True)

    @classmethod
    def signed_in(cls) -> Audience:
        return cls(everyone=True)


@dataclass(frozen=True)
class NewEvent:
    kind: str
    audience: Audience
    data: dict[str, Any] = field(default_factory=dict)


_INSERT_SQL = (
    "INSERT INTO events (kind, user_id, group_id, org_id, private, everyone, data) "
    "SELECT * FROM unnest(CAST(:ev_kinds AS varchar[]), CAST(:ev_users AS uuid[]), "
    "CAST(:ev_groups AS uuid[]), CAST(:ev_orgs AS uuid[]), CAST(:ev_private AS boolean[]), "
    "CAST(:ev_everyone AS boolean[]), CAST(:ev_data AS jsonb[]))"
)
_INSERT = text(_INSERT_SQL)

# For a hot path that writes everything in one statement (a credit movement): a CTE that
# records events within it, so recording them costs no round trip of its own. Pass
# `params(events)` with the statement's parameters, then `recorded(db)`.
RECORD_CTE = f"ev AS ({_INSERT_SQL} RETURNING 1)"


def params(events: Sequence[NewEvent]) -> dict[str, list[Any]]:
    return {
        "ev_kinds": [e.kind for e in events],
        "ev_users": [e.audience.user_id for e in events],
        "ev_groups": [e.audience.group_id for e in events],
        "ev_orgs": [e.audience.org_id for e in events],
        "ev_private": [e.audience.private for e in events],
        "ev_everyone": [e.audience.everyone for e in events],
        "ev_data": [json.dumps(e.data, separators=(",", ":")) for e in events],
    }


def recorded(db: AsyncSession) -> None:
    """Note that this transaction recorded events: its commit wakes the relays."""
    db.info[_RECORDED] = True


async def record_many(db: AsyncSession, events: Sequence[NewEvent]) -> None:
    """Record events in the caller's transaction, in one statement."""
    if not events:
        return
    await db.execute(_INSERT, params(events))
    recorded(db)


async def record(
    db: AsyncSession, kind: str, audience: Audience, data: dict[str, Any] | None = None
) -> None:
    await record_many(db, [NewEvent(kind, audience, data or {})])


# ---- waking the relays after commit ---------------------------------------------------------

_wakers: list[Callable[[], None]] = []


def on_commit_of_events(wake: Callable[[], None]) -> Callable[[], None]:
    """Call `wake` after each commit that recorded events in this process; returns the undo."""
    _wakers.append(wake)
    return lambda: _wakers.remove(wake)


@event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    if session.info.pop(_RECORDED, False):
        for wake in list(_wakers):
            wake()


@event.listens_for(Session, "after_rollback")
def _after_rollback(session: Session) -> None:
    session.info.pop(_RECORDED, None)
