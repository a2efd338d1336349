"""HTTP building blocks for every domain's endpoints: transaction, clock, route declarations."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from enum import StrEnum
from http import HTTPStatus
from typing import Annotated, Any

from fastapi import Depends, Query, Request
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.kit.clock import Clock
from gshare.kit.errors import GShareError
from gshare.kit.schemas import NO_NUL, ErrorBody
from gshare.kit.settings import Settings

PERMISSION_KEY = "x-gshare-permission"


async def db_session(request: Request) -> AsyncIterator[AsyncSession]:
    """The request's one transaction: committed when the endpoint succeeds, else rolled back.

    A GShareError may carry durable writes (a denial to audit, a failed sign-in to count);
    they are committed in a fresh transaction after the rollback.
    """
    sessions = sessions_of(request)
    async with sessions() as db:
        try:
            yield db
            await db.commit()
        except GShareError as exc:
            try:
                await db.rollback()
                if exc.durable:
                    async with sessions() as side, side.begin():
                        for write in exc.durable:
                            await write(side)
            finally:
                for hook in exc.then:
                    hook()
            raise
        except BaseException:
            await db.rollback()
            raise


def sessions_of(request: Request) -> async_sessionmaker[AsyncSession]:
    sessions: async_sessionmaker[AsyncSession] = request.app.state.sessions
    return sessions


# Dependencies are coroutines: FastAPI would run plain functions in a worker thread.
async def request_now(request: Request) -> datetime:
    clock: Clock = request.app.state.clock
    return clock.now()


def settings_of(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def app_settings(request: Request) -> Settings:
    return settings_of(request)


def client_of(request: Request) -> str:
    """The caller's address, as the app's ClientAddress middleware derived it: a canonical IP
    address (from X-Forwarded-For only behind a trusted proxy) or "unknown", never raw text."""
    return request.client.host if request.client else "unknown"


# "function" scope: commit before the response is sent, so a client that has its answer always
# finds the change, and a failed commit is the answer rather than a lost success.
DbSession = Annotated[AsyncSession, Depends(db_session, scope="function")]
Now = Annotated[datetime, Depends(request_now)]
AppSettings = Annotated[Settings, Depends(app_settings)]


def declare(action: StrEnum, *errors: int) -> dict[str, Any]:
    """Route keyword arguments that declare the route's permission and its error responses.

    Signed-in routes always list 401 and 403; every route lists 422; the app adds 413 to
    routes with a body and 429 where declared.
    """
    statuses = set(errors) | {422}
    if action.value != "public":
        statuses |= {401, 403}
    return {
        "openapi_extra": {PERMISSION_KEY: action.value},
        "responses": {
            status: {"model": ErrorBody, "description": HTTPStatus(status).phrase}
            for status in sorted(statuses)
        },
    }


# A page's cursor, as `encode_cursor` wrote it; one it cannot read is 400 `invalid_cursor`.
Cursor = Annotated[
    str | None,
    Query(max_length=512, pattern=NO_NUL, description="The `next_cursor` of the page before."),
]
