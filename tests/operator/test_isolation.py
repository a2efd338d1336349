"""Isolation levels on the operator's side: the spec's fields, what each level makes of the pod
and its network policy, the nodes' traits, a found pod's drift and what is reported."""

from __future__ import annotations

import ipaddress
import uuid
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from gshare.capacity.schemas import InventoryReport
from gshare.operator.inventory import Card, NodeInventory
from gshare.operator.isolation import (
    MAX_RUNTIME_CLASSES,
    drift_of,
    drift_record,
    node_traits,
    runtime_classes_of,
    user_namespaces_of,
)
from gshare.operator.manifests import (
    DEDICATED_KEY,
    METADATA_ADDRESSES,
    POD_HASH,
    IsolationSpec,
    NetworkSpec,
    OperatorConfig,
    children,
    network_policy,
    owner_reference,
    pod,
)
from gshare.operator.report import inventory_body, status_body
from gshare.operator.spec import SpecError, spec_of
from tests.operator.test_manifests import make_spec

CONFIG = OperatorConfig()
OWNER = owner_reference("s1", "uid-1")
TENANT = str(uuid.uuid4())

LEVELS: dict[str, IsolationSpec] = {
    "user-namespaced": IsolationSpec("user-namespaced", user_namespaces=True),
    "sandboxed": IsolationSpec("sandboxed", runtime_class="gvisor"),
    "dedicated": IsolationSpec("dedicated", dedicated_to=TENANT),
    "dedicated+user-namespaced": IsolationSpec(
        "dedicated+user-namespaced", user_namespaces=True, dedicated_to=TENANT
    ),
    "dedicated+sandboxed": IsolationSpec(
        "dedicated+sandboxed", runtime_class="kata", dedicated_to=TENANT
    ),
}


def resource_spec(**extra: Any) -> dict[str, Any]:
    return {
        "sessionId": str(uuid.uuid4()),
        "ownerId": str(uuid.uuid4()),
        "sessionType": "terminal",
        "image": "img:1",
        "cpuMillicores": 500,
        "memoryMiB": 1024,
        "desiredState": "Running",
        **extra,
    }


# The spec


def test_absent_isolation_and_network_are_shared_and_open() -> None:
    spec = spec_of(resource_spec())
    assert spec.isolation == IsolationSpec()
    assert spec.isolation.is_shared
    assert spec.network == NetworkSpec(egress="open", cidrs=())


def test_isolation_and_network_are_read_and_cidrs_normalized() -> None:
    spec = spec_of(
        resource_spec(
            isolation={
                "level": "dedicated+sandboxed",
                "userNamespaces": False,
                "runtimeClassName": "kata.example.org",
                "dedicatedTo": TENANT,
            },
            network={"egress": "listed", "cidrs": ["10.1.2.3/8", "10.0.0.0/8", "2001:db8::1/32"]},
        )
    )
    assert spec.isolation == IsolationSpec("dedicated+sandboxed", False, "kata.example.org", TENANT)
    assert spec.network == NetworkSpec("listed", ("10.0.0.0/8", "2001:db8::/32"))


@pytest.mark.parametrize(
    "extra",
    [
        {"isolation": "sandboxed"},
        {"isolation": []},
        {"isolation": {"level": 3}},
        {"isolation": {"level": "shared\x00"}},
        {"isolation": {"level": "x" * 100}},
        {"isolation": {"userNamespaces": "true"}},
        {"isolation": {"userNamespaces": 1}},
        {"isolation": {"runtimeClassName": ""}},
        {"isolation": {"runtimeClassName": "Kata"}},
        {"isolation": {"runtimeClassName": "kata\x00"}},
        {"isolation": {"runtimeClassName": "a" * 254}},
        {"isolation": {"runtimeClassName": ["kata"]}},
        {"isolation": {"dedicatedTo": "tenant-1"}},
        {"isolation": {"dedicatedTo": TENANT.upper()}},
        {"isolation": {"dedicatedTo": f"{{{TENANT}}}"}},
        {"isolation": {"dedicatedTo": 7}},
        # A level whose fields do not carry it would make a pod less isolated than asked.
        {"isolation": {"level": "sandboxed", "userNamespaces": False}},
        {"isolation": {"level": "dedicated+sandboxed", "runtimeClassName": "gvisor"}},
        {"isolation": {"level": "dedicated", "userNamespaces": False}},
        {"isolation": {"level": "user-namespaced", "userNamespaces": False}},
        {"network": "none"},
        {"network": {"egress": "closed"}},
        {"network": {"egress": ["open"]}},
        {"network": {"egress": "listed", "cidrs": "10.0.0.0/8"}},
        {"network": {"egress": "listed", "cidrs": [167772160]}},
        {"network": {"egress": "listed", "cidrs": ["10.0.0.0/33"]}},
        {"network": {"egress": "listed", "cidrs": ["10.0.0.0/8\x00"]}},
        {"network": {"egress": "listed", "cidrs": ["fe80::1%eth0/64"]}},
        {"network": {"egress": "listed", "cidrs": ["1" * 10_000]}},
        {
            "network": {
                "egress": "listed",
                "cidrs": [f"10.{n // 256}.{n % 256}.0/24" for n in range(201)],
            }
        },
    ],
)
def test_malformed_isolation_or_network_is_a_spec_error(extra: dict[str, Any]) -> None:
    with pytest.raises(SpecError):
        spec_of(resource_spec(**extra))


def test_two_hundred_cidrs_are_taken() -> None:
    cidrs = [f"10.{n // 256}.{n % 256}.0/24" for n in range(200)]
    spec = spec_of(resource_spec(network={"egress": "listed", "cidrs": cidrs}))
    assert len(spec.network.cidrs) == 200


# The pod


def test_a_shared_level_leaves_the_pod_and_its_hash_as_before() -> None:
    spec = make_spec()
    before = pod(spec, CONFIG, OWNER)
    for same in (IsolationSpec(), IsolationSpec(level="shared")):
        after = pod(replace(spec, isolation=same, network=NetworkSpec()), CONFIG, OWNER)
        assert after == before
    assert not {"hostUsers", "runtimeClassName", "affinity", "tolerations"} & set(before["spec"])
    assert before["metadata"]["annotations"][POD_HASH] == after["metadata"]["annotations"][POD_HASH]


@pytest.mark.parametrize("level", list(LEVELS))
def test_each_level_shapes_the_pod_and_keeps_every_defense(level: str) -> None:
    isolation = LEVELS[level]
    spec = replace(make_spec(), isolation=isolation)
    made = pod(spec, CONFIG, OWNER)
    pod_spec = made["spec"]
    assert made["metadata"]["annotations"]["gshare.io/isolation"] == level
    assert (
        made["metadata"]["annotations"][POD_HASH]
        != pod(make_spec(), CONFIG, OWNER)["metadata"]["annotations"][POD_HASH]
    )
    assert ("hostUsers" in pod_spec) == isolation.user_namespaces
    if isolation.user_namespaces:
        assert pod_spec["hostUsers"] is False
    assert pod_spec.get("runtimeClassName") == isolation.runtime_class
    if isolation.dedicated_to:
        required = pod_spec["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]
        assert required == {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": DEDICATED_KEY, "operator": "In", "values": [TENANT]}]}
            ]
        }
        assert pod_spec["tolerations"] == [
            {"key": DEDICATED_KEY, "operator": "Equal", "value": TENANT, "effect": "NoSchedule"}
        ]
    else:
        assert "affinity" not in pod_spec
        assert "tolerations" not in pod_spec
    container = pod_spec["containers"][0]["securityContext"]
    assert pod_spec["automountServiceAccountToken"] is False
    assert pod_spec["enableServiceLinks"] is False
    assert pod_spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container["capabilities"] == {"drop": ["ALL"]}
    assert container["readOnlyRootFilesystem"] is True
    assert container["allowPrivilegeEscalation"] is False
    assert not any("hostPath" in v for v in pod_spec["volumes"])
    assert drift_of(made, spec, None) is None


# The network policy


def _policy(network: NetworkSpec) -> dict[str, Any]:
    return network_policy(replace(make_spec(), network=network), CONFIG, OWNER)["spec"]


def test_open_egress_is_the_rule_of_old_and_ingress_only_the_ingress_controller() -> None:
    spec = make_spec()
    old = network_policy(spec, CONFIG, OWNER)
    assert network_policy(replace(spec, network=NetworkSpec("open")), CONFIG, OWNER) == old
    assert old["spec"]["egress"][0]["to"][1] == {
        "ipBlock": {"cidr": "0.0.0.0/0", "except": list(METADATA_ADDRESSES)}
    }
    for mode in ("open", "listed", "none"):
        policy = _policy(NetworkSpec(mode, ("10.0.0.0/8",)))
        assert policy["policyTypes"] == ["Ingress", "Egress"]
        assert policy["ingress"] == [
            {
                "from": [
                    {
                        "namespaceSelector": {
                            "matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}
                        }
                    }
                ],
                "ports": [{"protocol": "TCP", "port": 8080}],
            }
        ]


def test_no_egress_is_an_empty_rule_list() -> None:
    assert _policy(NetworkSpec("none"))["egress"] == []


def test_listed_egress_is_dns_and_the_cidrs_less_the_metadata_addresses() -> None:
    policy = _policy(
        NetworkSpec(
            "listed",
            ("0.0.0.0/0", "10.0.0.0/8", "169.254.0.0/16", "169.254.169.254/32", "2001:db8::/32"),
        )
    )
    dns, listed = policy["egress"]
    assert dns["to"] == [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
        }
    ]
    assert dns["ports"] == [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]
    assert listed["to"] == [
        {"ipBlock": {"cidr": "0.0.0.0/0", "except": list(METADATA_ADDRESSES)}},
        {"ipBlock": {"cidr": "10.0.0.0/8"}},
        {"ipBlock": {"cidr": "169.254.0.0/16", "except": ["169.254.169.254/32"]}},
        # The metadata address itself is left out; an IPv6 CIDR gets no IPv4 except.
        {"ipBlock": {"cidr": "2001:db8::/32"}},
    ]
    for block in listed["to"]:
        cidr = ipaddress.ip_network(block["ipBlock"]["cidr"])
        for cut in block["ipBlock"].get("except", []):
            assert ipaddress.ip_network(cut).subnet_of(cidr)  # type: ignore[arg-type]
            assert ipaddress.ip_network(cut) != cidr


def test_no_egress_reaches_the_nodes_own_addresses() -> None:
    """The nodes' addresses are cut out of every rule as the metadata addresses are: out of
    `open`'s anywhere, out of a listed range that holds them, and a listed range wholly inside
    them is left out."""
    config = replace(CONFIG, node_cidrs=("10.0.0.0/16", "192.0.2.2/32", "fd00::/64"))
    spec = replace(make_spec(), network=NetworkSpec("open"))
    policy = network_policy(spec, config, OWNER)["spec"]
    anywhere = policy["egress"][0]["to"][1]["ipBlock"]
    assert anywhere == {
        "cidr": "0.0.0.0/0",
        "except": [*METADATA_ADDRESSES, "10.0.0.0/16", "192.0.2.2/32"],
    }
    listed = replace(
        spec, network=NetworkSpec("listed", ("10.0.0.0/8", "10.0.4.0/24", "fd00::/48"))
    )
    blocks = network_policy(listed, config, OWNER)["spec"]["egress"][1]["to"]
    assert blocks == [
        {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.0.0.0/16"]}},
        {"ipBlock": {"cidr": "fd00::/48", "except": ["fd00::/64"]}},
    ]


def test_listed_egress_without_cidrs_is_dns_alone() -> None:
    assert len(_policy(NetworkSpec("listed"))["egress"]) == 1


def test_a_paused_session_has_no_policy_whatever_its_egress() -> None:
    spec = replace(make_spec(), desired_state="Paused", network=NetworkSpec("none"))
    assert "NetworkPolicy" not in {o["kind"] for o in children(spec, CONFIG, OWNER)}


# Node traits


def test_user_namespaces_follow_the_default_runtime_handler() -> None:
    def handler(name: str, on: Any) -> dict[str, Any]:
        return {"name": name, "features": {"userNamespaces": on, "recursiveReadOnlyMounts": True}}

    assert user_namespaces_of({"runtimeHandlers": [handler("", True), handler("kata", False)]})
    assert not user_namespaces_of({"runtimeHandlers": [handler("", False), handler("kata", True)]})
    assert user_namespaces_of({"runtimeHandlers": [handler("runc", False), handler("crun", True)]})
    assert not user_namespaces_of({"runtimeHandlers": [handler("", "true")]})
    for odd in ({}, {"runtimeHandlers": None}, {"runtimeHandlers": ["x", 3]}):
        assert not user_namespaces_of(odd)


def _runtime_class(name: str, selector: dict[str, str] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"metadata": {"name": name}, "handler": name}
    if selector is not None:
        body["scheduling"] = {"nodeSelector": selector}
    return body


def test_runtime_classes_whose_node_selector_the_node_meets() -> None:
    classes = [
        _runtime_class("runc"),
        _runtime_class("kata", {"kata": "yes"}),
        _runtime_class("gvisor", {"gvisor": "yes", "zone": "a"}),
        _runtime_class("empty", {}),
        {"metadata": {"name": 5}},
        {"scheduling": "odd"},
    ]
    assert runtime_classes_of({"kata": "yes", "zone": "a"}, classes) == ("empty", "kata", "runc")
    many = [_runtime_class(f"rc-{n:03d}") for n in range(100)]
    assert len(runtime_classes_of({}, many)) == MAX_RUNTIME_CLASSES


def _node(labels: dict[str, str], taints: list[dict[str, str]]) -> dict[str, Any]:
    return {"metadata": {"labels": labels}, "spec": {"taints": taints}, "status": {}}


def test_a_dedicated_node_is_its_label_and_whether_the_matching_taint_is_there() -> None:
    taint = {"key": DEDICATED_KEY, "value": TENANT, "effect": "NoSchedule"}
    labelled = {DEDICATED_KEY: TENANT}
    assert node_traits(_node(labelled, [taint]), []).dedicated_label == TENANT
    assert node_traits(_node(labelled, [taint]), []).dedicated_tainted
    assert not node_traits(_node(labelled, []), []).dedicated_tainted
    other = {**taint, "value": str(uuid.uuid4())}
    assert not node_traits(_node(labelled, [other]), []).dedicated_tainted
    assert not node_traits(
        _node(labelled, [{**taint, "effect": "NoExecute"}]), []
    ).dedicated_tainted
    plain = node_traits(_node({}, [taint]), [])
    assert (plain.dedicated_label, plain.dedicated_tainted) == (None, False)
    assert node_traits(_node({DEDICATED_KEY: "x" * 64}, []), []).dedicated_label is None
    assert node_traits({}, []) == node_traits({"metadata": None, "spec": "x"}, [])


def test_the_inventory_report_carries_each_nodes_traits_within_bounds() -> None:
    card = Card("GPU-1", 10, 81920, 100, "A100", 0, True)
    node = NodeInventory(
        "gpu-0",
        (card,),
        user_namespaces=True,
        runtime_classes=("kata", "x" * 254, *(f"rc-{n}" for n in range(40))),
        dedicated_label=TENANT,
        dedicated_tainted=True,
    )
    plain = NodeInventory("gpu-1", (replace(card, uuid="GPU-2"),), dedicated_label="y" * 64)
    body = inventory_body([node, plain], 7)
    first, second = body["nodes"]
    assert first["user_namespaces"] is True
    assert first["runtime_classes"][0] == "kata"
    assert len(first["runtime_classes"]) == 32
    assert (first["dedicated_label"], first["dedicated_tainted"]) == (TENANT, True)
    assert second == {
        "name": "gpu-1",
        "cards": second["cards"],
        "user_namespaces": False,
        "runtime_classes": [],
        "dedicated_label": None,
        "dedicated_tainted": False,
    }
    InventoryReport.model_validate(body)


# Drift


def _found(spec_part: dict[str, Any], node: str | None = "gpu-1") -> dict[str, Any]:
    made: dict[str, Any] = {"metadata": {"name": "p", "uid": "uid-9"}, "spec": dict(spec_part)}
    if node:
        made["spec"]["nodeName"] = node
    return made


def test_a_pod_outside_its_level_drifts_and_says_why() -> None:
    spec = make_spec()
    userns = replace(spec, isolation=LEVELS["user-namespaced"])
    sandboxed = replace(spec, isolation=LEVELS["sandboxed"])
    dedicated = replace(spec, isolation=LEVELS["dedicated"])
    asked = pod(dedicated, CONFIG, OWNER)["spec"]
    own_node = {DEDICATED_KEY: TENANT}

    assert "hostUsers" in (drift_of(_found({}), userns, {}) or "")
    assert "hostUsers" in (drift_of(_found({"hostUsers": True}), userns, {}) or "")
    assert drift_of(_found({"hostUsers": False}), userns, {}) is None
    assert "runtime class" in (drift_of(_found({}), sandboxed, {}) or "")
    assert drift_of(_found({"runtimeClassName": "runc"}), sandboxed, None) is not None
    assert drift_of(_found({"runtimeClassName": "gvisor"}), sandboxed, {}) is None
    assert "ask" in (drift_of(_found({}), dedicated, own_node) or "")
    assert "not dedicated" in (drift_of(_found(asked), dedicated, {}) or "")
    assert drift_of(_found(asked), dedicated, {DEDICATED_KEY: str(uuid.uuid4())}) is not None
    assert drift_of(_found(asked), dedicated, own_node) is None
    assert drift_of(_found(asked, node=None), dedicated, None) is None  # not scheduled yet
    loose = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        *asked["affinity"]["nodeAffinity"][
                            "requiredDuringSchedulingIgnoredDuringExecution"
                        ]["nodeSelectorTerms"],
                        {},
                    ]
                }
            }
        }
    }
    assert drift_of(_found(loose), dedicated, own_node) is not None  # one term asks for any node
    by_selector = {"nodeSelector": {DEDICATED_KEY: TENANT}}
    assert drift_of(_found(by_selector), dedicated, own_node) is None
    # Somebody else's dedicated node is no place for a pod that is not dedicated.
    assert "dedicated" in (drift_of(_found({}), spec, own_node) or "")
    assert drift_of(_found({}), spec, {"zone": "a"}) is None
    assert drift_of({"spec": "odd"}, spec, None) is None
    assert drift_of({}, userns, None) is not None


def test_a_drift_is_recorded_and_reported_within_bounds() -> None:
    at = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    record = drift_record("r" * 900, _found({}, node="gpu-1"), at)
    assert record == {"reason": "r" * 500, "node": "gpu-1", "pod": "uid-9", "at": at.isoformat()}
    body = status_body({"phase": "Pending", "isolationDrift": record})
    assert body is not None
    drift = body["drift"]
    assert drift["node"] == "gpu-1"
    assert drift["pod"] == "uid-9"
    assert 0 < len(drift["reason"]) <= 500
    assert datetime.fromisoformat(drift["at"]) == at
    odd = {"reason": "bad\x00news", "node": "n" * 300, "pod": "p" * 100, "at": at.isoformat()}
    odd_body = status_body({"phase": "Pending", "isolationDrift": odd})
    assert odd_body is not None
    assert odd_body["drift"]["reason"] == "bad news"
    assert (len(odd_body["drift"]["node"]), len(odd_body["drift"]["pod"])) == (253, 64)
    for bad in (
        "x",
        {"reason": "", "at": at.isoformat()},
        {"reason": 5, "at": at.isoformat()},
        {"reason": "r", "at": "yesterday"},
        {"reason": "r", "at": at.isoformat(), "node": 3},
        {"reason": "\x00", "at": at.isoformat()},
    ):
        bad_body = status_body({"phase": "Pending", "isolationDrift": bad})
        assert bad_body is not None
        assert "drift" not in bad_body
    assert "drift" not in (status_body({"phase": "Running"}) or {})
