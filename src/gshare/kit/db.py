"""The database engine, sessions, model base and the transaction helpers the edges use."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from sqlalchemy import MetaData
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import DeclarativeBase

from gshare.kit import metrics
from gshare.kit.errors import GShareError

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


def async_url(url: str) -> str:
    """Normalise a PostgreSQL URL to the asyncpg dialect."""
    for prefix in ("postgresql+asyncpg://", "postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+asyncpg://" + url[len(prefix) :]
    raise ValueError(f"not a PostgreSQL URL: {url}")


def plain_url(url: str) -> str:
    """The same URL for drivers that take plain postgresql:// (asyncpg itself)."""
    return "postgresql://" + async_url(url)[len("postgresql+asyncpg://") :]


def make_engine(url: str, *, pool_size: int = 10) -> AsyncEngine:
    return create_async_engine(
        async_url(url), pool_size=pool_size, max_overflow=10, pool_pre_ping=False
    )


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False, autoflush=False)


RETRYABLE_SQLSTATES = {"40001", "40P01"}  # serialization failure, deadlock detected
T = TypeVar("T")


def sqlstate(exc: BaseException) -> str | None:
    orig: Any = getattr(exc, "orig", None)
    return getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)


class Busy(GShareError):
    status = 503
    code = "busy"
    message = "The database was too busy to complete this change; try again."


class DatabaseDown(GShareError):
    status = 503
    code = "database_down"
    message = "The database is not reachable just now; try again in a moment."


# Connection exceptions (class 08), and a server shutting down or starting up (57P01-57P03).
_UNREACHABLE_SQLSTATES = {"57P01", "57P02", "57P03"}


def unreachable(exc: BaseException) -> bool:
    """Whether a database error says the server went away or cannot be reached yet, rather
    than that the statement was wrong: what a restart or failover of PostgreSQL looks like."""
    if isinstance(exc, OSError):
        return _raised_connecting(exc)
    if getattr(exc, "connection_invalidated", False):
        return True
    state = sqlstate(exc) or ""
    if state.startswith("08") or state in _UNREACHABLE_SQLSTATES:
        return True
    orig = getattr(exc, "orig", None)
    cause = getattr(orig, "__cause__", None)
    return any(isinstance(e, (OSError, ConnectionError)) for e in (orig, cause))


def _raised_connecting(exc: OSError) -> bool:
    """A socket error raised while asyncpg opened a connection (the server's socket is gone or
    refuses): SQLAlchemy passes those on unwrapped. Any other OSError is not the database's."""
    frame = exc.__traceback__
    while frame is not None:
        if str(frame.tb_frame.f_globals.get("__name__", "")).startswith("asyncpg"):
            return True
        frame = frame.tb_next
    return False


async def run_in_transaction(
    sessions: async_sessionmaker[AsyncSession],
    work: Callable[[AsyncSession], Awaitable[T]],
    *,
    attempts: int = 5,
) -> T:
    """Run `work` in one transaction, retrying serialization failures and deadlocks."""
    for attempt in range(1, attempts + 1):
        async with sessions() as db:
            try:
                result = await work(db)
                await db.commit()
                return result
            except DBAPIError as exc:
                await db.rollback()
                state = sqlstate(exc)
                if state not in RETRYABLE_SQLSTATES:
                    raise
                metrics.DATABASE_RETRIES.labels("task", state).inc()
                if attempt == attempts:
                    raise Busy() from exc
                await asyncio.sleep(0.01 * 2**attempt)
    raise AssertionError("unreachable")


@asynccontextmanager
async def transaction(sessions: async_sessionmaker[AsyncSession]) -> AsyncIterator[AsyncSession]:
    async with sessions() as db, db.begin():
        yield db
