"""Cross-domain hooks: the one way a lower domain lets higher ones take part in its work.

A domain that must ask others (may this organization be deleted? may this cluster be removed?)
owns a `Guard` or a `Hook` and calls it; a higher domain's handler is connected to it by
`worker/hooks.py`'s `connect_hooks()`, which the app and the worker both call, so imports only
ever go down. Handlers run in the caller's transaction
and take the database handle first, then the hook's own arguments.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Concatenate, Generic, ParamSpec, TypeVar

from gshare.kit.errors import GShareError

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

P = ParamSpec("P")
R = TypeVar("R")


class Hook(Generic[P, R]):
    """Handlers other domains connect; `results` calls each in the order connected."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._handlers: list[Callable[Concatenate[AsyncSession, P], Awaitable[R]]] = []

    def connect(self, handler: Callable[Concatenate[AsyncSession, P], Awaitable[R]]) -> None:
        # Idempotent: every app built in one process connects the same handlers again.
        if handler not in self._handlers:
            self._handlers.append(handler)

    def disconnect(self, handler: Callable[Concatenate[AsyncSession, P], Awaitable[R]]) -> None:
        if handler in self._handlers:
            self._handlers.remove(handler)

    @property
    def connected(self) -> bool:
        return bool(self._handlers)

    async def results(self, db: AsyncSession, *args: P.args, **kwargs: P.kwargs) -> list[R]:
        return [await handler(db, *args, **kwargs) for handler in self._handlers]


class Guard(Hook[P, GShareError | None]):
    """A hook whose handlers may refuse: each returns the error that says why, or None."""

    async def check(self, db: AsyncSession, *args: P.args, **kwargs: P.kwargs) -> None:
        """Raise the first refusal; handlers after it do not run."""
        for handler in self._handlers:
            refusal = await handler(db, *args, **kwargs)
            if refusal is not None:
                raise refusal
