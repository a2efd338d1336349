"""A GShareSession resource's spec as the manifest builders take it. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gshare.operator.manifests import GpuAssignment, SessionSpec, Volume


def spec_of(resource_spec: Mapping[str, Any]) -> SessionSpec:
    gpu = resource_spec.get("gpu")
    return SessionSpec(
        session_id=str(resource_spec["sessionId"]),
        owner_id=str(resource_spec["ownerId"]),
        session_type=resource_spec["sessionType"],
        image=str(resource_spec["image"]),
        cpu_millicores=int(resource_spec["cpuMillicores"]),
        memory_mib=int(resource_spec["memoryMiB"]),
        desired_state=resource_spec.get("desiredState", "Running"),
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
