"""The operator's settings from its environment, as the chart sets them."""

from __future__ import annotations

import pytest

from gshare.operator.main import node_addresses, operator_config, with_nodes
from gshare.operator.manifests import OperatorConfig


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


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        *(
            ("GSHARE_OPERATOR_INGRESS_NAMESPACE", name)
            for name in ("Edge", "a b", "x" * 64, "-edge", "edge\ninjected: 1")
        ),
        # Not a range, or one that is every address rather than the nodes'.
        *(
            ("GSHARE_OPERATOR_NODE_CIDRS", cidrs)
            for cidrs in (
                "0.0.0.0/0",
                "::/0",
                "10.0.0.0/33",
                "nodes",
                "10.0.0.0/8 x",
                ",".join(["10.1.1.1"] * 257),
            )
        ),
    ],
)
def test_a_malformed_value_is_refused_with_the_variable_named(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError, match=variable):
        operator_config()


def test_the_session_sign_in_route_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GSHARE_SESSION_SIGNIN_URL", "https://gpu.example.org/api/v1/session-entry")
    assert operator_config().signin_url == "https://gpu.example.org/api/v1/session-entry"
    monkeypatch.setenv("GSHARE_SESSION_SIGNIN_URL", "")
    assert operator_config().signin_url == "https://gshare.example.org/api/v1/session-entry"


def test_the_nodes_ranges_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GSHARE_OPERATOR_NODE_CIDRS", " 10.0.0.0/16, 192.0.2.7 ,,10.0.0.5/16")
    assert operator_config().node_cidrs == ("10.0.0.0/16", "192.0.2.7/32")
    monkeypatch.setenv("GSHARE_OPERATOR_NODE_CIDRS", "")
    assert operator_config().node_cidrs == ()


def test_a_nodes_own_addresses_are_its_ips_and_its_pods_gateway() -> None:
    node = {
        "spec": {"podCIDR": "10.244.3.0/24", "podCIDRs": ["10.244.3.0/24", "fd00:1::/64"]},
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": "10.0.0.12"},
                {"type": "ExternalIP", "address": "203.0.113.9"},
                {"type": "Hostname", "address": "gpu-node-1"},
                {"type": "InternalIP", "address": "not an address"},
                "garbage",
            ]
        },
    }
    assert node_addresses(node) == (
        "10.0.0.12/32",
        "203.0.113.9/32",
        "10.244.3.1/32",
        "fd00:1::1/128",
    )
    assert node_addresses({}) == ()
    assert node_addresses({"spec": {"podCIDR": "10.1.0.0/24"}}) == ("10.1.0.1/32",)


def test_the_nodes_seen_join_the_configured_ranges_in_an_order_of_their_own() -> None:
    configured = OperatorConfig(node_cidrs=("10.0.0.0/16",))
    one = with_nodes(configured, {"b": ("10.9.0.2/32",), "a": ("10.0.0.3/32", "10.9.0.1/32")})
    other = with_nodes(configured, {"a": ("10.9.0.1/32", "10.0.0.3/32"), "b": ("10.9.0.2/32",)})
    assert one == other
    assert one.node_cidrs == ("10.0.0.0/16", "10.0.0.3/32", "10.9.0.1/32", "10.9.0.2/32")
    assert with_nodes(configured, {}) == configured
