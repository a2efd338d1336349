"""A GShareSession resource's spec as the manifest builders take it. Pure.

The CRD's schema validates specs, but the operator does not rely on it: anything of the wrong
shape is a SpecError saying where, never an exception from deep inside a handler."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from gshare.operator.manifests import (
    COMMANDS,
    SHARED,
    GpuAssignment,
    IsolationSpec,
    NetworkSpec,
    SessionSpec,
    Volume,
)

# A RuntimeClass's name: a DNS-1123 subdomain.
SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# A level's name, shown and put in an annotation: "dedicated+sandboxed" and the like.
LEVEL = re.compile(r"[a-z0-9][a-z0-9+._-]{0,62}")
EGRESS = ("open", "listed", "none")
MAX_CIDRS = 200
MAX_CIDR_TEXT = 64  # "ffff:...:ffff/128" is 43


class SpecError(ValueError):
    """The resource's spec cannot be built: a field is missing or of the wrong type."""


def spec_of(resource_spec: Mapping[str, Any]) -> SessionSpec:
    """The spec, or SpecError."""
    try:
        spec = _spec_of(resource_spec)
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise SpecError(f"the spec is not valid: {type(exc).__name__} {str(exc)[:120]}") from exc
    if spec.session_type not in COMMANDS:
        raise SpecError("the spec is not valid: unknown sessionType")
    if spec.desired_state not in ("Running", "Paused"):
        raise SpecError("the spec is not valid: desiredState is neither Running nor Paused")
    return spec


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value


def _revision(value: Any) -> int:
    if type(value) is not int or not 0 <= value < 2**63:
        raise ValueError("revision is not a whole number")
    return value


def _flag(value: Any, name: str) -> bool:
    if type(value) is not bool:
        raise TypeError(f"{name} is not true or false")
    return value


def _object(value: Any, name: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} is not an object")
    return value


def isolation_of(value: Any) -> IsolationSpec:
    """The spec's `isolation`; absent (None) is shared."""
    if value is None:
        return IsolationSpec()
    found = _object(value, "isolation")
    level = found.get("level", SHARED)
    if not isinstance(level, str) or not LEVEL.fullmatch(level):
        raise ValueError("isolation.level is not a level's name")
    runtime_class = found.get("runtimeClassName")
    if runtime_class is not None and (
        not isinstance(runtime_class, str)
        or len(runtime_class) > 253
        or not SUBDOMAIN.fullmatch(runtime_class)
    ):
        raise ValueError("isolation.runtimeClassName is not a RuntimeClass name")
    dedicated_to = found.get("dedicatedTo")
    if dedicated_to is not None and (
        not isinstance(dedicated_to, str) or not UUID.fullmatch(dedicated_to)
    ):
        raise ValueError("isolation.dedicatedTo is not a tenant id")
    user_namespaces = _flag(found.get("userNamespaces", False), "isolation.userNamespaces")
    # A level that names a part its fields do not carry would make a pod less isolated than
    # asked: nothing runs from it.
    parts = set(level.split("+"))
    if "sandboxed" in parts and runtime_class is None:
        raise ValueError("isolation.level is sandboxed but names no runtimeClassName")
    if "dedicated" in parts and dedicated_to is None:
        raise ValueError("isolation.level is dedicated but names no dedicatedTo")
    if "user-namespaced" in parts and not user_namespaces:
        raise ValueError("isolation.level is user-namespaced but userNamespaces is not true")
    return IsolationSpec(
        level=level,
        user_namespaces=user_namespaces,
        runtime_class=runtime_class,
        dedicated_to=dedicated_to,
    )


def network_of(value: Any) -> NetworkSpec:
    """The spec's `network`; absent (None) is open egress."""
    if value is None:
        return NetworkSpec()
    found = _object(value, "network")
    egress = found.get("egress", "open")
    if egress not in EGRESS:
        raise ValueError("network.egress is none of open, listed, none")
    cidrs = found.get("cidrs") or []
    if not isinstance(cidrs, list):
        raise TypeError("network.cidrs is not a list")
    if len(cidrs) > MAX_CIDRS:
        raise ValueError(f"network.cidrs lists more than {MAX_CIDRS}")
    normalized: list[str] = []
    for cidr in cidrs:
        # ip_network takes numbers too, and scoped IPv6 addresses the API refuses.
        if not isinstance(cidr, str) or len(cidr) > MAX_CIDR_TEXT or "%" in cidr:
            raise ValueError("network.cidrs holds something that is not a CIDR")
        try:
            text = str(ipaddress.ip_network(cidr.strip(), strict=False))
        except ValueError:
            raise ValueError(f"network.cidrs: {cidr[:MAX_CIDR_TEXT]!r} is not a CIDR") from None
        if text not in normalized:
            normalized.append(text)
    return NetworkSpec(egress=egress, cidrs=tuple(normalized))


def _spec_of(resource_spec: Mapping[str, Any]) -> SessionSpec:
    gpu = resource_spec.get("gpu")
    return SessionSpec(
        session_id=_text(resource_spec["sessionId"]),
        owner_id=_text(resource_spec["ownerId"]),
        session_type=resource_spec["sessionType"],
        image=_text(resource_spec["image"]),
        cpu_millicores=int(resource_spec["cpuMillicores"]),
        memory_mib=int(resource_spec["memoryMiB"]),
        desired_state=resource_spec.get("desiredState", "Running"),
        revision=_revision(resource_spec.get("revision", 0)),
        gpu=None
        if not gpu
        else GpuAssignment(
            node=gpu["node"],
            card_uuid=gpu["cardUUID"],
            vram_mib=gpu.get("vramMiB"),
            cores_percent=gpu.get("coresPercent"),
            mig_profile=gpu.get("migProfile"),
            mig_instance=gpu.get("migInstance"),
        ),
        volumes=tuple(
            Volume(
                name=v["name"],
                kind=v["kind"],
                mount_path=v["mountPath"],
                access_mode=v.get("accessMode", "ReadWriteOnce"),
                size_gib=int(v.get("sizeGiB", 10)),
                claim_name=v.get("claimName"),
                keep=bool(v.get("keep", False)),
            )
            for v in resource_spec.get("volumes") or []
        ),
        isolation=isolation_of(resource_spec.get("isolation")),
        network=network_of(resource_spec.get("network")),
    )
