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

Also from DCGM, each card's error fields, and whether they show new trouble since the last look:
a fatal XID, double-bit ECC errors, a failed row remap (`new_card_trouble`).
"""

from __future__ import annotations

import math
import unicodedata
import uuid
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
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


# ---- card errors ---------------------------------------------------------------------------

DCGM_XID = "DCGM_FI_DEV_XID_ERRORS"  # gauge: the last XID the card raised, 0 for none
DCGM_ECC_DBE = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"  # counter: double-bit ECC errors since a reset
DCGM_ROW_REMAP_FAILURE = "DCGM_FI_DEV_ROW_REMAP_FAILURE"  # gauge: 1 once a row remap failed
DCGM_ERROR_SERIES = (DCGM_XID, DCGM_ECC_DBE, DCGM_ROW_REMAP_FAILURE)

TroubleKind = Literal["xid", "ecc_dbe", "row_remap"]
MAX_CARD_ERRORS = 1000  # what the API takes in one report
MAX_CARD_UUID_CHARS = 128
MAX_DETAIL_CHARS = 500
MAX_REMEMBERED_CARDS = 10_000
MAX_XID = 2**31 - 1

# The XIDs after which a card should take no work until it is reset or repaired, and what each
# means. From NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html)
# and its page retirement and row remapping guides: each of these asks for a GPU reset, a node
# reboot or a repair. 63 is a successful row remap, but the spare row is used only after a reset;
# 92 and 94 are errors the card survived, and a sign its memory is failing.
FATAL_XIDS: Mapping[int, str] = MappingProxyType(
    {
        48: "a double-bit ECC error",
        63: "a memory row was remapped and the card needs a reset",
        64: "a memory row could not be remapped",
        74: "an NVLink error",
        79: "the GPU has fallen off the bus",
        92: "a high single-bit ECC error rate",
        94: "a contained ECC error",
        95: "an uncontained ECC error",
        119: "the GPU System Processor (GSP) timed out",
        120: "the GPU System Processor (GSP) failed",
    }
)


def trouble_reason(kind: TroubleKind, xid: int | None) -> str:
    """What a card's trouble means, in words for admins and the owners of its sessions."""
    if kind == "ecc_dbe":
        return "double-bit ECC errors: the card's memory returned data it could not correct"
    if kind == "row_remap":
        return "a row remap failed: the card's memory cannot repair itself"
    return f"XID {xid}: {FATAL_XIDS.get(xid or 0, 'a fatal hardware error')}"


@dataclass(frozen=True)
class CardErrors:
    """What the exporter shows of one card's error fields; None: no usable series of it."""

    card_uuid: str
    node: str = ""
    xid: int | None = None
    dbe_total: float | None = None
    row_remap_failed: bool | None = None


@dataclass(frozen=True)
class CardSeen:
    """What was last seen of a card's error fields: trouble is reported when they change."""

    xid: int = 0
    dbe_total: float = 0.0
    row_remap_failed: bool = False


@dataclass(frozen=True)
class CardTrouble:
    card_uuid: str
    kind: TroubleKind
    xid: int | None
    detail: str
    # Already showing when the operator first saw the card (it may have been handled before
    # the operator restarted): the API drains for it only if it did not already for the same.
    standing: bool = False


def _plain(value: str, limit: int) -> str:
    """Text from the exporter's labels as the API takes it: no control or invisible formatting
    characters (nor NUL), bounded."""
    return "".join(ch for ch in value if unicodedata.category(ch) not in ("Cc", "Cf"))[:limit]


def _card_uuid(labels: Mapping[str, str]) -> str | None:
    card = labels.get("UUID", "")
    if not card or len(card) > MAX_CARD_UUID_CHARS or _plain(card, MAX_CARD_UUID_CHARS) != card:
        return None  # names no card the API could know
    return card


def _xid(value: float) -> int | None:
    if not math.isfinite(value) or value != int(value) or not 0 <= value <= MAX_XID:
        return None
    return int(value)


def parse_card_errors(text: str) -> dict[str, CardErrors]:
    """Each card's error fields from the DCGM exporter's text, by card UUID. A card's field
    repeated over several series (one per pod or MIG instance, with the Kubernetes mapping on)
    counts once, at its highest. Text without any of these fields shows no card."""
    if not any(name in text for name in DCGM_ERROR_SERIES):
        return {}  # an exporter that does not serve them; spares parsing megabytes again
    fields: dict[str, dict[str, float]] = {}
    nodes: dict[str, str] = {}
    for point in _points(text, "DCGM_FI_", "DCGM"):
        # The parser names a counter's samples with `_total` added, whatever the text says.
        name = point.name if point.name in DCGM_ERROR_SERIES else point.name.removesuffix("_total")
        if name not in DCGM_ERROR_SERIES:
            continue
        card = _card_uuid(point.labels)
        value = _usable(point.value)
        if card is None or value is None:
            continue
        known = fields.setdefault(card, {})
        known[name] = max(known.get(name, value), value)
        labels = point.labels
        node = labels.get("Hostname") or labels.get("hostname") or labels.get("node") or ""
        nodes.setdefault(card, _plain(node, 253))
    found = {}
    for card, values in fields.items():
        xid = values.get(DCGM_XID)
        remap = values.get(DCGM_ROW_REMAP_FAILURE)
        found[card] = CardErrors(
            card_uuid=card,
            node=nodes.get(card, ""),
            xid=None if xid is None else _xid(xid),
            dbe_total=values.get(DCGM_ECC_DBE),
            row_remap_failed=None if remap is None else remap >= 1,
        )
    return found


def new_card_trouble(
    cards: Mapping[str, CardErrors], seen: Mapping[str, CardSeen]
) -> tuple[list[CardTrouble], dict[str, CardSeen]]:
    """The trouble `cards` show that `seen` (what was last seen of each card) did not, and what
    is seen now.

    Fatal: an XID of `FATAL_XIDS` other than the last one seen (the gauge holds the last XID,
    so one that stays is one event), a double-bit ECC count above the last one (a lower count
    is a reset: the new baseline), a row remap failure not seen before. A card seen for the
    first time is compared with a clean card, so trouble from before the operator started is
    reported too, marked `standing` (the API drains a card once for the same trouble, however
    often it is told, and not again for standing trouble it drained for before). A card the text no
    longer shows is remembered as it was: a card that fell off the bus may vanish for a while.
    At most `MAX_CARD_ERRORS` cards are reported at once; the others keep what was seen of
    them, so they are reported next time."""
    trouble: list[CardTrouble] = []
    now_seen = dict(seen)
    for card in sorted(cards):
        shown, before = cards[card], seen.get(card, CardSeen())
        standing = card not in seen
        on = f" on node {shown.node}" if shown.node else ""
        found: list[CardTrouble] = []
        xid = before.xid if shown.xid is None else shown.xid
        if xid != before.xid and xid in FATAL_XIDS:
            detail = f"{DCGM_XID} is {xid} (was {before.xid}){on}"
            found.append(CardTrouble(card, "xid", xid, detail[:MAX_DETAIL_CHARS], standing))
        dbe = before.dbe_total if shown.dbe_total is None else shown.dbe_total
        if dbe > before.dbe_total:
            detail = f"{DCGM_ECC_DBE} rose from {before.dbe_total:g} to {dbe:g}{on}"
            found.append(CardTrouble(card, "ecc_dbe", None, detail[:MAX_DETAIL_CHARS], standing))
        failed = shown.row_remap_failed
        if failed is None:
            failed = before.row_remap_failed
        if failed and not before.row_remap_failed:
            detail = f"{DCGM_ROW_REMAP_FAILURE} is 1{on}"
            found.append(CardTrouble(card, "row_remap", None, detail[:MAX_DETAIL_CHARS], standing))
        if found and len(trouble) + len(found) > MAX_CARD_ERRORS:
            continue
        trouble.extend(found)
        now_seen[card] = CardSeen(xid=xid, dbe_total=dbe, row_remap_failed=failed)
    if len(now_seen) > MAX_REMEMBERED_CARDS:
        now_seen = {card: now_seen[card] for card in cards if card in now_seen}
    return trouble, now_seen


def card_errors_body(trouble: Sequence[CardTrouble]) -> dict[str, Any]:
    """The card errors report the API takes."""
    return {
        "items": [
            {
                "card_uuid": t.card_uuid,
                "xid": t.xid,
                "kind": t.kind,
                "detail": _plain(t.detail, MAX_DETAIL_CHARS),
                "standing": t.standing,
            }
            for t in trouble[:MAX_CARD_ERRORS]
        ]
    }
