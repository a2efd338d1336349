"""GPU utilization per session from a metrics exporter's text, and the report made of it. Pure.

Two sources: HAMi's vGPU monitor, per container, and NVIDIA's DCGM exporter, per card (per pod
too when it runs with its Kubernetes mapping). A session is found by its pod, `session-<id>` in
the sessions namespace; with DCGM and no pod labels, by the card its resource names.

What each source gets wrong is settled here, not in the API:
- HAMi has no series for a container until it first uses the GPU, and has a last-kernel series
  only after its first kernel; a session on a card the text shows, with no series of its own,
  is reported with `has_series=False`.
- HAMi reads utilization as 0 for a container whose cores it does not limit (a whole card), so
  such a session's utilization is null and its last kernel tells whether it is busy.
- DCGM has no `DCGM_FI_DEV_GPU_UTIL` for a MIG instance; its graphics engine activity stands in.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from prometheus_client.parser import text_string_to_metric_families

from gshare.operator.manifests import resource_name

Source = Literal["hami", "dcgm"]
SOURCES: tuple[Source, ...] = ("hami", "dcgm")

MAX_SAMPLES = 5000  # what the API takes in one report
MAX_TEXT_CHARS = 8 * 1024 * 1024
MAX_ERROR_CHARS = 1000
MAX_VRAM_MIB = 2**31 - 1  # far above any card; anything larger is a broken reading
MAX_KERNEL_SECONDS = 1e9  # what the API takes; any longer is as idle
MIB = 1024 * 1024

HAMI_UTILIZATION = "hami_container_device_utilization_ratio"  # a percent, despite the name
HAMI_MEMORY_USED = "hami_vgpu_memory_used_bytes"
HAMI_MEMORY_LIMIT = "hami_vgpu_memory_limit_bytes"
HAMI_LAST_KERNEL = "hami_container_last_kernel_elapsed_seconds"
HAMI_CONTAINER_SERIES = (HAMI_UTILIZATION, HAMI_MEMORY_USED, HAMI_MEMORY_LIMIT, HAMI_LAST_KERNEL)

DCGM_UTILIZATION = "DCGM_FI_DEV_GPU_UTIL"  # percent
DCGM_MEMORY_USED = "DCGM_FI_DEV_FB_USED"  # MiB
DCGM_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"  # ratio 0..1
DCGM_SERIES = (DCGM_UTILIZATION, DCGM_MEMORY_USED, DCGM_ENGINE_ACTIVE)

_POD_PREFIX = resource_name("")


class MetricsError(ValueError):
    """The text is not what the source prints; the message says why, briefly."""


@dataclass(frozen=True)
class Sample:
    """One session's reading. None: the source says nothing usable about it."""

    session_id: str
    gpu_util_percent: float | None
    vram_used_mib: int | None
    last_kernel_seconds: float | None
    has_series: bool = True


@dataclass(frozen=True)
class _Point:
    name: str
    labels: Mapping[str, str]
    value: float


def _points(text: str, source_prefix: str, source_name: str) -> Iterator[_Point]:
    if len(text) > MAX_TEXT_CHARS:
        raise MetricsError(f"the text is larger than {MAX_TEXT_CHARS // MIB} MiB")
    try:
        families = list(text_string_to_metric_families(text))
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise MetricsError(f"not Prometheus text: {str(exc)[:200]}") from exc
    # An exporter of this kind always prints some of its own series; text without any is most
    # likely another service at the configured address, and must not read as "nothing runs".
    if not any(f.name.startswith(source_prefix) for f in families):
        raise MetricsError(f"no {source_name} metrics in the text")
    for family in families:
        for sample in family.samples:
            yield _Point(sample.name, sample.labels, float(sample.value))


def _label(labels: Mapping[str, str], name: str) -> str:
    # Scraped through Prometheus, the exporter's own pod and namespace take these names and the
    # workload's move to exported_*.
    return labels.get(f"exported_{name}") or labels.get(name) or ""


def _session_of(labels: Mapping[str, str], namespace: str) -> str | None:
    """The session whose pod the series names; None for any other pod."""
    pod = _label(labels, "pod")
    if _label(labels, "namespace") != namespace or not pod.startswith(_POD_PREFIX):
        return None
    candidate = pod[len(_POD_PREFIX) :]
    try:
        canonical = str(uuid.UUID(candidate))
    except ValueError:
        return None
    return canonical if canonical == candidate else None


def _usable(value: float) -> float | None:
    return value if math.isfinite(value) and value >= 0 else None


def _percent(value: float | None) -> float | None:
    return None if value is None else min(value, 100.0)


def _mib(value: float | None) -> int | None:
    # A sum of absurd readings may overflow to infinity.
    if value is None or not value <= MAX_VRAM_MIB:
        return None
    return round(value)


def _max(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)


def _min(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def _sum(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else a + b


@dataclass
class _Reading:
    utilization: float | None = None
    memory: float | None = None
    last_kernel: float | None = None
    has_last_kernel: bool = False


def parse_hami(
    text: str,
    namespace: str,
    *,
    cards: Mapping[str, Sequence[str]] | None = None,
    whole_card: Collection[str] = (),
) -> list[Sample]:
    """Samples from HAMi's vGPU monitor text, one per session seen, and one for each session
    that `cards` places on a card the text shows but that has no series (it has not used its
    GPU yet). A monitor shows the cards of its own node only, so a session on a card the text
    does not show is left out, not taken for idle. `whole_card`: sessions whose cores HAMi
    does not limit. Several containers or devices of one session: the highest utilization, the
    memory summed, the latest kernel."""
    readings: dict[str, _Reading] = {}
    shown: set[str] = set()
    for point in _points(text, "hami_", "HAMi"):
        shown.add(point.labels.get("device_uuid", ""))
        if point.name not in HAMI_CONTAINER_SERIES:
            continue
        session_id = _session_of(point.labels, namespace)
        if session_id is None:
            continue
        reading = readings.setdefault(session_id, _Reading())
        value = _usable(point.value)
        if point.name == HAMI_UTILIZATION:
            reading.utilization = _max(reading.utilization, _percent(value))
        elif point.name == HAMI_MEMORY_USED:
            reading.memory = _sum(reading.memory, value)
        elif point.name == HAMI_LAST_KERNEL:
            reading.has_last_kernel = True
            seconds = None if value is None else min(value, MAX_KERNEL_SECONDS)
            reading.last_kernel = _min(reading.last_kernel, seconds)
    samples = []
    for session_id, r in readings.items():
        whole = session_id in whole_card
        samples.append(
            Sample(
                session_id=session_id,
                gpu_util_percent=None if whole else r.utilization,
                vram_used_mib=_mib(None if r.memory is None else r.memory / MIB),
                last_kernel_seconds=r.last_kernel,
                # A whole card's only sign of use is its last kernel.
                has_series=r.has_last_kernel if whole else True,
            )
        )
    unseen = {
        session_id
        for card, sessions in (cards or {}).items()
        if card in shown
        for session_id in sessions
        if session_id not in readings
    }
    samples.extend(Sample(s, None, None, None, has_series=False) for s in unseen)
    return _capped(samples)


# (session or card, (card, MIG instance)) -> metric -> value: one value per device and metric,
# however many times other labels repeat it.
_Devices = dict[tuple[str, tuple[str, str]], dict[str, float]]


def parse_dcgm(text: str, namespace: str, cards: Mapping[str, Sequence[str]]) -> list[Sample]:
    """Samples from the DCGM exporter's text, one per session seen.

    A series labelled with a pod counts for that pod's session only. A series without one is
    the card's (or its MIG instance's), and counts for every session `cards` places on that
    card: a busy card keeps all of them from looking idle. A session found by its pod is not
    also counted by its card. Several devices of one session: the highest utilization, the
    memory summed."""
    by_pod: _Devices = {}
    by_card: _Devices = {}
    for point in _points(text, "DCGM_FI_", "DCGM"):
        if point.name not in DCGM_SERIES:
            continue
        device = (point.labels.get("UUID", ""), point.labels.get("GPU_I_ID", ""))
        if _label(point.labels, "pod"):
            session_id = _session_of(point.labels, namespace)
            if session_id is not None:
                by_pod.setdefault((session_id, device), {})[point.name] = point.value
        elif device[0]:
            by_card.setdefault((device[0], device), {})[point.name] = point.value
    readings = _dcgm_readings(by_pod)
    found_by_pod = set(readings)
    for card, reading in _dcgm_readings(by_card).items():
        for session_id in cards.get(card, ()):
            if session_id in found_by_pod:
                continue
            known = readings.setdefault(session_id, _Reading())
            known.utilization = _max(known.utilization, reading.utilization)
            known.memory = _sum(known.memory, reading.memory)
    return _capped([Sample(s, r.utilization, _mib(r.memory), None) for s, r in readings.items()])


def _dcgm_readings(devices: _Devices) -> dict[str, _Reading]:
    readings: dict[str, _Reading] = {}
    for (owner, _), values in devices.items():
        if DCGM_UTILIZATION in values:
            utilization = _percent(_usable(values[DCGM_UTILIZATION]))
        else:  # a MIG instance
            engine = _usable(values.get(DCGM_ENGINE_ACTIVE, math.nan))
            utilization = None if engine is None else _percent(engine * 100)
        reading = readings.setdefault(owner, _Reading())
        reading.utilization = _max(reading.utilization, utilization)
        reading.memory = _sum(reading.memory, _usable(values.get(DCGM_MEMORY_USED, math.nan)))
    return readings


def _capped(samples: list[Sample]) -> list[Sample]:
    return sorted(samples, key=lambda s: s.session_id)[:MAX_SAMPLES]


def utilization_body(
    source: Source, samples: Sequence[Sample], readable: bool, error: str, sequence: int
) -> dict[str, Any]:
    """The utilization report the API takes."""
    return {
        "sequence": sequence,
        "source": source,
        "readable": readable,
        "error": error.replace("\0", "")[:MAX_ERROR_CHARS],  # the API stores no NUL
        "samples": [
            {
                "session_id": s.session_id,
                "gpu_util_percent": s.gpu_util_percent,
                "vram_used_mib": s.vram_used_mib,
                "last_kernel_seconds": s.last_kernel_seconds,
                "has_series": s.has_series,
            }
            for s in samples[:MAX_SAMPLES]
        ],
    }
