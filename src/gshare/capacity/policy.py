"""Resource policies at four scopes, their resolution and the check of a request. Pure: no I/O.

A policy document sets some keys of `KEYS`; an unset key says nothing. Invariants:
- the effective value of a key comes from the most specific scope that sets it: user, then group,
  then organization, then global; a more specific value wins even when it is looser;
- every effective value names the scope it came from; a key no scope sets has no scope, limits
  nothing and has no value, unless it has a default: `queueing_allowed` then allows,
  `org_weight` and `queue_weight` are 1, `priority` is "normal", `preemptible` is true,
  `preemption_notice_minutes` is 10, `max_booked_card_hours_week` is 168 (one card around the
  clock) and `max_org_booked_card_hours_week` 336 (two: an organization's admins create groups
  freely, so each group's default alone would not bound it) (an unset `min_runtime_minutes`
  reads as 0, and an unset `max_wait_minutes` means that waiting alone never claims a card);
- a request is refused by the first rule it breaks, in `KEYS` order, naming that key and the
  scope that set it; a request that breaks no rule is not refused;
- a valid document sets only known keys, each of its type and within its range.
`allowed_models` and `allowed_tiers` are sets of names (a tier by its name: `1/4`, `exclusive`,
`mig-3g.40gb`); set, they allow only those, and an empty set allows no GPU session.
`priority`, `preemptible`, `min_runtime_minutes`, `max_wait_minutes` and
`preemption_notice_minutes` are the terms of preemption (a queued request may pause running
sessions, with notice): they limit no request, and `check_request` ignores them; read them with
`priority_of` and `preemption_terms`.
`max_booked_card_hours_week` (a group's bookings in a week), `max_org_booked_card_hours_week`
(those of all of an organization's groups together) and `max_booking_days_ahead` bound bookings;
they limit no session request either.
`org_weight` and `queue_weight` are fair share's weights (read them with `share_weight`):
`org_weight` an organization's among organizations, set only for an organization or globally;
`queue_weight` a group's (or a user's) within its organization.
`isolation`, `egress` and `egress_cidrs` are a tenant's trust boundary (which nodes its sessions
may run on, and where its pods may connect); they limit no request either: placement reads them
with `boundary_of`. `isolation` defaults to "shared" and `egress` to "open".
"""

from __future__ import annotations

import ipaddress
import unicodedata
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from enum import IntEnum
from typing import Literal, get_args

PolicyValue = int | float | bool | str | frozenset[str]
Priority = Literal["low", "normal", "high"]
PRIORITIES: tuple[Priority, ...] = get_args(Priority)


class ScopeKind(IntEnum):
    """Ordered from the least to the most specific."""

    GLOBAL = 0
    ORGANIZATION = 1
    GROUP = 2
    USER = 3


@dataclass(frozen=True)
class Scope:
    kind: ScopeKind
    id: uuid.UUID | None = None  # None for the global scope only


@dataclass(frozen=True)
class KeyRule:
    """A key's type and range; a `str` key is one of `choices` (and has no range)."""

    kind: type
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()


_MINUTES_IN_A_YEAR = 366 * 24 * 60
# How much a tenant's sessions share (isolation.py says what each level asks of a node).
ISOLATION_LEVELS = (
    "shared",
    "user-namespaced",
    "sandboxed",
    "dedicated",
    "dedicated+user-namespaced",
    "dedicated+sandboxed",
)
# Where a session's pod may connect: anywhere but the metadata service and other sessions
# (open), name resolution and the `egress_cidrs` only (listed), or nowhere (none).
EGRESS_MODES = ("open", "listed", "none")
KEYS: dict[str, KeyRule] = {
    "allowed_models": KeyRule(frozenset),
    "allowed_tiers": KeyRule(frozenset),
    "max_gpu_sessions": KeyRule(int, 0, 10_000),
    "max_vram_mib": KeyRule(int, 0, 2**40),
    "cpu_cores_per_session": KeyRule(float, 0, 4096),
    "memory_mib_per_session": KeyRule(int, 0, 2**40),
    "cpu_cores_total": KeyRule(float, 0, 1_000_000),
    "memory_mib_total": KeyRule(int, 0, 2**50),
    "storage_gb": KeyRule(int, 0, 1_000_000),
    "idle_timeout_minutes": KeyRule(int, 1, _MINUTES_IN_A_YEAR),
    "keep_running_limit_minutes": KeyRule(int, 0, _MINUTES_IN_A_YEAR),
    "max_session_minutes": KeyRule(int, 1, _MINUTES_IN_A_YEAR),
    "queueing_allowed": KeyRule(bool),
    "org_weight": KeyRule(float, 0.001, 1000),
    "queue_weight": KeyRule(float, 0.001, 1000),
    "priority": KeyRule(str, choices=PRIORITIES),
    "preemptible": KeyRule(bool),
    "min_runtime_minutes": KeyRule(int, 0, _MINUTES_IN_A_YEAR),
    "max_wait_minutes": KeyRule(int, 1, _MINUTES_IN_A_YEAR),
    "preemption_notice_minutes": KeyRule(int, 0, 7 * 24 * 60),
    "max_booked_card_hours_week": KeyRule(float, 0, 10_000_000),
    "max_org_booked_card_hours_week": KeyRule(float, 0, 10_000_000),
    "max_booking_days_ahead": KeyRule(int, 0, 3660),
    "isolation": KeyRule(str, choices=ISOLATION_LEVELS),
    "egress": KeyRule(str, choices=EGRESS_MODES),
    "egress_cidrs": KeyRule(frozenset),
}
# Keys that decide between tenants (whose request may pause whose session, and how long a
# session is protected): only a super admin sets them, at any scope.
RESERVED_KEYS = frozenset(
    {
        # An organization's weight among organizations in fair share.
        "org_weight",
        "priority",
        "preemptible",
        "min_runtime_minutes",
        "max_wait_minutes",
        "preemption_notice_minutes",
        # How much of the cards a group, and all of an organization's groups together, may book
        # ahead, and how far.
        "max_booked_card_hours_week",
        "max_org_booked_card_hours_week",
        "max_booking_days_ahead",
        # The trust boundary of a tenant's sessions: a group admin must not loosen what was
        # set for their organization.
        "isolation",
        "egress",
        "egress_cidrs",
    }
)
# Keys of an organization as a whole: set for an organization or globally, never for a group
# or a user (fair share and the bookings' cap read an organization's from its own policy, else
# the global one).
ORG_KEYS = frozenset({"org_weight", "max_org_booked_card_hours_week"})
# A name is a model's (at most 120 characters) or a tier's; no list needs more than this.
MAX_NAMES = 200
MAX_NAME_LENGTH = 120
_DEFAULTS: dict[str, PolicyValue] = {
    "queueing_allowed": True,
    "org_weight": 1.0,
    "queue_weight": 1.0,
    "priority": "normal",
    "preemptible": True,
    "preemption_notice_minutes": 10,
    "max_booked_card_hours_week": 168.0,
    "max_org_booked_card_hours_week": 336.0,
    "max_booking_days_ahead": 90,
    "isolation": "shared",
    "egress": "open",
}


@dataclass(frozen=True)
class ScopedPolicy:
    scope: Scope
    values: Mapping[str, PolicyValue]


@dataclass(frozen=True)
class EffectiveValue:
    value: PolicyValue | None
    scope: Scope | None  # None: no scope sets the key


@dataclass(frozen=True)
class EffectivePolicy:
    values: Mapping[str, EffectiveValue]

    def __getitem__(self, key: str) -> EffectiveValue:
        return self.values[key]


@dataclass(frozen=True)
class PolicyAccepted:
    values: Mapping[str, PolicyValue]


@dataclass(frozen=True)
class PolicyRefused:
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class Usage:
    """What the user holds now, across their live sessions."""

    gpu_sessions: int = 0
    vram_mib: int = 0
    cpu_cores: float = 0
    memory_mib: int = 0


@dataclass(frozen=True)
class SessionRequest:
    """A session asked for; `model` and `tier` are None for a CPU-only session."""

    model: str | None
    tier: str | None
    vram_mib: int
    cpu_cores: float
    memory_mib: int


@dataclass(frozen=True)
class PolicyDenial:
    key: str
    scope: Scope
    reason: str


@dataclass(frozen=True)
class PreemptionTerms:
    """How a user's requests and sessions take part in preemption, from their effective policy.

    `priority`: of their queued requests; `preemptible`: whether their running sessions may be
    paused; `min_runtime`: how long a session runs before it may be; `max_wait`: how long a
    request waits before waiting alone lets it claim a card (None: never); `notice`: how long
    before a pause its session is told; `kept_notice`: what of it a booking's shorter notice
    does not shorten (the notice a scope sets; the default alone keeps nothing).
    """

    priority: Priority
    preemptible: bool
    min_runtime: timedelta
    max_wait: timedelta | None
    notice: timedelta
    kept_notice: timedelta = timedelta(0)


@dataclass(frozen=True)
class _Invalid:
    reason: str


def _read_value(key: str, rule: KeyRule, raw: object) -> PolicyValue | _Invalid:
    if rule.kind is str:
        # Exact match only: no trimming or case folding; control characters fail here too.
        if isinstance(raw, str) and raw in rule.choices:
            return raw
        return _Invalid(f"{key} is one of {', '.join(rule.choices)}.")
    if rule.kind is frozenset:
        if not isinstance(raw, list | tuple | set | frozenset) or not all(
            isinstance(item, str) and item.strip() for item in raw
        ):
            return _Invalid(f"{key} is a list of names.")
        if len(raw) > MAX_NAMES or any(len(item) > MAX_NAME_LENGTH for item in raw):
            return _Invalid(
                f"{key} names at most {MAX_NAMES}, each at most {MAX_NAME_LENGTH} characters."
            )
        if any(unicodedata.category(ch) in ("Cc", "Cf") for item in raw for ch in item):
            return _Invalid(f"{key} names cannot hold control or invisible formatting characters.")
        names = frozenset(item.strip() for item in raw)
        if key == "egress_cidrs":
            return _networks(names)
        return names
    if rule.kind is bool:
        return raw if isinstance(raw, bool) else _Invalid(f"{key} is true or false.")
    # bool is an int in Python; a document that says `true` for a number is a mistake.
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return _Invalid(f"{key} is a number.")
    if rule.kind is int and not isinstance(raw, int):
        return _Invalid(f"{key} is a whole number.")
    # Compared before any float(): a huge whole number would overflow it.
    if raw != raw or (rule.minimum is not None and raw < rule.minimum):
        return _Invalid(f"{key} is at least {rule.minimum:g}.")
    if rule.maximum is not None and raw > rule.maximum:
        return _Invalid(f"{key} is at most {rule.maximum:g}.")
    return raw if rule.kind is int else float(raw)


def _networks(names: frozenset[str]) -> PolicyValue | _Invalid:
    """Address ranges in CIDR notation, each written as its network (`10.1.2.3/8` is
    `10.0.0.0/8`), so the same range is one entry however it was typed."""
    networks: set[str] = set()
    for name in names:
        try:
            if "%" in name:  # a scoped IPv6 address names an interface, not a range
                raise ValueError(name)
            networks.add(str(ipaddress.ip_network(name, strict=False)))
        except ValueError:
            return _Invalid(
                f"egress_cidrs holds address ranges like 10.0.0.0/8; {name[:60]!r} is not one."
            )
    return frozenset(networks)


def read_policy(document: Mapping[str, object]) -> PolicyAccepted | PolicyRefused:
    """Validate a policy document; unset keys are simply absent (or null)."""
    values: dict[str, PolicyValue] = {}
    reasons: list[str] = []
    for key in sorted(document.keys() - KEYS.keys()):
        known = ", ".join(KEYS)
        reasons.append(f"Unknown policy key {key!r}; the keys are {known}.")
    for key, rule in KEYS.items():
        raw = document.get(key)
        if raw is None:
            continue
        read = _read_value(key, rule, raw)
        if isinstance(read, _Invalid):
            reasons.append(read.reason)
        else:
            values[key] = read
    if reasons:
        return PolicyRefused(tuple(reasons))
    return PolicyAccepted(values)


def effective_policy(layers: Sequence[ScopedPolicy]) -> EffectivePolicy:
    """Resolve each key from the most specific layer that sets it.

    `layers` are the policies that apply to one user, at most one per scope kind, in any order.
    """
    kinds = [layer.scope.kind for layer in layers]
    if len(set(kinds)) != len(kinds):
        raise ValueError("at most one policy per scope kind applies to a user")
    most_specific_first = sorted(layers, key=lambda layer: layer.scope.kind, reverse=True)
    resolved: dict[str, EffectiveValue] = {}
    for key in KEYS:
        resolved[key] = EffectiveValue(_DEFAULTS.get(key), None)
        for layer in most_specific_first:
            if key in layer.values:
                resolved[key] = EffectiveValue(layer.values[key], layer.scope)
                break
    return EffectivePolicy(resolved)


def _set_limit(policy: EffectivePolicy, key: str) -> PolicyValue | None:
    found = policy[key]
    return None if found.scope is None else found.value


def _number(policy: EffectivePolicy, key: str) -> float | None:
    value = _set_limit(policy, key)
    return float(value) if isinstance(value, int | float) else None


def _names(policy: EffectivePolicy, key: str) -> frozenset[str] | None:
    value = _set_limit(policy, key)
    return value if isinstance(value, frozenset) else None


def _millicores(cores: float) -> int:
    # Cores are compared in thousandths so that sums of fractional cores do not drift.
    return round(cores * 1000)


def check_request(
    policy: EffectivePolicy, request: SessionRequest, usage: Usage
) -> PolicyDenial | None:
    """The first rule `request` breaks given what the user already holds, or None.

    GPU rules (models, tiers, GPU sessions, VRAM) apply only to a request naming a model.
    """
    gpu = request.model is not None
    checks: list[tuple[str, bool, str]] = []
    if gpu and (models := _names(policy, "allowed_models")) is not None:
        checks.append(("allowed_models", request.model not in models, f"{request.model}"))
    if gpu and (tiers := _names(policy, "allowed_tiers")) is not None:
        checks.append(("allowed_tiers", request.tier not in tiers, f"{request.tier}"))
    if gpu and (sessions := _number(policy, "max_gpu_sessions")) is not None:
        wanted = usage.gpu_sessions + 1
        checks.append(("max_gpu_sessions", wanted > sessions, f"{wanted} sessions"))
    if gpu and (vram := _number(policy, "max_vram_mib")) is not None:
        wanted = usage.vram_mib + request.vram_mib
        checks.append(("max_vram_mib", wanted > vram, f"{wanted} MiB in all"))
    if (cores := _number(policy, "cpu_cores_per_session")) is not None:
        over = _millicores(request.cpu_cores) > _millicores(cores)
        checks.append(("cpu_cores_per_session", over, f"{request.cpu_cores:g} cores"))
    if (memory := _number(policy, "memory_mib_per_session")) is not None:
        over = request.memory_mib > memory
        checks.append(("memory_mib_per_session", over, f"{request.memory_mib} MiB"))
    if (cores_total := _number(policy, "cpu_cores_total")) is not None:
        wanted = _millicores(usage.cpu_cores) + _millicores(request.cpu_cores)
        over = wanted > _millicores(cores_total)
        checks.append(("cpu_cores_total", over, f"{wanted / 1000:g} cores in all"))
    if (memory_total := _number(policy, "memory_mib_total")) is not None:
        wanted = usage.memory_mib + request.memory_mib
        checks.append(("memory_mib_total", wanted > memory_total, f"{wanted} MiB in all"))
    for key, broken, asked in checks:
        if broken:
            found = policy[key]
            assert found.scope is not None
            value = found.value
            shown = ", ".join(sorted(value)) if isinstance(value, frozenset) else f"{value}"
            reason = f"{key} allows {shown or 'nothing'}; this asks for {asked}."
            return PolicyDenial(key, found.scope, reason)
    return None


def allows_tier(policy: EffectivePolicy, model: str, tier: str) -> bool:
    """Whether the allowed models and tiers let a session of `tier` of `model` run at all."""
    models, tiers = _names(policy, "allowed_models"), _names(policy, "allowed_tiers")
    return (models is None or model in models) and (tiers is None or tier in tiers)


def check_queueing(policy: EffectivePolicy) -> PolicyDenial | None:
    """Whether a request that does not fit now may wait in the queue."""
    found = policy["queueing_allowed"]
    if found.value is False and found.scope is not None:
        return PolicyDenial("queueing_allowed", found.scope, "queueing_allowed is false.")
    return None


def priority_of(policy: EffectivePolicy) -> Priority:
    """The effective priority of a user's queued requests; "normal" when no scope sets it."""
    value = policy["priority"].value
    for choice in PRIORITIES:
        if value == choice:
            return choice
    return "normal"


def share_weight(policy: EffectivePolicy, key: str) -> float:
    """A fair-share weight (`org_weight` or `queue_weight`) of an effective policy; 1 unset."""
    value = policy[key].value
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return 1.0
    return float(value)


def _minutes(policy: EffectivePolicy, key: str) -> int | None:
    value = policy[key].value
    # bool is an int; a flag is never a number of minutes.
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def preemption_terms(policy: EffectivePolicy) -> PreemptionTerms:
    """The preemption terms of an effective policy, with the defaults for what no scope sets."""
    preemptible = policy["preemptible"].value
    max_wait = _minutes(policy, "max_wait_minutes")
    notice = _minutes(policy, "preemption_notice_minutes")
    kept = notice if policy["preemption_notice_minutes"].scope is not None else None
    return PreemptionTerms(
        priority=priority_of(policy),
        preemptible=preemptible if isinstance(preemptible, bool) else True,
        min_runtime=timedelta(minutes=_minutes(policy, "min_runtime_minutes") or 0),
        max_wait=None if max_wait is None else timedelta(minutes=max_wait),
        notice=timedelta(minutes=10 if notice is None else notice),
        kept_notice=timedelta(minutes=kept or 0),
    )


@dataclass(frozen=True)
class Boundary:
    """A user's trust boundary from their effective policy: the isolation level their sessions
    run at, and where their pods may connect (`cidrs` only count when `egress` is "listed")."""

    isolation: str
    egress: str
    cidrs: frozenset[str]
    isolation_scope: Scope | None  # where the level was set; None: the default


def boundary_of(policy: EffectivePolicy) -> Boundary:
    level, egress, cidrs = policy["isolation"], policy["egress"].value, policy["egress_cidrs"].value
    return Boundary(
        isolation=level.value if isinstance(level.value, str) else "shared",
        egress=egress if isinstance(egress, str) else "open",
        cidrs=cidrs if isinstance(cidrs, frozenset) else frozenset(),
        isolation_scope=level.scope,
    )
