"""The session lifecycle table: every change is allowed or refused by name, allocations are given
back on the way out of the states that hold one, and every session can always be stopped."""

from __future__ import annotations

from collections import deque
from typing import get_args

import pytest

from gshare.sessions.lifecycle import (
    FINAL,
    HOLDING,
    STATES,
    TABLE,
    WAITING,
    Action,
    InvalidTransition,
    State,
    Transition,
    allowed,
    transition,
)

ACTIONS: tuple[Action, ...] = get_args(Action)
PAIRS = [(s, a) for s in STATES for a in ACTIONS]

# The whole table as it is meant to be, written out once so that a changed row is seen.
EXPECTED: dict[tuple[State, Action], Transition] = {
    ("queued", "admitted"): Transition("starting", desired="Running"),
    ("queued", "refused"): Transition("failed"),
    ("queued", "pause"): Transition("paused", cancel=True),
    ("queued", "stop"): Transition("stopped", cancel=True),
    ("resuming", "admitted"): Transition("starting", desired="Running"),
    ("resuming", "refused"): Transition("paused"),
    ("resuming", "pause"): Transition("paused", cancel=True),
    ("resuming", "stop"): Transition("stopping", desired="Removed", cancel=True),
    ("starting", "pod_running"): Transition("running"),
    ("starting", "pod_failed"): Transition("failed", desired="Paused", release=True),
    ("starting", "pause"): Transition("pausing", desired="Paused", release=True),
    ("starting", "stop"): Transition("stopping", desired="Removed", release=True),
    ("starting", "lose"): Transition("lost", desired="Paused", release=True),
    ("running", "pod_failed"): Transition("failed", desired="Paused", release=True),
    ("running", "pause"): Transition("pausing", desired="Paused", release=True),
    ("running", "stop"): Transition("stopping", desired="Removed", release=True),
    ("running", "lose"): Transition("lost", desired="Paused", release=True),
    ("pausing", "pod_gone"): Transition("paused"),
    ("pausing", "resume"): Transition("resuming", admit=True),
    ("pausing", "stop"): Transition("stopping", desired="Removed"),
    ("pausing", "lose"): Transition("lost"),
    ("paused", "resume"): Transition("resuming", admit=True),
    ("paused", "stop"): Transition("stopping", desired="Removed"),
    ("failed", "resume"): Transition("resuming", admit=True),
    ("failed", "stop"): Transition("stopping", desired="Removed"),
    ("lost", "resume"): Transition("resuming", admit=True),
    ("lost", "stop"): Transition("stopping", desired="Removed"),
    ("stopping", "removed"): Transition("stopped"),
}


def test_the_table_is_exactly_the_documented_one() -> None:
    assert TABLE == EXPECTED


def test_the_table_names_only_known_states_and_actions() -> None:
    assert len(set(STATES)) == len(STATES) == 10
    assert len(set(ACTIONS)) == len(ACTIONS) == 10
    for (state, action), step in TABLE.items():
        assert state in STATES
        assert action in ACTIONS
        assert step.to in STATES


@pytest.mark.parametrize(("state", "action"), PAIRS)
def test_every_state_and_action_either_moves_or_is_refused_by_name(
    state: State, action: Action
) -> None:
    if (state, action) in TABLE:
        assert transition(state, action) is TABLE[(state, action)]
        return
    with pytest.raises(InvalidTransition) as refused:
        transition(state, action)
    assert refused.value.state == state
    assert refused.value.action == action
    assert str(refused.value) == f"cannot {action} a session that is {state}"


def test_an_unknown_state_is_refused_not_a_key_error() -> None:
    with pytest.raises(InvalidTransition) as refused:
        transition("deleted", "stop")
    assert (refused.value.state, refused.value.action) == ("deleted", "stop")
    assert allowed("deleted") == []


def test_a_stopped_session_has_no_way_out() -> None:
    assert set(FINAL) == {"stopped"}
    assert [key for key in TABLE if key[0] in FINAL] == []
    for action in ACTIONS:
        with pytest.raises(InvalidTransition):
            transition("stopped", action)


@pytest.mark.parametrize("state", [s for s in STATES if s not in FINAL])
def test_every_live_state_has_a_way_out_and_a_way_to_stopped(state: State) -> None:
    assert any(key[0] == state for key in TABLE)
    seen, todo = {state}, deque([state])
    while todo:
        here = todo.popleft()
        for (source, _), step in TABLE.items():
            if source == here and step.to not in seen:
                seen.add(step.to)
                todo.append(step.to)
    assert "stopped" in seen


def test_every_state_is_reachable_from_a_new_queued_session() -> None:
    seen, todo = {"queued"}, deque(["queued"])
    while todo:
        here = todo.popleft()
        for (source, _), step in TABLE.items():
            if source == here and step.to not in seen:
                seen.add(step.to)
                todo.append(step.to)
    assert seen == set(STATES)


def test_no_change_leaves_a_session_where_it_was() -> None:
    assert [key for key, step in TABLE.items() if step.to == key[0]] == []


def test_the_allocation_is_released_exactly_when_leaving_the_states_that_hold_one() -> None:
    """Released on every way out of HOLDING, and never from a state that holds nothing (there is
    nothing to release, and a second release would settle a hold twice)."""
    for (state, action), step in TABLE.items():
        leaves = state in HOLDING and step.to not in HOLDING
        assert step.release == leaves, (state, action)


def test_a_session_enters_a_holding_state_only_admitted_and_wanted_running() -> None:
    entries = {key: step for key, step in TABLE.items() if step.to in HOLDING}
    from_outside = {key: step for key, step in entries.items() if key[0] not in HOLDING}
    assert set(from_outside) == {("queued", "admitted"), ("resuming", "admitted")}
    assert all(step.desired == "Running" for step in from_outside.values())
    # Within HOLDING (starting -> running) the resource already wants Running.
    assert {key: step.desired for key, step in entries.items() if key[0] in HOLDING} == {
        ("starting", "pod_running"): None
    }


def test_leaving_a_holding_state_never_leaves_the_pod_wanted_running() -> None:
    for (state, action), step in TABLE.items():
        if state in HOLDING and step.to not in HOLDING:
            assert step.desired in ("Paused", "Removed"), (state, action)


def test_the_queue_request_is_withdrawn_only_when_a_waiting_session_stops_waiting() -> None:
    for (state, action), step in TABLE.items():
        stops_waiting = state in WAITING and step.to not in WAITING | HOLDING
        # A refusal already ended the request: there is nothing left to withdraw.
        assert step.cancel == (stops_waiting and action != "refused"), (state, action)


def test_capacity_is_asked_again_exactly_on_the_way_into_resuming() -> None:
    for (state, action), step in TABLE.items():
        assert step.admit == (step.to == "resuming"), (state, action)
        if step.admit:
            assert action == "resume"
            assert step.desired is None
            assert not step.release


def test_waiting_sessions_leave_the_queue_only_admitted_refused_or_by_their_owner() -> None:
    leaving = {a for (s, a), step in TABLE.items() if s in WAITING and step.to not in WAITING}
    assert leaving == {"admitted", "refused", "pause", "stop"}


def test_the_resource_is_removed_exactly_on_the_way_into_stopping() -> None:
    for (state, action), step in TABLE.items():
        assert (step.desired == "Removed") == (step.to == "stopping"), (state, action)
        if action == "stop":
            assert step.to in ("stopping", "stopped"), state
        if step.to == "stopping":
            assert action == "stop", state


def test_only_a_session_that_never_had_a_resource_skips_stopping() -> None:
    into_stopped = {key for key, step in TABLE.items() if step.to == "stopped"}
    assert into_stopped == {("queued", "stop"), ("stopping", "removed")}


def test_the_state_sets_fit_together() -> None:
    assert set(STATES) >= HOLDING | WAITING | FINAL
    assert set(HOLDING) == {"starting", "running"}
    assert set(WAITING) == {"queued", "resuming"}
    assert not HOLDING & WAITING
    assert not (HOLDING | WAITING) & FINAL
    # failed and lost hold nothing and wait for nothing.
    assert not {"failed", "lost"} & (HOLDING | WAITING)


def _resource_states() -> dict[State, set[bool]]:
    """For every state, whether a session can be in it with / without a resource having been
    applied, following the table from a new queued session."""
    found: dict[State, set[bool]] = {}
    start: tuple[State, bool] = ("queued", False)
    seen, todo = {start}, deque([start])
    while todo:
        here, applied = todo.popleft()
        found.setdefault(here, set()).add(applied)
        for (source, _), step in TABLE.items():
            if source != here:
                continue
            after = applied or step.desired in ("Running", "Paused")
            nxt = (step.to, after and step.to != "stopped")
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return found


def test_a_resource_exists_in_the_states_that_the_table_gives_one() -> None:
    found = _resource_states()
    assert set(found) == set(STATES)
    assert {s for s, v in found.items() if v == {True}} == {
        "starting",
        "running",
        "pausing",
        "lost",
    }
    assert {s for s, v in found.items() if v == {False}} == {"queued", "stopped"}
    # The holding states always have one.
    assert all(found[s] == {True} for s in HOLDING)


@pytest.mark.parametrize(
    ("state", "buttons"),
    [
        ("queued", ["pause", "stop"]),
        ("starting", ["pause", "stop"]),
        ("running", ["pause", "stop"]),
        ("resuming", ["pause", "stop"]),
        ("pausing", ["resume", "stop"]),
        ("paused", ["resume", "stop"]),
        ("failed", ["resume", "stop"]),
        ("lost", ["resume", "stop"]),
        ("stopping", []),
        ("stopped", []),
    ],
)
def test_the_console_offers_the_user_actions_the_table_allows(
    state: State, buttons: list[str]
) -> None:
    assert allowed(state) == buttons
    for action in ("pause", "resume", "stop"):
        assert (action in buttons) == ((state, action) in TABLE)


def test_every_user_action_is_offered_somewhere_and_pause_and_resume_never_together() -> None:
    offered = {s: allowed(s) for s in STATES}
    for action in ("pause", "resume", "stop"):
        assert any(action in buttons for buttons in offered.values())
    assert all(not {"pause", "resume"} <= set(b) for b in offered.values())
