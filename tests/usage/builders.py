"""Usage rows for tests, as the rollup would have left them."""

from __future__ import annotations

from typing import Any

from gshare.usage.models import UsageDay, UsageMonth


def months_of(days: list[UsageDay]) -> list[UsageMonth]:
    """The month rows the rollup keeps beside these day rows."""
    months: dict[tuple[Any, ...], UsageMonth] = {}
    for d in days:
        month = d.day.replace(day=1)
        key = (month, d.user_id, d.group_id, d.model, d.tier, d.cluster_id)
        m = months.get(key)
        if m is None:
            months[key] = UsageMonth(
                month=month,
                user_id=d.user_id,
                group_id=d.group_id,
                org_id=d.org_id,
                model=d.model,
                tier=d.tier,
                cluster_id=d.cluster_id,
                held_seconds=d.held_seconds,
                gpu_seconds=d.gpu_seconds,
                idle_gpu_seconds=d.idle_gpu_seconds,
                measured_seconds=d.measured_seconds,
                credits=d.credits,
                vram_peak_mib=d.vram_peak_mib,
            )
            continue
        for name in ("held_seconds", "gpu_seconds", "idle_gpu_seconds", "measured_seconds"):
            setattr(m, name, getattr(m, name) + getattr(d, name))
        m.credits += d.credits
        m.vram_peak_mib = max(m.vram_peak_mib or 0, d.vram_peak_mib or 0) or None
    return list(months.values())
