"""Quarter-card sessions fill the cards until the next one waits in the queue; stopping one
lets the queued one start on the slot it freed; everything is stopped at the end.

Not part of `make test`; see README.md for its environment."""

from __future__ import annotations

from common import LIVE, Json, Suite, run_suite

SUITE = "oversubscription_queue"


def check(suite: Suite) -> None:
    tier = suite.tier(suite.config.quarter_tier)
    admitted: list[Json] = []
    queued: Json | None = None
    for number in range(1, suite.config.max_sessions + 1):
        created = suite.create_session(tier, f"#{number}")
        if created["state"] == "queued":
            queued = created
            break
        if created["state"] != "starting":
            suite.fail("admitted", f"it was {created['state']}: {created['state_reason']}")
        admitted.append(created)
    if queued is None:
        suite.fail(
            "queued",
            f"{suite.config.max_sessions} {tier['name']} sessions were all admitted; use a "
            "cluster with fewer free slots or raise GSHARE_GPU_E2E_MAX_SESSIONS",
        )
    suite.check(
        "filled",
        bool(admitted),
        f"{len(admitted)} {tier['name']} sessions were admitted before one had to wait",
        "the first session already had to wait: the cards are full before the suite started",
    )
    for session in admitted:
        suite.wait_state(session["id"], {"running"})
    suite.check("all_running", True, f"all {len(admitted)} admitted sessions are running")

    waiting = suite.session(queued["id"])
    suite.check(
        "queued",
        waiting["state"] == "queued"
        and not waiting["billing"]
        and waiting["queue_position"] is not None,
        f"session #{len(admitted) + 1} waits at queue position {waiting['queue_position']}, "
        "unbilled",
        f"it is {waiting['state']} (billing={waiting['billing']}, "
        f"position={waiting['queue_position']}) while the cards are full",
    )
    if suite.config.kubeconfig:
        suite.check(
            "queued_has_no_pod",
            suite.pod(queued["id"]) is None,
            "the queued session has no pod in the cluster",
            "the queued session already has a pod",
        )

    freed = admitted.pop(0)
    suite.stop_session(freed["id"])
    started = suite.wait_state(queued["id"], {"starting", "running"})
    suite.check(
        "dequeued",
        started["billing"],
        f"stopping {freed['id']} let the queued session start ({started['state']}, billed)",
        f"it left the queue as {started['state']} but is not billed",
    )
    suite.wait_state(queued["id"], {"running"})
    suite.check("dequeued_running", True, "the dequeued session is running")

    ours = [s["id"] for s in admitted] + [queued["id"]]
    stopped = suite.stop_sessions(ours)
    live = suite.api.get("/api/v1/sessions", group_id=suite.config.group_id, state=sorted(LIVE))
    left = [s["id"] for s in live["items"] if s["id"] in suite.sessions]
    suite.check(
        "all_stopped",
        all(not s["billing"] for s in stopped) and not left,
        f"all {len(suite.sessions)} sessions it started are stopped and unbilled",
        f"still live: {left}",
    )


if __name__ == "__main__":
    run_suite(SUITE, check, needs_kubectl=False)
