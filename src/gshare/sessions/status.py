"""Which status reports from an operator count. Pure.

A report describes the resource at some generation (the spec version the operator had acted on)
and carries a sequence that grows with every report the operator sends. The API keeps the newest
report only: an older generation, or the same generation with a sequence not above the stored
one, is a replay or arrived out of order, and changes nothing.
"""

from __future__ import annotations

from typing import Literal

Phase = Literal["Pending", "Running", "Paused", "Failed"]
PHASES: tuple[Phase, ...] = ("Pending", "Running", "Paused", "Failed")


def is_newer(
    *, stored_generation: int, stored_sequence: int, generation: int, sequence: int
) -> bool:
    if generation != stored_generation:
        return generation > stored_generation
    return sequence > stored_sequence
