"""The one place cross-domain hooks are connected, for the API and the worker alike.

A lower domain owns a `Hook` or `Guard` (see `gshare.kit.hooks`); the domains above connect
their handlers here. Both the app factory and the worker's loops call `connect_hooks()`, so a
handler that work in either process needs is never missing from the other.
"""

from __future__ import annotations

from gshare.capacity import admission as capacity_admission
from gshare.capacity import preempting as capacity_preempting
from gshare.capacity import service as capacity_service
from gshare.clusters import service as clusters_service
from gshare.credits import service as credits_service
from gshare.credits import views as credits_views
from gshare.events import hub as events_hub
from gshare.identity import service as identity_service
from gshare.sessions import service as sessions_service


def connect_hooks() -> None:
    """Connect every handler to its hook. Idempotent: `Hook.connect` skips a handler already
    connected, so each process may call this as often as it builds an app or a worker."""
    # Sessions first: the credits guard closes the wallet, which only a deletion may do.
    identity_service.deletion_guard.connect(sessions_service.refuse_while_sessions_in)
    identity_service.deletion_guard.connect(credits_service.refuse_while_wallet_holds_credits)
    identity_service.deactivated.connect(sessions_service.pause_deactivated)
    identity_service.membership_ended.connect(sessions_service.pause_left_group)
    capacity_admission.cancelling.connect(sessions_service.end_cancelled_wait)
    # A walk of the queue locks the waiting sessions before their requests.
    capacity_admission.locking_waiters.connect(sessions_service.lock_waiters)
    # Sessions follow what the queue decides, in the dequeue's own transaction.
    capacity_admission.dequeued.connect(sessions_service.follow_queue)
    # Sessions given notice are told; at the deadline they are paused and queued again.
    capacity_preempting.noticed.connect(sessions_service.tell_noticed)
    capacity_preempting.withdrawn.connect(sessions_service.tell_withdrawn)
    capacity_preempting.notice_due.connect(sessions_service.pause_noticed)
    capacity_preempting.idle_among.connect(sessions_service.idle_among)
    clusters_service.removal_guard.connect(sessions_service.refuse_while_sessions_live)
    clusters_service.removal_guard.connect(capacity_service.refuse_while_cards_held)
    clusters_service.card_counts.connect(capacity_service.card_counts)
    clusters_service.isolation_changed.connect(capacity_service.capacity_changed)
    credits_service.ended_sessions.connect(sessions_service.ended_among)
    credits_service.ended_sessions.connect(capacity_admission.ended_among)
    credits_views.session_names.connect(sessions_service.session_names)
    events_hub.scopes_of.connect(identity_service.event_scopes)
