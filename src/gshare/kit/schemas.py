"""Base models for the API: requests reject unknown fields; every list is a Page."""

from __future__ import annotations

import unicodedata
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, GetJsonSchemaHandler, field_validator
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from gshare.kit.datetimes import EARLIEST, LATEST, utc_instant


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, list | tuple | set):
        return any(_has_nul(v) for v in value)
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    return False


class RequestModel(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        # PostgreSQL text cannot hold NUL, and no field has a use for it.
        if _has_nul(value):
            raise ValueError("must not contain NUL characters")
        return value


# For free-text query parameters, which are not models: Query(pattern=NO_NUL).
NO_NUL = r"^[^\x00]*$"

# Marks every datetime input in the spec, so a test can find one that skips UtcDatetime.
UTC_DATETIME_MARK = "x-gshare-datetime"


class _Documented:
    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        schema[UTC_DATETIME_MARK] = (
            f"with a time zone; read as UTC; from {EARLIEST.isoformat()} to {LATEST.isoformat()}"
        )
        return schema


# The one datetime input type, for request fields and query parameters alike: an instant
# that cannot be stored and read back is a 422, never a 500 deeper down.
UtcDatetime = Annotated[datetime, AfterValidator(utc_instant), _Documented]


class ResponseModel(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class FieldError(BaseModel):
    """One refused field of a request body: its path (`cpu_millicores`, `members.0.email`) and
    what is wrong with it, in words for the person who typed it."""

    field: str
    message: str


class ErrorDetail(BaseModel):
    code: str
    message: str
    # With `invalid_request`: each refused body field, so that a form can say it on the field.
    fields: list[FieldError] | None = None


class ErrorBody(BaseModel):
    error: ErrorDetail


def _printable(value: str) -> str:
    """A name shown to people: no control or invisible formatting characters (line breaks,
    terminal escapes, right-to-left overrides, zero-width marks)."""
    if any(unicodedata.category(ch) in ("Cc", "Cf") for ch in value):
        raise ValueError("cannot hold control or invisible formatting characters")
    return value


Printable = AfterValidator(_printable)
