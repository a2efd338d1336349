"""The chart refuses values it cannot honour: values.schema.json for each value's shape,
templates/_validate.tpl for the rules across values, and the sign-in cookie follows TLS."""

from __future__ import annotations

import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from gshare import devcluster

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "gshare"
OVERLAYS = sorted((ROOT / "deploy" / "values").glob("*.yaml"))


@cache
def helm() -> str:
    return str(devcluster.testenv_bin() / "helm")


def render(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [helm(), "template", "gshare", str(CHART), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def refusal(*args: str) -> str:
    done = render(*args)
    assert done.returncode != 0, f"helm template {' '.join(args)} was accepted"
    return done.stderr


def cookie_secure(*args: str) -> str:
    """GSHARE_COOKIE_SECURE as the API's Deployment gets it."""
    done = render(*args)
    assert done.returncode == 0, done.stderr
    api = next(
        d
        for d in yaml.safe_load_all(done.stdout)
        if d and d["kind"] == "Deployment" and d["metadata"]["name"] == "gshare-api"
    )
    env: list[dict[str, Any]] = api["spec"]["template"]["spec"]["containers"][0]["env"]
    return str(next(e["value"] for e in env if e["name"] == "GSHARE_COOKIE_SECURE"))


def test_a_mistyped_top_level_key_is_refused() -> None:
    stderr = refusal("--set", "consle.domain=gshare.example.org")
    assert "additional properties 'consle' not allowed" in stderr


def test_a_mistyped_key_in_a_known_object_is_refused() -> None:
    stderr = refusal("--set", "console.tlsSecret=gshare-console-tls")
    assert "at '/console': additional properties 'tlsSecret' not allowed" in stderr


def test_a_replica_count_that_is_not_a_number_is_refused() -> None:
    stderr = refusal("--set-string", "api.replicas=3")
    assert "at '/api/replicas': got string, want integer" in stderr


def test_a_value_outside_its_choices_is_refused() -> None:
    stderr = refusal("--set", "database.mode=sqlite")
    assert "/database/mode" in stderr


def test_https_without_tls_or_tls_in_front_is_refused_saying_what_to_set() -> None:
    stderr = refusal("--set", "console.https=true")
    assert "console.https is true" in stderr
    for remedy in (
        "console.tlsSecretName",
        "console.tlsTerminatedInFront: true",
        "console.https: false",
    ):
        assert remedy in stderr


def test_https_with_tls_ended_in_front_marks_the_cookie_secure() -> None:
    assert (
        cookie_secure("--set", "console.https=true,console.tlsTerminatedInFront=true") == "always"
    )


def test_https_with_tls_at_the_ingress_marks_the_cookie_secure() -> None:
    secured = cookie_secure("--set", "console.https=true,console.tlsSecretName=console-tls")
    assert secured == "always"


def test_the_cookie_follows_where_tls_ends_when_https_is_left_empty() -> None:
    assert cookie_secure() == "auto"
    assert cookie_secure("--set", "console.tlsTerminatedInFront=true") == "always"
    assert cookie_secure("--set", "console.https=false,console.tlsTerminatedInFront=true") == "auto"


# An added cluster's values, as docs/how-to/connect-a-cluster.md writes them.
ADDED_CLUSTER = (
    "controlPlane.enabled=false,sessions.domain=sessions.gpu-b.example.org,"
    "operatorConfig.apiUrl=https://gshare.example.org,"
    "operatorConfig.signinUrl=https://gshare.example.org/api/v1/session-entry"
)


def test_an_operator_only_release_ignores_the_consoles_https() -> None:
    done = render("--set", f"{ADDED_CLUSTER},console.https=true")
    assert done.returncode == 0, done.stderr


def test_an_added_cluster_sends_browsers_to_the_control_planes_console() -> None:
    done = render("--set", ADDED_CLUSTER)
    assert done.returncode == 0, done.stderr
    operator = next(
        d
        for d in yaml.safe_load_all(done.stdout)
        if d and d["kind"] == "Deployment" and d["metadata"]["name"] == "gshare-operator"
    )
    env = {
        e["name"]: e.get("value")
        for e in operator["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env["GSHARE_SESSION_SIGNIN_URL"] == "https://gshare.example.org/api/v1/session-entry"
    assert env["GSHARE_SESSIONS_DOMAIN"] == "sessions.gpu-b.example.org"
    assert env["GSHARE_OPERATOR_API_URL"] == "https://gshare.example.org"


@pytest.mark.parametrize(
    ("left", "named"),
    [
        ("operatorConfig.signinUrl=", "operatorConfig.signinUrl"),
        ("sessions.domain=sessions.gshare.example.org", "sessions.domain"),
        ("operatorConfig.apiUrl=http://gshare-api.gshare-system.svc", "operatorConfig.apiUrl"),
    ],
)
def test_an_added_cluster_left_at_the_all_in_ones_defaults_is_refused_saying_what_to_set(
    left: str, named: str
) -> None:
    stderr = refusal("--set", f"{ADDED_CLUSTER},{left}")
    assert f"Set {named}" in stderr or "Set it to" in stderr, stderr
    assert named in stderr


@pytest.mark.parametrize("overlay", [None, *OVERLAYS], ids=lambda o: o.name if o else "defaults")
def test_the_defaults_and_every_shipped_overlay_are_accepted(overlay: Path | None) -> None:
    done = render(*(["-f", str(overlay)] if overlay else []))
    assert done.returncode == 0, done.stderr
    assert "kind: Deployment" in done.stdout


def test_the_production_overlay_marks_the_cookie_secure() -> None:
    assert cookie_secure("-f", str(ROOT / "deploy" / "values" / "prod.yaml")) == "always"


def kept_on_uninstall(*args: str) -> set[tuple[str, str]]:
    """(kind, name) of each rendered resource `helm uninstall` leaves in place."""
    done = render("--set", "database.mode=cloudnativepg", *args)
    assert done.returncode == 0, done.stderr
    return {
        (d["kind"], d["metadata"]["name"])
        for d in yaml.safe_load_all(done.stdout)
        if d and (d["metadata"].get("annotations") or {}).get("helm.sh/resource-policy") == "keep"
    }


def test_an_uninstall_keeps_what_holds_data_unless_told_otherwise() -> None:
    data = {
        ("Namespace", "gshare-system"),
        ("Namespace", "gshare-sessions"),
        ("Namespace", "gshare-secrets"),
        ("Cluster", "gshare-db"),
    }
    kept = kept_on_uninstall()
    assert data <= kept
    assert ("Namespace", "gshare-infra") not in kept  # no data there

    assert not data & kept_on_uninstall("--set", "namespaces.keepOnUninstall=false")
