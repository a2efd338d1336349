"""Reading a session's start-up steps from its pod and the pod's events, as Kubernetes writes
them."""

from __future__ import annotations

import copy
from typing import Any

from gshare.operator.report import steps_body
from gshare.operator.startup import MAX_MESSAGE, MAX_STEPS, startup_steps

UID = "7d4c1f2e-58a0-4c8e-9f0b-3c1d2e4f5a6b"
NAME = "session-0b8f3c2a-1d4e-4f5a-8b6c-7d8e9f0a1b2c"


def _pod(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": NAME,
            "namespace": "gshare-sessions",
            "uid": UID,
            "creationTimestamp": "2026-03-02T09:00:01Z",
            "annotations": {"nvidia.com/use-gpuuuid": "GPU-gpu0-01-a100"},
        },
        "spec": {"nodeName": "gpu-0", "containers": [{"name": "session"}]},
        "status": {"phase": "Pending", **status},
    }


def _event(reason: str, message: str, *, type: str = "Normal", **times: Any) -> dict[str, Any]:
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{NAME}.17f{reason.lower()}", "namespace": "gshare-sessions"},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": NAME,
            "namespace": "gshare-sessions",
            "uid": UID,
            "fieldPath": "spec.containers{session}",
        },
        "reason": reason,
        "message": message,
        "type": type,
        "count": 1,
        "firstTimestamp": None,
        "lastTimestamp": None,
        "eventTime": None,
        "source": {"component": "kubelet", "host": "gpu-0"},
    }
    event.update(times)
    return event


SCHEDULED = _event(
    "Scheduled",
    f"Successfully assigned gshare-sessions/{NAME} to gpu-0",
    eventTime="2026-03-02T09:00:02.123456Z",
    reportingComponent="default-scheduler",
)
PULLING = _event(
    "Pulling",
    'Pulling image "registry.example/gshare/jupyterlab:1"',
    firstTimestamp="2026-03-02T09:00:03Z",
    lastTimestamp="2026-03-02T09:00:03Z",
)
PULLED = _event(
    "Pulled",
    'Successfully pulled image "registry.example/gshare/jupyterlab:1" in 1m52.1s '
    "(1m52.1s including waiting). Image size: 4123456789 bytes.",
    firstTimestamp="2026-03-02T09:01:55Z",
    lastTimestamp="2026-03-02T09:01:55Z",
)
STARTED = _event(
    "Started",
    "Started container session",
    firstTimestamp="2026-03-02T09:01:56Z",
    lastTimestamp="2026-03-02T09:01:56Z",
)
RUNNING = {
    "phase": "Running",
    "conditions": [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-03-02T09:00:02Z"},
        {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-03-02T09:00:02Z"},
        {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2026-03-02T09:02:04Z"},
        {"type": "Ready", "status": "True", "lastTransitionTime": "2026-03-02T09:02:04Z"},
    ],
    "containerStatuses": [
        {
            "name": "session",
            "ready": True,
            "restartCount": 0,
            "state": {"running": {"startedAt": "2026-03-02T09:01:56Z"}},
        }
    ],
}


def test_a_start_that_went_well_has_every_step_in_order() -> None:
    steps = startup_steps(_pod(**RUNNING), [STARTED, PULLED, SCHEDULED, PULLING])
    assert [(s["step"], s["at"]) for s in steps] == [
        ("allocated", "2026-03-02T09:00:01.000000Z"),
        ("scheduled", "2026-03-02T09:00:02.000000Z"),  # the condition, before the event
        ("pulling", "2026-03-02T09:00:03.000000Z"),
        ("pulled", "2026-03-02T09:01:55.000000Z"),
        ("started", "2026-03-02T09:01:56.000000Z"),
        ("ready", "2026-03-02T09:02:04.000000Z"),
    ]
    assert steps[0]["message"] == "GPU-gpu0-01-a100"
    assert steps[1]["message"] == "on gpu-0"
    assert steps[3]["imageSizeBytes"] == 4123456789
    assert "imageSizeBytes" not in steps[2]


def test_an_image_that_cannot_be_pulled_is_explained_by_its_warnings() -> None:
    failed = _event(
        "Failed",
        'Failed to pull image "registry.example/nope:1": rpc error: code = NotFound',
        type="Warning",
        firstTimestamp="2026-03-02T09:00:04Z",
        lastTimestamp="2026-03-02T09:02:30Z",
        count=4,
    )
    backoff = _event(
        "BackOff",
        'Back-off pulling image "registry.example/nope:1"',
        type="Warning",
        firstTimestamp="2026-03-02T09:00:05Z",
        lastTimestamp="2026-03-02T09:03:00Z",
        count=9,
    )
    pod = _pod(
        conditions=[
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-03-02T09:00:02Z"}
        ],
        containerStatuses=[
            {
                "name": "session",
                "ready": False,
                "restartCount": 0,
                "state": {
                    "waiting": {
                        "reason": "ImagePullBackOff",
                        "message": 'Back-off pulling image "registry.example/nope:1"',
                    }
                },
            }
        ],
    )
    steps = startup_steps(pod, [SCHEDULED, PULLING, failed, backoff])
    warnings = {s["reason"]: s for s in steps if s["step"] == "warning"}
    assert set(warnings) == {"Failed", "BackOff", "ImagePullBackOff"}
    assert warnings["Failed"]["count"] == 4
    assert warnings["Failed"]["at"] == "2026-03-02T09:02:30.000000Z"  # the latest occurrence
    # The waiting state has no time of its own: the last warning's.
    assert warnings["ImagePullBackOff"]["at"] == "2026-03-02T09:03:00.000000Z"
    assert [s["step"] for s in steps if s["step"] != "warning"] == [
        "allocated",
        "scheduled",
        "pulling",
    ]


def test_an_unschedulable_pod_says_why() -> None:
    message = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
    pod = _pod(
        conditions=[
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": message,
                "lastTransitionTime": "2026-03-02T09:00:02Z",
            }
        ]
    )
    pod["spec"].pop("nodeName")
    event = _event(
        "FailedScheduling",
        message,
        type="Warning",
        eventTime="2026-03-02T09:00:02.000001Z",
        series={"count": 3, "lastObservedTime": "2026-03-02T09:05:02.000000Z"},
    )
    steps = startup_steps(pod, [event])
    assert [(s["step"], s.get("reason")) for s in steps] == [
        ("allocated", ""),
        ("warning", "FailedScheduling"),
    ]
    assert steps[1]["count"] == 3
    assert steps[1]["at"] == "2026-03-02T09:05:02.000000Z"
    assert steps[1]["message"] == message


def test_a_crashing_program_reports_how_it_ended() -> None:
    pod = _pod(
        phase="Running",
        containerStatuses=[
            {
                "name": "session",
                "restartCount": 3,
                "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
                "lastState": {
                    "terminated": {
                        "exitCode": 137,
                        "reason": "OOMKilled",
                        "startedAt": "2026-03-02T09:01:56Z",
                        "finishedAt": "2026-03-02T09:02:10Z",
                    }
                },
            }
        ],
    )
    backoff = _event(
        "BackOff",
        "Back-off restarting failed container session in pod",
        type="Warning",
        lastTimestamp="2026-03-02T09:03:00Z",
        count=5,
    )
    steps = startup_steps(pod, [backoff])
    by_reason = {s["reason"]: s for s in steps if s["step"] == "warning"}
    assert by_reason["OOMKilled"]["message"] == "exit code 137"
    assert by_reason["OOMKilled"]["at"] == "2026-03-02T09:02:10.000000Z"
    assert set(by_reason) == {"OOMKilled", "BackOff", "CrashLoopBackOff"}
    assert "started" in [s["step"] for s in steps]


def test_the_list_is_bounded_cleaned_and_about_this_pod_only() -> None:
    hostile = [
        _event(
            f"Reason{i}",
            "\x00\x1b[31m" + "x" * 10_000,
            type="Warning",
            lastTimestamp=f"2026-03-02T09:{i % 60:02d}:00Z",
        )
        for i in range(100)
    ]
    other_pod = copy.deepcopy(PULLED)
    other_pod["involvedObject"]["uid"] = "another-uid"
    odd = [
        _event("Not a reason!", "x", type="Warning", lastTimestamp="2026-03-02T09:00:00Z"),
        _event("Pulled", "no time at all"),
        "not an event",
        other_pod,
    ]
    events = [*odd, *hostile]
    steps = startup_steps(_pod(**RUNNING), events)  # type: ignore[arg-type]
    assert len(steps) == MAX_STEPS
    assert all(len(s["message"]) <= MAX_MESSAGE for s in steps)
    assert all("\x00" not in s["message"] and "\x1b" not in s["message"] for s in steps)
    assert "pulled" not in [s["step"] for s in steps]
    assert "Not a reason!" not in [s["reason"] for s in steps]
    # Read again from the same objects: the same list.
    assert startup_steps(_pod(**RUNNING), events) == steps  # type: ignore[arg-type]


def test_no_pod_no_steps_and_odd_statuses_do_not_raise() -> None:
    assert startup_steps(None, [SCHEDULED]) == []
    odd = _pod(conditions=["x", {"type": "Ready", "status": "True"}], containerStatuses=[None])
    odd["metadata"]["creationTimestamp"] = "yesterday"
    assert startup_steps(odd, []) == []


def test_the_report_carries_the_steps_the_api_takes_and_drops_the_rest() -> None:
    steps = startup_steps(_pod(**RUNNING), [PULLED])
    tampered = [
        *steps,
        {"step": "exploded", "at": "2026-03-02T09:00:00Z"},
        "junk",
        {"step": "ready"},
    ]
    body = steps_body(tampered)
    assert [b["step"] for b in body] == [s["step"] for s in steps]
    pulled = next(b for b in body if b["step"] == "pulled")
    assert pulled == {
        "step": "pulled",
        "at": "2026-03-02T09:01:55+00:00",
        "reason": "",
        "message": pulled["message"],
        "image_size_bytes": 4123456789,
    }


def test_a_time_utc_cannot_hold_costs_its_entry_not_the_report() -> None:
    steps = startup_steps(_pod(**RUNNING), [PULLED])
    odd = [
        {"step": "warning", "reason": "BackOff", "at": "0001-01-01T00:00:00+01:00"},
        {"step": "warning", "reason": "BackOff", "at": "9999-12-31T23:59:59-01:00"},
        {"step": "warning", "reason": "BackOff", "at": "0001-01-01T00:00:00Z"},  # API refuses it
        {"step": "warning", "reason": "BackOff", "at": "2026-03-02T09:00:00"},  # no time zone
    ]
    body = steps_body([*odd, *steps])
    assert [b["step"] for b in body] == [s["step"] for s in steps]
    pod = _pod(**RUNNING)
    pod["metadata"]["creationTimestamp"] = "9999-12-31T23:59:59-01:00"
    assert "allocated" not in [s["step"] for s in startup_steps(pod, [])]
