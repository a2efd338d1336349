"""A GShareSession resource's spec as the manifest builders take it. Pure.

The CRD's schema validates specs, but the operator does not rely on it: anything of the wrong
shape is a SpecError saying where, never an exception from deep inside a handler."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gshare.operator.manifests import COMMANDS, GpuAssignment, SessionSpec, Volume


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
    )
