"""The one error family: every failure a client may see is a GShareError with a code and status."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

# Written in a fresh transaction after the failed request's transaction is rolled back,
# so that denials and failed sign-ins are recorded even though the request failed.
DurableWrite = Callable[["AsyncSession"], Awaitable[None]]


class GShareError(Exception):
    status: int = 400
    code: str = "bad_request"
    message: str = "The request could not be processed."

    def __init__(
        self,
        message: str | None = None,
        *,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        durable: list[DurableWrite] | None = None,
        then: list[Callable[[], None]] | None = None,
    ) -> None:
        self.message = message or type(self).message
        self.code = code or type(self).code
        self.headers = headers or {}
        self.durable: list[DurableWrite] = list(durable or [])
        # Called once the durable writes are committed (or have failed).
        self.then: list[Callable[[], None]] = list(then or [])
        super().__init__(self.message)

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message}}


class BadRequest(GShareError):
    status = 400
    code = "bad_request"


class NotAuthenticated(GShareError):
    status = 401
    code = "not_authenticated"
    message = "Sign in first."


class Forbidden(GShareError):
    status = 403
    code = "forbidden"
    message = "You are not allowed to do this."


class NotFound(GShareError):
    status = 404
    code = "not_found"
    message = "Not found."


class Conflict(GShareError):
    status = 409
    code = "conflict"
    message = "The request conflicts with the current state."


class PayloadTooLarge(GShareError):
    status = 413
    code = "payload_too_large"
    message = "The request body is larger than 1 MiB."


class Unprocessable(GShareError):
    status = 422
    code = "invalid_request"
    message = "The request is not valid."


class TooManyRequests(GShareError):
    status = 429
    code = "too_many_requests"
    message = "Too many requests; try again later."

    def __init__(self, message: str | None = None, *, retry_after: int, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.headers["Retry-After"] = str(max(1, retry_after))


class ServiceUnavailable(GShareError):
    status = 503
    code = "unavailable"
    message = "The service is not ready."
