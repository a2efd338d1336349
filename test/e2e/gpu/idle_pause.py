"""A GPU session nobody uses is paused once its group's idle timeout has passed, and its
billing stops at the pause.

With GSHARE_GPU_E2E_ADMIN_EMAIL and _PASSWORD (an admin of the group) the suite sets the
group's `idle_timeout_minutes` to GSHARE_GPU_E2E_IDLE_TIMEOUT_MINUTES and puts the group's policy
back afterwards; without them the group (or the user) must already set an idle timeout.

Not part of `make test`; see README.md for its environment."""

from __future__ import annotations

import time
from datetime import datetime

from common import Json, Suite, amount, charge_for, run_suite

SUITE = "idle_pause"
# The worker's idle check and the operator's metrics each run about once a minute by default.
SLACK_SECONDS = 300


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _idle_timeout(suite: Suite) -> int | None:
    """The idle timeout that applies to the suite's user in its group."""
    found = suite.api.get(
        f"/api/v1/users/{suite.api.user_id}/effective-policy", group_id=suite.config.group_id
    )
    value = next((v["value"] for v in found["values"] if v["key"] == "idle_timeout_minutes"), None)
    return int(value) if value is not None else None


def _set_group_idle_timeout(suite: Suite) -> None:
    admin = suite.admin_api()
    if admin is None:
        return
    path = f"/api/v1/policies/groups/{suite.config.group_id}"
    before: Json = admin.get(path)["values"]
    minutes = suite.config.idle_timeout_minutes
    admin.put(path, {"values": {**before, "idle_timeout_minutes": minutes}})
    # A policy that sets nothing is removed, so this also undoes a policy the suite created.
    suite.undo.append(("restore the group's policy", lambda: admin.put(path, {"values": before})))
    suite.check("policy", True, f"the group's idle timeout is set to {minutes} min")


def _transition(session: Json, to_state: str) -> Json | None:
    return next((t for t in session["transitions"] or [] if t["to_state"] == to_state), None)


def check(suite: Suite) -> None:
    _set_group_idle_timeout(suite)
    timeout = _idle_timeout(suite)
    if timeout is None:
        suite.fail(
            "policy",
            "no idle timeout applies to the user in the group: give GSHARE_GPU_E2E_ADMIN_EMAIL "
            "and _ADMIN_PASSWORD, or have an admin PUT /api/v1/policies/groups/"
            f'{suite.config.group_id} {{"values": {{"idle_timeout_minutes": 1}}}}',
        )
    suite.note(f"the idle timeout that applies: {timeout} min")

    tier = suite.tier(suite.config.quarter_tier)
    created = suite.create_session(tier, "idle")
    session_id = created["id"]
    running = suite.wait_state(session_id, {"running"})
    price = amount(running["price_per_hour"])
    suite.check("running", running["billing"], "the session runs, billed, and is left alone")

    # It is warned first and paused once both the timeout and the warning have passed.
    wait_s = (timeout + suite.config.idle_warning_minutes) * 60 + SLACK_SECONDS
    suite.wait_state(session_id, {"pausing", "paused"}, wait_s)
    paused = suite.wait_state(session_id, {"paused"}, 300)
    history = suite.session(session_id)
    ran = _transition(history, "running")
    allocated = _transition(history, "starting")
    released = _transition(history, "pausing")
    if ran is None or allocated is None or released is None:
        suite.fail("history", f"no run, allocation or pause in its history: {history}")
    # The pause's own reason: the session's current one already tells of the pod going.
    why = released["reason"]
    suite.check(
        "paused_for_idle",
        released["from_state"] == "running" and "idle" in why.lower(),
        f"it was paused for being idle: {why}",
        f"it went from {released['from_state']} to pausing, not for being idle: {why}",
    )
    idle_for = (_at(released["at"]) - _at(ran["at"])).total_seconds()
    suite.check(
        "not_early",
        idle_for >= timeout * 60,
        f"it ran {idle_for:.0f} s before the pause, not less than the {timeout} min timeout",
        f"it was paused after {idle_for:.0f} s, before its {timeout} min timeout",
    )
    if suite.config.kubeconfig:
        suite.check(
            "pod_gone",
            suite.pod_gone(session_id),
            "its pod is gone",
            "it is paused but its pod is still there",
        )

    seconds = int((_at(released["at"]) - _at(allocated["at"])).total_seconds())
    expected = charge_for(price, seconds)
    charged = -sum(
        (amount(e["amount"]) for e in suite.capture_entries(session_id, created["created_at"])),
        start=amount("0"),
    )
    suite.check(
        "charged_until_pause",
        not paused["billing"] and abs(charged - expected) <= price / 3600 + amount("0.000001"),
        f"billing ended at the pause: charged {charged} for {seconds} s at {price}/h",
        f"billing={paused['billing']}; charged {charged}, but {seconds} s at {price}/h is "
        f"{expected}",
    )

    # Nothing more may be charged while it stays paused, across a metering interval or more.
    until = time.monotonic() + suite.config.observe_seconds
    while time.monotonic() < until:
        time.sleep(5)
        now = suite.session(session_id)
        if now["state"] != "paused" or now["billing"] or amount(now["cost"]) != charged:
            suite.fail(
                "billing_stopped",
                f"while paused it became {now['state']}, billing={now['billing']}, "
                f"cost {now['cost']} (was {charged})",
            )
    later = suite.capture_entries(session_id, created["created_at"])
    after = [e for e in later if _at(e["at"]) > _at(released["at"])]
    suite.check(
        "billing_stopped",
        not after,
        f"no charge in the {suite.config.observe_seconds:g} s after the pause",
        f"{len(after)} charges after the pause: {after}",
    )


if __name__ == "__main__":
    run_suite(SUITE, check, needs_kubectl=False)
