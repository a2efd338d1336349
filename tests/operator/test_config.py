"""The operator's settings from its environment, as the chart sets them."""

from __future__ import annotations

import pytest

from gshare.operator.main import operator_config


def test_the_ingress_and_storage_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GSHARE_OPERATOR_INGRESS_CLASS", "internal-nginx")
    monkeypatch.setenv("GSHARE_OPERATOR_INGRESS_NAMESPACE", "edge")
    monkeypatch.setenv("GSHARE_OPERATOR_STORAGE_CLASS", "fast-ssd")
    config = operator_config()
    assert (config.ingress_class, config.ingress_namespace, config.storage_class) == (
        "internal-nginx",
        "edge",
        "fast-ssd",
    )


def test_empty_values_mean_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("INGRESS_CLASS", "INGRESS_NAMESPACE", "STORAGE_CLASS"):
        monkeypatch.setenv(f"GSHARE_OPERATOR_{name}", "")
    config = operator_config()
    assert (config.ingress_class, config.ingress_namespace, config.storage_class) == (
        "nginx",
        "ingress-nginx",
        None,
    )


@pytest.mark.parametrize("value", ["Edge", "a b", "x" * 64, "-edge", "edge\ninjected: 1"])
def test_a_malformed_name_is_refused_with_the_variable_named(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("GSHARE_OPERATOR_INGRESS_NAMESPACE", value)
    with pytest.raises(ValueError, match="GSHARE_OPERATOR_INGRESS_NAMESPACE"):
        operator_config()


def test_the_session_sign_in_route_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GSHARE_SESSION_SIGNIN_URL", "https://gpu.example.org/api/v1/session-entry")
    assert operator_config().signin_url == "https://gpu.example.org/api/v1/session-entry"
    monkeypatch.setenv("GSHARE_SESSION_SIGNIN_URL", "")
    assert operator_config().signin_url == "https://gshare.example.org/api/v1/session-entry"
