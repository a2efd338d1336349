"""connect_hooks: every hook defined anywhere in gshare gets its handlers, exactly once."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from typing import Any

import pytest

import gshare
from gshare.kit.hooks import Hook
from gshare.worker.hooks import connect_hooks

AnyHook = Hook[Any, Any]


def _all_hooks() -> list[AnyHook]:
    """Every Hook (and Guard) bound at module level in gshare, each once."""
    found: dict[int, AnyHook] = {}
    for info in pkgutil.walk_packages(gshare.__path__, "gshare."):
        # Entry points run when imported; migrations need Alembic's context.
        if info.name.endswith("__main__") or info.name.startswith("gshare.migrations"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, Hook):
                found.setdefault(id(value), value)
    return list(found.values())


@pytest.fixture
def bare_hooks() -> Iterator[list[AnyHook]]:
    """Every hook with no handler, as in a fresh process; put back as found afterwards."""
    hooks = _all_hooks()
    saved = {id(h): list(h._handlers) for h in hooks}
    for hook in hooks:
        hook._handlers.clear()
    try:
        yield hooks
    finally:
        for hook in hooks:
            hook._handlers[:] = saved[id(hook)]


def test_every_hook_in_gshare_is_connected(bare_hooks: list[AnyHook]) -> None:
    # The scan must find the hooks there are, or an empty list would pass.
    assert len(bare_hooks) >= 10
    assert not any(h.connected for h in bare_hooks)
    connect_hooks()
    assert [h.name for h in bare_hooks if not h.connected] == []


def test_connecting_twice_connects_each_handler_once(bare_hooks: list[AnyHook]) -> None:
    connect_hooks()
    once = {h.name: list(h._handlers) for h in bare_hooks}
    connect_hooks()
    assert {h.name: list(h._handlers) for h in bare_hooks} == once
