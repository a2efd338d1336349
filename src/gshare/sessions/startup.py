"""A session's start-up steps as the API keeps them from the operator's reports. Pure.

The operator reads the steps of the current start from its pod and the pod's events
(operator/startup.py) and sends them with every status report. Kubernetes forgets events after
an hour and an operator may restart, so the API merges what it is told into what it has rather
than replacing it:

- a progress step (`STEPS`) appears once, at the earliest time reported for it;
- a warning appears once per reason, as its latest report says it, with the highest count;
- at most MAX_STEPS entries: every progress step, then the most recent warnings.

Merging is idempotent, commutative and associative, so a replayed or reordered report, or the
same steps reported twice, leave what is kept unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Literal, get_args

StepName = Literal["allocated", "scheduled", "pulling", "pulled", "started", "ready", "warning"]
STEP_NAMES: tuple[StepName, ...] = get_args(StepName)
STEPS = STEP_NAMES[:-1]  # the progress steps, in the order a start goes through them
WARNING: StepName = "warning"
MAX_STEPS = 20
MAX_MESSAGE = 300
MAX_REASON = 64


@dataclass(frozen=True)
class Step:
    step: StepName
    at: datetime
    reason: str = ""
    message: str = ""
    image_size_bytes: int | None = None
    count: int = 1

    def key(self) -> str:
        return f"warning:{self.reason}" if self.step == WARNING else self.step


def _order(step: Step) -> tuple[datetime, int, str]:
    return step.at, STEP_NAMES.index(step.step), step.reason


def _biggest(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def _combined(a: Step, b: Step) -> Step:
    """Two reports of the same step or warning, as one: a progress step's earliest report, a
    warning's latest (ties broken by the words, so that the order never matters)."""
    if a.step == WARNING:
        chosen = max(a, b, key=lambda s: (s.at, s.message))
    else:
        chosen = min(a, b, key=lambda s: (s.at, s.reason, s.message))
    return replace(
        chosen,
        image_size_bytes=_biggest(a.image_size_bytes, b.image_size_bytes),
        count=max(a.count, b.count),
    )


def merged(stored: Iterable[Step], reported: Iterable[Step]) -> list[Step]:
    """What is kept after `reported` arrives on top of `stored`, in the order they happened."""
    kept: dict[str, Step] = {}
    for step in (*stored, *reported):
        found = kept.get(step.key())
        kept[step.key()] = step if found is None else _combined(found, step)
    progress = [s for s in kept.values() if s.step != WARNING]
    warnings = sorted((s for s in kept.values() if s.step == WARNING), key=_order)
    room = MAX_STEPS - len(progress)
    return sorted(progress + (warnings[-room:] if room > 0 else []), key=_order)


def sane(
    steps: Iterable[Step], *, now: datetime, not_before: datetime, skew: timedelta
) -> list[Step]:
    """The steps whose times can be true: none from before the start was asked for, none
    from the future (either, give or take the clocks' `skew`)."""
    return [s for s in steps if not_before - skew <= s.at <= now + skew]


def to_json(steps: Sequence[Step]) -> list[dict[str, Any]]:
    return [
        {
            "step": s.step,
            "at": s.at.isoformat(),
            "reason": s.reason,
            "message": s.message,
            "image_size_bytes": s.image_size_bytes,
            "count": s.count,
        }
        for s in steps
    ]


def from_json(rows: Any) -> list[Step]:
    """What `to_json` stored; anything else in the column is skipped rather than trusted."""
    out = []
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, Mapping) or row.get("step") not in STEP_NAMES:
            continue
        try:
            at = datetime.fromisoformat(str(row["at"]))
        except (KeyError, ValueError):
            continue
        if at.tzinfo is None:
            continue
        size, count = row.get("image_size_bytes"), row.get("count")
        out.append(
            Step(
                step=row["step"],
                at=at,
                reason=str(row.get("reason") or "")[:MAX_REASON],
                message=str(row.get("message") or "")[:MAX_MESSAGE],
                image_size_bytes=size if type(size) is int else None,
                count=count if type(count) is int and count >= 1 else 1,
            )
        )
    return out
