"""HAMi's hard VRAM limit between two quarter-card sessions on the same card: one that asks
for more than its share gets CUDA out of memory, while its neighbour's allocation within its
own share succeeds and its process is unharmed.

Not part of `make test`; see README.md for its environment."""

from __future__ import annotations

import json
from pathlib import Path

from common import Json, Suite, run_suite

SUITE = "hami_vram_limit"
USE_UUID = "nvidia.com/use-gpuuuid"
HAMI_ALLOCATED = "hami.io/vgpu-devices-allocated"  # what HAMi's scheduler actually gave
PROBE = (Path(__file__).parent / "vram_probe.py").read_text()
PROBE_PATH = "/tmp/gshare-vram-probe.py"  # noqa: S108 - the pod's own private /tmp
PROBE_PREFIX = "GSHARE-PROBE "
OVER_SHARE_MIB = 1024


def _card_of(suite: Suite, session_id: str) -> tuple[str, Json]:
    pod = suite.pod(session_id)
    if pod is None:
        suite.fail("pod", f"running session {session_id} has no pod")
    return pod["metadata"].get("annotations", {}).get(USE_UUID, ""), pod


def _two_on_one_card(suite: Suite, tier: Json) -> tuple[str, str, str, list[Json]]:
    """Start quarter-card sessions until two share a card; stop the rest."""
    by_card: dict[str, str] = {}
    for number in range(1, suite.config.max_sessions + 1):
        session_id = suite.create_session(tier, f"#{number}")["id"]
        suite.wait_state(session_id, {"running"})
        card, _ = _card_of(suite, session_id)
        if card in by_card:
            first = by_card.pop(card)
            suite.stop_sessions(by_card.values())
            return first, session_id, card, [_card_of(suite, s)[1] for s in (first, session_id)]
        by_card[card] = session_id
    suite.fail("same_card", f"{suite.config.max_sessions} sessions never shared a card")


def _probe_results(output: str) -> dict[str, Json]:
    results = {}
    for line in output.splitlines():
        if line.startswith(PROBE_PREFIX):
            found = json.loads(line[len(PROBE_PREFIX) :])
            results[found["step"]] = found
    return results


def check(suite: Suite) -> None:
    tier = suite.tier(suite.config.quarter_tier)
    share_mib = int(tier["vram_mib"])
    greedy, neighbour, card, pods = _two_on_one_card(suite, tier)
    suite.check(
        "same_card",
        bool(card),
        f"sessions {greedy} and {neighbour} were both assigned card {card}",
        "the sessions' pods carry no card assignment",
    )
    for pod in pods:
        annotations = pod["metadata"].get("annotations", {})
        limits = pod["spec"]["containers"][0]["resources"]["limits"]
        allocated = annotations.get(HAMI_ALLOCATED)
        suite.check(
            f"limit {pod['metadata']['name']}",
            limits.get("nvidia.com/gpumem") == str(share_mib)
            and (allocated is None or card in allocated),
            f"{pod['metadata']['name']} asks HAMi for {share_mib} MiB of card {card}"
            + ("" if allocated is None else " and HAMi placed it there"),
            f"limits {limits}, HAMi allocation {allocated!r}",
        )

    for session_id in (greedy, neighbour):
        suite.write_in_pod(session_id, PROBE_PATH, PROBE)

    # The neighbour takes half its share and keeps it while the other session overreaches.
    held_mib = share_mib // 2
    holder = suite.start_in_pod(neighbour, "python3", PROBE_PATH, "hold", str(held_mib))
    try:
        ready = holder.wait_for(PROBE_PREFIX, timeout_s=300)
        held = json.loads(ready) if ready else {}
        suite.check(
            "neighbour_allocates",
            held.get("outcome") == "ok",
            f"the neighbour allocated {held_mib} MiB of its {share_mib} MiB share "
            f"with {held.get('backend')}",
            f"the neighbour's allocation within its share failed: {held or holder.tail()}",
        )

        beyond_mib = share_mib + OVER_SHARE_MIB
        greedy_run = suite.exec_in_pod(
            greedy, "python3", PROBE_PATH, "exceed", str(held_mib), str(beyond_mib)
        )
        results = _probe_results(greedy_run.stdout)
        within, over = results.get("within", {}), results.get("beyond", {})
        shown = greedy_run.stdout[-3000:] + greedy_run.stderr[-3000:]
        suite.check(
            "within_share",
            within.get("outcome") == "ok",
            f"an allocation of {held_mib} MiB within its share works ({within.get('backend')})",
            f"an allocation within its share did not work: {within or shown}",
        )
        message = str(over.get("message", ""))
        suite.check(
            "beyond_share",
            over.get("outcome") == "oom" and "out of memory" in message.lower(),
            f"an allocation of {beyond_mib} MiB past its share fails: {message[:200]}",
            f"an allocation of {beyond_mib} MiB past its {share_mib} MiB share gave "
            f"{over or shown}",
        )

        holder.send("check\n")
        verdict = holder.wait_for(PROBE_PREFIX, timeout_s=120)
        after = json.loads(verdict) if verdict else {}
        code = holder.finish()
        suite.check(
            "neighbour_unharmed",
            after.get("outcome") == "ok" and code == 0,
            f"the neighbour's {held_mib} MiB still reads back intact and its process exited 0",
            f"the neighbour's check said {after or holder.tail()} and it exited {code}",
        )
    finally:
        if holder.process.poll() is None:
            holder.finish(timeout_s=5)


if __name__ == "__main__":
    run_suite(SUITE, check, needs_kubectl=True)
