"""Policy resolution across the four scopes, request checks and document validation."""

from __future__ import annotations

import random
import uuid
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gshare.capacity.policy import (
    KEYS,
    ORG_KEYS,
    RESERVED_KEYS,
    Boundary,
    EffectiveValue,
    PolicyAccepted,
    PolicyDenial,
    PolicyRefused,
    PolicyValue,
    PreemptionTerms,
    Scope,
    ScopedPolicy,
    ScopeKind,
    SessionRequest,
    Usage,
    boundary_of,
    check_queueing,
    check_request,
    effective_policy,
    preemption_terms,
    priority_of,
    read_policy,
    share_weight,
)

GLOBAL = Scope(ScopeKind.GLOBAL)
ORG = Scope(ScopeKind.ORGANIZATION, uuid.UUID(int=1))
GROUP = Scope(ScopeKind.GROUP, uuid.UUID(int=2))
USER = Scope(ScopeKind.USER, uuid.UUID(int=3))


def policy(scope: Scope, **values: object) -> ScopedPolicy:
    read = read_policy(values)
    assert isinstance(read, PolicyAccepted), read
    return ScopedPolicy(scope, read.values)


def gpu_request(
    model: str = "A100-80GB",
    tier: str = "1/4",
    vram_mib: int = 20_480,
    cpu_cores: float = 4,
    memory_mib: int = 16_384,
) -> SessionRequest:
    return SessionRequest(model, tier, vram_mib, cpu_cores, memory_mib)


def cpu_request(cpu_cores: float = 2, memory_mib: int = 4096) -> SessionRequest:
    return SessionRequest(None, None, 0, cpu_cores, memory_mib)


LAYERS = [
    policy(GLOBAL, max_gpu_sessions=1, max_vram_mib=40_960, idle_timeout_minutes=60),
    policy(ORG, max_gpu_sessions=4, storage_gb=100),
    policy(GROUP, max_gpu_sessions=2, allowed_tiers=["1/4", "1/2"]),
    policy(USER, max_gpu_sessions=6, queueing_allowed=False),
]


def test_each_key_comes_from_the_most_specific_scope_that_sets_it() -> None:
    effective = effective_policy(list(reversed(LAYERS)))
    assert {key: effective[key] for key in KEYS} == {
        "allowed_models": EffectiveValue(None, None),
        "allowed_tiers": EffectiveValue(frozenset({"1/4", "1/2"}), GROUP),
        # The user's 6 loosens the group's 2.
        "max_gpu_sessions": EffectiveValue(6, USER),
        "max_vram_mib": EffectiveValue(40_960, GLOBAL),
        "cpu_cores_per_session": EffectiveValue(None, None),
        "memory_mib_per_session": EffectiveValue(None, None),
        "cpu_cores_total": EffectiveValue(None, None),
        "memory_mib_total": EffectiveValue(None, None),
        "storage_gb": EffectiveValue(100, ORG),
        "idle_timeout_minutes": EffectiveValue(60, GLOBAL),
        "keep_running_limit_minutes": EffectiveValue(None, None),
        "max_session_minutes": EffectiveValue(None, None),
        "queueing_allowed": EffectiveValue(False, USER),
        "org_weight": EffectiveValue(1.0, None),
        "queue_weight": EffectiveValue(1.0, None),
        "priority": EffectiveValue("normal", None),
        "preemptible": EffectiveValue(True, None),
        "min_runtime_minutes": EffectiveValue(None, None),
        "max_wait_minutes": EffectiveValue(None, None),
        "preemption_notice_minutes": EffectiveValue(10, None),
        "max_booked_card_hours_week": EffectiveValue(168.0, None),
        "max_org_booked_card_hours_week": EffectiveValue(336.0, None),
        "max_booking_days_ahead": EffectiveValue(90, None),
        "isolation": EffectiveValue("shared", None),
        "egress": EffectiveValue("open", None),
        "egress_cidrs": EffectiveValue(None, None),
    }


def test_two_policies_of_one_scope_kind_are_a_mistake() -> None:
    with pytest.raises(ValueError, match="one policy per scope kind"):
        effective_policy([policy(GROUP), policy(Scope(ScopeKind.GROUP, uuid.UUID(int=9)))])


def test_a_request_is_refused_naming_the_key_and_its_scope() -> None:
    effective = effective_policy(LAYERS)
    assert check_request(effective, gpu_request(tier="exclusive"), Usage()) == PolicyDenial(
        "allowed_tiers", GROUP, "allowed_tiers allows 1/2, 1/4; this asks for exclusive."
    )
    assert check_request(
        effective, gpu_request(vram_mib=20_480), Usage(gpu_sessions=1, vram_mib=30_000)
    ) == PolicyDenial(
        "max_vram_mib", GLOBAL, "max_vram_mib allows 40960; this asks for 50480 MiB in all."
    )
    assert check_request(effective, gpu_request(), Usage(gpu_sessions=6)) == PolicyDenial(
        "max_gpu_sessions", USER, "max_gpu_sessions allows 6; this asks for 7 sessions."
    )


def test_the_user_value_that_loosens_the_group_admits_a_third_session() -> None:
    effective = effective_policy(LAYERS)
    assert check_request(effective, gpu_request(vram_mib=1), Usage(gpu_sessions=2)) is None
    without_user = effective_policy(LAYERS[:3])
    denial = check_request(without_user, gpu_request(vram_mib=1), Usage(gpu_sessions=2))
    assert denial is not None
    assert (denial.key, denial.scope) == ("max_gpu_sessions", GROUP)


def test_cpu_sessions_skip_gpu_rules_but_obey_cpu_and_memory_quotas() -> None:
    layers = [
        policy(GLOBAL, allowed_models=[], max_gpu_sessions=0, cpu_cores_total=4.5),
        policy(ORG, memory_mib_per_session=8192, memory_mib_total=10_000),
    ]
    effective = effective_policy(layers)
    assert check_request(effective, cpu_request(cpu_cores=2.5), Usage(cpu_cores=2)) is None
    assert check_request(effective, cpu_request(cpu_cores=2.6), Usage(cpu_cores=2)) == (
        PolicyDenial(
            "cpu_cores_total", GLOBAL, "cpu_cores_total allows 4.5; this asks for 4.6 cores in all."
        )
    )
    denial = check_request(effective, cpu_request(memory_mib=8193), Usage())
    assert denial is not None
    assert (denial.key, denial.scope) == ("memory_mib_per_session", ORG)
    denial = check_request(effective, cpu_request(), Usage(memory_mib=6000))
    assert denial is not None
    assert denial.key == "memory_mib_total"
    denial = check_request(effective, gpu_request(), Usage())
    assert denial == PolicyDenial(
        "allowed_models", GLOBAL, "allowed_models allows nothing; this asks for A100-80GB."
    )


def test_fractional_cores_add_up_without_drift() -> None:
    effective = effective_policy([policy(GLOBAL, cpu_cores_total=0.3)])
    assert check_request(effective, cpu_request(cpu_cores=0.1), Usage(cpu_cores=0.2)) is None


def test_queueing_is_allowed_unless_a_scope_forbids_it() -> None:
    assert check_queueing(effective_policy([])) is None
    assert check_queueing(effective_policy(LAYERS)) == PolicyDenial(
        "queueing_allowed", USER, "queueing_allowed is false."
    )


def test_a_policy_document_is_checked_key_by_key() -> None:
    assert read_policy(
        {
            "max_gpu_sessions": 2.5,
            "max_vram_mib": -1,
            "queueing_allowed": 1,
            "idle_timeout_minutes": True,
            "allowed_models": "A100-80GB",
            "queue_weight": 5000,
            "gpus": 3,
        }
    ) == PolicyRefused(
        (
            "Unknown policy key 'gpus'; the keys are " + ", ".join(KEYS) + ".",
            "allowed_models is a list of names.",
            "max_gpu_sessions is a whole number.",
            "max_vram_mib is at least 0.",
            "idle_timeout_minutes is a number.",
            "queueing_allowed is true or false.",
            "queue_weight is at most 1000.",
        )
    )


def test_a_valid_document_keeps_set_keys_and_drops_nulls() -> None:
    assert read_policy(
        {"allowed_models": [" A100-80GB "], "cpu_cores_per_session": 2, "storage_gb": None}
    ) == PolicyAccepted({"allowed_models": frozenset({"A100-80GB"}), "cpu_cores_per_session": 2.0})


# -- preemption terms ------------------------------------------------------------------------

PREEMPTION: dict[str, PolicyValue] = {
    "priority": "high",
    "preemptible": False,
    "min_runtime_minutes": 0,
    "max_wait_minutes": 1,
    "preemption_notice_minutes": 7 * 24 * 60,
}


def test_the_preemption_keys_follow_queue_weight_in_order_then_booking_then_boundary() -> None:
    keys = list(KEYS)
    assert keys[keys.index("queue_weight") + 1 :] == [
        *PREEMPTION,
        "max_booked_card_hours_week",
        "max_org_booked_card_hours_week",
        "max_booking_days_ahead",
        "isolation",
        "egress",
        "egress_cidrs",
    ]


def test_the_booking_keys_are_read_at_their_bounds_and_refused_past_them() -> None:
    bounds = {
        "max_booked_card_hours_week": 10_000_000,
        "max_org_booked_card_hours_week": 10_000_000,
        "max_booking_days_ahead": 3660,
    }
    assert read_policy(bounds) == PolicyAccepted(bounds)
    least = dict.fromkeys(bounds, 0)
    assert read_policy(least) == PolicyAccepted(least)
    for key, past in (
        ("max_booked_card_hours_week", -1),
        ("max_org_booked_card_hours_week", 10_000_001),
        ("max_booking_days_ahead", 3661),
    ):
        assert isinstance(read_policy({key: past}), PolicyRefused)


def test_the_preemption_keys_are_read_at_their_bounds() -> None:
    assert read_policy(PREEMPTION) == PolicyAccepted(PREEMPTION)
    year = 366 * 24 * 60
    for priority in ("low", "normal", "high"):
        assert read_policy({"priority": priority}) == PolicyAccepted({"priority": priority})
    assert read_policy({"min_runtime_minutes": year, "max_wait_minutes": year}) == (
        PolicyAccepted({"min_runtime_minutes": year, "max_wait_minutes": year})
    )


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        ({"priority": "urgent"}, "priority is one of low, normal, high."),
        ({"priority": "High"}, "priority is one of low, normal, high."),
        ({"priority": " high"}, "priority is one of low, normal, high."),
        ({"priority": "high\x00"}, "priority is one of low, normal, high."),
        ({"priority": "hi\u200bgh"}, "priority is one of low, normal, high."),
        ({"priority": ""}, "priority is one of low, normal, high."),
        ({"priority": 2}, "priority is one of low, normal, high."),
        ({"priority": True}, "priority is one of low, normal, high."),
        ({"priority": ["high"]}, "priority is one of low, normal, high."),
        ({"preemptible": "no"}, "preemptible is true or false."),
        ({"preemptible": 0}, "preemptible is true or false."),
        ({"min_runtime_minutes": -1}, "min_runtime_minutes is at least 0."),
        ({"min_runtime_minutes": 366 * 24 * 60 + 1}, "min_runtime_minutes is at most 527040."),
        ({"min_runtime_minutes": 1.5}, "min_runtime_minutes is a whole number."),
        ({"max_wait_minutes": 0}, "max_wait_minutes is at least 1."),
        ({"max_wait_minutes": 10**30}, "max_wait_minutes is at most 527040."),
        ({"max_wait_minutes": True}, "max_wait_minutes is a number."),
        ({"preemption_notice_minutes": -1}, "preemption_notice_minutes is at least 0."),
        ({"preemption_notice_minutes": 10081}, "preemption_notice_minutes is at most 10080."),
        ({"preemption_notice_minutes": "10"}, "preemption_notice_minutes is a number."),
    ],
)
def test_a_bad_preemption_value_is_refused_with_its_reason(
    values: dict[str, object], reason: str
) -> None:
    assert read_policy(values) == PolicyRefused((reason,))


def test_unset_preemption_keys_take_their_defaults() -> None:
    effective = effective_policy([])
    assert priority_of(effective) == "normal"
    assert preemption_terms(effective) == PreemptionTerms(
        priority="normal",
        preemptible=True,
        min_runtime=timedelta(0),
        max_wait=None,
        notice=timedelta(minutes=10),
        kept_notice=timedelta(0),  # the default alone: a booking's notice replaces it
    )


def test_the_preemption_terms_come_from_the_most_specific_scopes() -> None:
    effective = effective_policy(
        [
            policy(GLOBAL, priority="low", min_runtime_minutes=30, preemption_notice_minutes=0),
            policy(GROUP, priority="high", max_wait_minutes=120),
            policy(USER, preemptible=False),
        ]
    )
    assert effective["priority"] == EffectiveValue("high", GROUP)
    assert priority_of(effective) == "high"
    assert preemption_terms(effective) == PreemptionTerms(
        priority="high",
        preemptible=False,
        min_runtime=timedelta(minutes=30),
        max_wait=timedelta(hours=2),
        notice=timedelta(0),
        kept_notice=timedelta(0),
    )


def test_the_notice_a_scope_sets_is_kept_against_a_bookings_shorter_one() -> None:
    effective = effective_policy([policy(GLOBAL, preemption_notice_minutes=45)])
    assert preemption_terms(effective).kept_notice == timedelta(minutes=45)


def test_the_preemption_keys_limit_no_request() -> None:
    effective = effective_policy([policy(GLOBAL, **PREEMPTION), policy(USER, priority="low")])
    assert check_request(effective, gpu_request(), Usage(gpu_sessions=50)) is None
    assert check_request(effective, cpu_request(), Usage(cpu_cores=1000)) is None
    assert check_queueing(effective) is None


# -- properties ------------------------------------------------------------------------------

NUMBER_KEYS = [key for key, rule in KEYS.items() if rule.kind is int]
SCOPES = [GLOBAL, ORG, GROUP, USER]


@given(
    st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                key: st.integers(0, 1000) for key in NUMBER_KEYS if key != "idle_timeout_minutes"
            },
        ),
        min_size=4,
        max_size=4,
    ),
    st.sets(st.sampled_from(SCOPES), min_size=0, max_size=4),
    st.randoms(),
)
def test_the_effective_value_is_the_most_specific_set_value(
    documents: list[dict[str, int]], present: set[Scope], shuffle: random.Random
) -> None:
    layers = [
        ScopedPolicy(scope, dict[str, PolicyValue](document))
        for scope, document in zip(SCOPES, documents, strict=True)
        if scope in present
    ]
    shuffled = list(layers)
    shuffle.shuffle(shuffled)
    effective = effective_policy(shuffled)
    for key in NUMBER_KEYS:
        setters = [layer for layer in layers if key in layer.values]
        if setters:
            most_specific = max(setters, key=lambda layer: layer.scope.kind)
            assert effective[key] == EffectiveValue(most_specific.values[key], most_specific.scope)
        else:  # unset: the key's default, if it has one, from no scope
            assert effective[key] == effective_policy([])[key]
            assert effective[key].scope is None


@given(
    limit=st.integers(0, 100_000),
    used=st.integers(0, 100_000),
    asked=st.integers(0, 100_000),
    scope=st.sampled_from(SCOPES),
)
def test_a_vram_request_is_refused_exactly_when_it_passes_the_limit(
    limit: int, used: int, asked: int, scope: Scope
) -> None:
    effective = effective_policy([policy(scope, max_vram_mib=limit)])
    denial = check_request(effective, gpu_request(vram_mib=asked), Usage(vram_mib=used))
    assert (denial is not None) == (used + asked > limit)
    if denial is not None:
        assert (denial.key, denial.scope) == ("max_vram_mib", scope)


def test_egress_ranges_are_read_as_networks_and_anything_else_is_refused() -> None:
    read = read_policy({"egress": "listed", "egress_cidrs": ["10.1.2.3/8", " 192.168.0.0/16 "]})
    assert read == PolicyAccepted(
        {"egress": "listed", "egress_cidrs": frozenset({"10.0.0.0/8", "192.168.0.0/16"})}
    )
    for bad in (["10.0.0.0/33"], ["example.org"], ["10.0.0.0/8\x00"], ["x" * 121], [""]):
        refused = read_policy({"egress_cidrs": bad})
        assert isinstance(refused, PolicyRefused), bad
        assert any("egress_cidrs" in r for r in refused.reasons)


def test_isolation_is_one_of_its_levels_and_only_a_super_admin_sets_it() -> None:
    for level in ("shared", "dedicated+sandboxed", "user-namespaced"):
        assert read_policy({"isolation": level}) == PolicyAccepted({"isolation": level})
    for bad in ("Dedicated", "sandboxed+dedicated", "", "shared\x00", 3):
        assert isinstance(read_policy({"isolation": bad}), PolicyRefused)
    assert {"isolation", "egress", "egress_cidrs"} <= RESERVED_KEYS


def test_the_boundary_comes_from_the_most_specific_scope() -> None:
    effective = effective_policy(
        [
            policy(ORG, isolation="dedicated", egress="listed", egress_cidrs=["10.0.0.0/8"]),
            policy(GROUP, isolation="dedicated+sandboxed"),
        ]
    )
    boundary = boundary_of(effective)
    assert boundary == Boundary("dedicated+sandboxed", "listed", frozenset({"10.0.0.0/8"}), GROUP)
    assert boundary_of(effective_policy([])) == Boundary("shared", "open", frozenset(), None)


def test_the_fair_share_weights_read_1_unless_set() -> None:
    unset = effective_policy([])
    assert (share_weight(unset, "org_weight"), share_weight(unset, "queue_weight")) == (1.0, 1.0)
    org = ScopedPolicy(Scope(ScopeKind.ORGANIZATION, uuid.UUID(int=1)), {"org_weight": 3.0})
    assert share_weight(effective_policy([org]), "org_weight") == 3.0
    assert "org_weight" in RESERVED_KEYS
    assert "org_weight" in ORG_KEYS
