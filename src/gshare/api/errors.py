"""One error handler family: every error leaves as {"error": {"code", "message"}}, never a trace."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException

from gshare.api.middleware import RETRY_HEADER, SECURITY_HEADERS
from gshare.kit import metrics
from gshare.kit.db import RETRYABLE_SQLSTATES, Busy, DatabaseDown, sqlstate, unreachable
from gshare.kit.errors import GShareError

log = logging.getLogger(__name__)

_HTTP_CODES = {
    400: "bad_request",
    401: "not_authenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


def error_response(
    status: int,
    code: str,
    message: str,
    headers: dict[str, str] | None = None,
    *,
    fields: list[dict[str, str]] | None = None,
) -> JSONResponse:
    body: dict[str, Any] = {"code": code, "message": message}
    if fields:
        body["fields"] = fields
    return JSONResponse({"error": body}, status_code=status, headers=headers)


def _plain(error: Mapping[str, Any]) -> str:
    """Pydantic's message in words for a person: without its "Value error, " prefix, which
    only says that one of our validators refused the value."""
    if error.get("type") == "extra_forbidden":
        return "unknown field"
    msg = str(error.get("msg", "invalid"))
    return msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")


# A refused field's path and message are echoed to the sender; a key of their own choosing
# (an unknown field) is cut so that a huge one is not sent back twice.
_MAX_PATH = 200
_MAX_PARTS = 5
_MAX_FIELDS = 50


def _cut(text: str) -> str:
    return text if len(text) <= _MAX_PATH else text[:_MAX_PATH] + "…"


def _describe(exc: RequestValidationError) -> tuple[str, list[dict[str, str]]]:
    """The one-line message (the first five problems) and each refused body field."""
    parts: list[str] = []
    fields: list[dict[str, str]] = []
    for error in exc.errors():
        if len(parts) >= _MAX_PARTS and len(fields) >= _MAX_FIELDS:
            break
        where = tuple(error.get("loc", ()))
        loc = _cut(".".join(str(p) for p in where if p != "body"))
        if error.get("type") == "json_invalid":
            # FastAPI puts the character position where a field name would stand.
            parts.append(f"The body is not valid JSON (from character {loc or '0'}).")
            continue
        msg = _cut(_plain(error))
        parts.append(f"{loc}: {msg}" if loc else msg)
        if where[:1] == ("body",) and loc:
            fields.append({"field": loc, "message": msg})
    return "; ".join(parts[:_MAX_PARTS]) or "The request is not valid.", fields[:_MAX_FIELDS]


def install(app: FastAPI) -> None:
    @app.exception_handler(GShareError)
    async def _gshare(request: Request, exc: GShareError) -> JSONResponse:
        # body(): an error may add its own fields beside code and message.
        return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        message, fields = _describe(exc)
        return error_response(422, "invalid_request", message, fields=fields)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(exc.status_code, "error")
        message = exc.detail if isinstance(exc.detail, str) else "Request failed."
        return error_response(exc.status_code, code, message, getattr(exc, "headers", None))

    @app.exception_handler(DBAPIError)
    async def _database(request: Request, exc: DBAPIError) -> JSONResponse:
        state = sqlstate(exc)
        if state in RETRYABLE_SQLSTATES:
            # RetryConflicts runs the request again on this mark; the last try's answer is sent.
            metrics.DATABASE_RETRIES.labels("request", state).inc()
            busy = Busy()
            headers = {"Retry-After": "1", RETRY_HEADER.decode(): "1"}
            return error_response(busy.status, busy.code, busy.message, headers)
        if unreachable(exc):
            log.warning("database unreachable on %s %s: %s", request.method, request.url.path, exc)
            down = DatabaseDown()
            return error_response(down.status, down.code, down.message, {"Retry-After": "2"})
        log.exception("database error on %s %s", request.method, request.url.path)
        return error_response(500, "internal_error", "Something went wrong on our side.")

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        # Starlette answers this outside the middleware stack, so the headers are added here.
        headers = {k.decode(): v.decode() for k, v in SECURITY_HEADERS}
        headers["Cache-Control"] = "no-store"
        if unreachable(exc):  # the server's socket went away while a connection was opened
            log.warning("database unreachable on %s %s: %s", request.method, request.url.path, exc)
            down = DatabaseDown()
            headers["Retry-After"] = "2"
            return error_response(down.status, down.code, down.message, headers)
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(500, "internal_error", "Something went wrong on our side.", headers)
