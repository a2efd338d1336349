"""A session's phase from its desired state and its pod."""

from __future__ import annotations

from gshare.operator.manifests import OperatorConfig, SessionSpec
from gshare.operator.phase import phase_of, url_of


def _pod(phase: str, ready: bool = False, **extra: object) -> dict:
    status = {
        "phase": phase,
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        **extra,
    }
    return {"metadata": {"name": "p"}, "status": status}


def test_phases() -> None:
    assert phase_of("Paused", None) == ("Paused", "")
    assert phase_of("Running", None) == ("Pending", "waiting for the pod")
    assert phase_of("Running", _pod("Running", ready=True)) == ("Running", "")
    assert phase_of("Running", _pod("Running", ready=False))[0] == "Pending"
    waiting = _pod(
        "Pending",
        containerStatuses=[{"state": {"waiting": {"reason": "ImagePullBackOff"}}}],
    )
    assert phase_of("Running", waiting) == ("Pending", "ImagePullBackOff")
    assert phase_of("Running", _pod("Failed", reason="OOMKilled")) == ("Failed", "OOMKilled")
    stopping = _pod("Running", ready=True)
    stopping["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert phase_of("Paused", stopping) == ("Pending", "the pod is stopping")


def test_the_url_is_the_sessions_own_host() -> None:
    spec = SessionSpec(
        session_id="abc",
        owner_id="u",
        session_type="terminal",
        image="i",
        cpu_millicores=100,
        memory_mib=128,
    )
    config = OperatorConfig(sessions_domain="s.example")
    assert url_of(spec, config) == "https://abc.s.example/"
