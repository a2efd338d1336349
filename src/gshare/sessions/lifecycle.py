"""A session's states, which changes are allowed, and what each change does. Pure.

    queued ──admitted──▶ starting ──pod ready──▶ running
      │                     │                       │
      │ pause/stop          │ pause/stop/failed     │ pause (user, idle, credits, max length)
      ▼                     ▼                       ▼
    paused ◀──pod gone── pausing ◀──────────────────┘
      │ resume
      ▼
    resuming ──admitted──▶ starting …

`stop` from a state with a pod goes through `stopping` (the resource is being removed) to
`stopped`; from one without a pod straight to `stopped`. `failed` (the pod failed) and `lost`
(its cluster stopped reporting it, or the pod vanished without a pause) hold nothing and may be
resumed or stopped. `stopped` is final.

A session holds a GPU allocation, and is billed, exactly in `starting`, `running` (and while a
pause or stop is being asked for, until the same transaction releases it): every change into a
state that `holds_nothing` releases the allocation and settles its hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

State = Literal[
    "queued",
    "starting",
    "running",
    "pausing",
    "paused",
    "resuming",
    "stopping",
    "stopped",
    "failed",
    "lost",
]
STATES: tuple[State, ...] = get_args(State)
Action = Literal[
    "admitted",  # the capacity queue (or the first ask) gave it a card
    "refused",  # the queue refused it (credits, policy, a retired tier)
    "pod_running",
    "pod_failed",
    "pod_gone",  # the operator reports the pod gone after a pause
    "removed",  # the resource is gone from the cluster after a stop
    "pause",
    "resume",
    "stop",
    "lose",
]

# States in which the session holds an allocation (or waits for one, queued).
HOLDING: frozenset[State] = frozenset({"starting", "running"})
WAITING: frozenset[State] = frozenset({"queued", "resuming"})
FINAL: frozenset[State] = frozenset({"stopped"})


@dataclass(frozen=True)
class Transition:
    to: State
    desired: Literal["Running", "Paused", "Removed", None] = None  # the resource's new spec
    release: bool = False  # give the allocation back and settle its hold
    cancel: bool = False  # withdraw the queued admission request
    admit: bool = False  # ask capacity for a card again


_T = Transition
TABLE: dict[tuple[State, Action], Transition] = {
    ("queued", "admitted"): _T("starting", desired="Running"),
    ("resuming", "admitted"): _T("starting", desired="Running"),
    ("queued", "refused"): _T("failed"),
    ("resuming", "refused"): _T("paused"),
    ("starting", "pod_running"): _T("running"),
    ("starting", "pod_failed"): _T("failed", desired="Paused", release=True),
    ("running", "pod_failed"): _T("failed", desired="Paused", release=True),
    ("pausing", "pod_gone"): _T("paused"),
    ("stopping", "removed"): _T("stopped"),
    ("starting", "pause"): _T("pausing", desired="Paused", release=True),
    ("running", "pause"): _T("pausing", desired="Paused", release=True),
    ("queued", "pause"): _T("paused", cancel=True),
    ("resuming", "pause"): _T("paused", cancel=True),
    ("paused", "resume"): _T("resuming", admit=True),
    # Resumed before the pod was gone: the same resource is simply wanted running again.
    ("pausing", "resume"): _T("resuming", admit=True),
    ("failed", "resume"): _T("resuming", admit=True),
    ("lost", "resume"): _T("resuming", admit=True),
    ("queued", "stop"): _T("stopped", cancel=True),
    ("resuming", "stop"): _T("stopping", desired="Removed", cancel=True),
    ("starting", "stop"): _T("stopping", desired="Removed", release=True),
    ("running", "stop"): _T("stopping", desired="Removed", release=True),
    ("pausing", "stop"): _T("stopping", desired="Removed"),
    ("paused", "stop"): _T("stopping", desired="Removed"),
    ("failed", "stop"): _T("stopping", desired="Removed"),
    ("lost", "stop"): _T("stopping", desired="Removed"),
    # A lost session holds nothing, so its resource must not run a pod again either.
    ("starting", "lose"): _T("lost", desired="Paused", release=True),
    ("running", "lose"): _T("lost", desired="Paused", release=True),
    ("pausing", "lose"): _T("lost"),
}


_USER_ACTIONS: tuple[Literal["pause", "resume", "stop"], ...] = ("pause", "resume", "stop")


class InvalidTransition(Exception):
    def __init__(self, state: str, action: str) -> None:
        self.state, self.action = state, action
        super().__init__(f"cannot {action} a session that is {state}")


def transition(state: str, action: Action) -> Transition:
    """The change `action` makes from `state`; raises InvalidTransition when it makes none."""
    found = TABLE.get((state, action))  # type: ignore[arg-type]
    if found is None:
        raise InvalidTransition(state, action)
    return found


def allowed(state: str) -> list[Literal["pause", "resume", "stop"]]:
    """The user actions allowed from `state`, for the console's buttons."""
    return [a for a in _USER_ACTIONS if (state, a) in TABLE]
