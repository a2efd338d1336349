"""How a benchmark ends: a missed goal fails the run, except in a quick run, which only proves
that the measured path still works."""

from __future__ import annotations

import sys


def check_goal(met: bool, goal: str, *, quick: bool) -> None:
    if quick:
        print(f"quick run: goal not checked ({goal})")
    elif not met:
        print(f"goal missed: {goal}", file=sys.stderr)
        raise SystemExit(1)
    else:
        print(f"goal met: {goal}")
