"""Waiting in tests for a condition to hold, with a deadline, instead of a fixed sleep."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

T = TypeVar("T")


@overload
async def eventually(
    check: Callable[[], Awaitable[T]], what: str, *, timeout: float = ..., interval: float = ...
) -> T: ...
@overload
async def eventually(
    check: Callable[[], T], what: str, *, timeout: float = ..., interval: float = ...
) -> T: ...
async def eventually(
    check: Callable[[], Any],
    what: str,
    *,
    timeout: float = 20,
    interval: float = 0.1,
) -> T:
    """Calls `check` (a function or a coroutine function) until it returns something truthy and
    returns that; fails naming `what` once `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        found: Any = check()
        if inspect.isawaitable(found):
            found = await found
        if found:
            return found  # type: ignore[no-any-return]
        if time.monotonic() >= deadline:
            raise _timed_out(what, timeout, found)
        await asyncio.sleep(interval)


def eventually_sync(
    check: Callable[[], T], what: str, *, timeout: float = 20, interval: float = 0.1
) -> T:
    """`eventually` for tests that are not coroutines: blocks between calls."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() >= deadline:
            raise _timed_out(what, timeout, found)
        time.sleep(interval)


def _timed_out(what: str, timeout: float, last: object) -> AssertionError:
    return AssertionError(
        f"timed out after {timeout:g} s waiting for {what} (last seen: {last!r:.300})"
    )
