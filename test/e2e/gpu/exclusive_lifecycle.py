"""An exclusive session on a real card: it runs with exactly the card GShare assigned, and its
charge is its price for the seconds it held the card.

Not part of `make test`; see README.md for its environment."""

from __future__ import annotations

import re
import time
from datetime import datetime

from common import Suite, amount, charge_for, run_suite

SUITE = "exclusive_lifecycle"
GPU_LINE = re.compile(r"^GPU \d+: .*\(UUID: (?P<uuid>[^)]+)\)")


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def check(suite: Suite) -> None:
    tier = suite.tier(suite.config.exclusive_tier)
    created = suite.create_session(tier, "exclusive")
    session_id = created["id"]
    running = suite.wait_state(session_id, {"running"})
    suite.check(
        "running",
        running["billing"] and running["tier_name"] == tier["name"],
        f"session {session_id} runs on {running['model']} ({tier['name']}) and is billed",
        f"it runs but billing={running['billing']}, tier={running['tier_name']}",
    )
    price = amount(running["price_per_hour"])  # the admitted price; read while it holds a card
    suite.note(f"price: {price} credits an hour")

    pod = suite.pod(session_id)
    if pod is None:
        suite.fail("pod", f"running session {session_id} has no pod")
    assigned = pod["metadata"].get("annotations", {}).get("nvidia.com/use-gpuuuid", "")
    listed = suite.exec_in_pod(session_id, "nvidia-smi", "-L", timeout_s=60)
    gpus = [m for line in listed.stdout.splitlines() if (m := GPU_LINE.match(line.strip()))]
    suite.check(
        "one_gpu",
        listed.returncode == 0 and len(gpus) == 1,
        f"nvidia-smi -L in the pod lists exactly one GPU: {gpus[0].group(0) if gpus else ''}",
        f"nvidia-smi -L exited {listed.returncode} and listed {len(gpus)} GPUs:\n"
        f"{listed.stdout}{listed.stderr}",
    )
    suite.check(
        "assigned_card",
        gpus[0].group("uuid") == assigned,
        f"the pod's GPU is the card GShare assigned ({assigned})",
        f"the pod sees {gpus[0].group('uuid')} but was assigned {assigned!r}",
    )

    # The session holds its card for this long; every few seconds it must still be running.
    hold_s = suite.config.run_seconds
    until = time.monotonic() + hold_s
    while time.monotonic() < until:
        now = suite.session(session_id)
        if now["state"] != "running" or not now["billing"]:
            suite.fail("kept_running", f"it became {now['state']}: {now['state_reason']}")
        time.sleep(5)
    suite.check("kept_running", True, f"it stayed running and billed for {hold_s:g} s")

    stopped = suite.stop_session(session_id)
    suite.check(
        "stopped",
        not stopped["billing"] and suite.pod_gone(session_id),
        "it stopped, is no longer billed and its pod is gone",
        f"stopped with billing={stopped['billing']}, or its pod is still there",
    )

    history = suite.session(session_id)["transitions"] or []
    allocated = next((t for t in history if t["to_state"] == "starting"), None)
    released = next((t for t in history if t["to_state"] == "stopping"), None)
    if allocated is None or released is None:
        suite.fail("history", f"no allocation or release in its history: {history}")
    held = _at(released["at"]) - _at(allocated["at"])
    seconds = int(held.total_seconds())
    expected = charge_for(price, seconds)
    captures = suite.capture_entries(session_id, since=created["created_at"])
    charged = -sum((amount(e["amount"]) for e in captures), start=amount("0"))
    one_second = price / 3600
    suite.note(
        f"held the card {held.total_seconds():.3f} s; {len(captures)} captures; charged {charged}, "
        f"price x seconds = {expected}"
    )
    suite.check(
        "charge",
        abs(charged - expected) <= one_second + amount("0.000001"),
        f"the wallet was charged {charged} for {seconds} s at {price}/h "
        f"(expected {expected}, within {one_second:.6f})",
        f"the wallet was charged {charged}, but {seconds} s at {price}/h is {expected}",
    )
    suite.check(
        "session_cost",
        amount(stopped["cost"]) == charged,
        f"the session's cost ({stopped['cost']}) is what the wallet was charged",
        f"the session's cost is {stopped['cost']} but the wallet was charged {charged}",
    )


if __name__ == "__main__":
    run_suite(SUITE, check, needs_kubectl=True)
