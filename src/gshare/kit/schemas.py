"""Base models for the API: requests reject unknown fields and take JSON's own types; every list
is a Page."""

from __future__ import annotations

import unicodedata
from datetime import datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    field_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticKnownError, core_schema

from gshare.kit.datetimes import EARLIEST, LATEST, utc_instant


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, list | tuple | set):
        return any(_has_nul(v) for v in value)
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    return False


def _integral(value: Any) -> Any:
    # JSON's 2.0 is the integer 2 (as JSON Schema has it); "2" and true are not integers.
    if isinstance(value, str | bool):
        raise PydanticKnownError("int_type")
    return value


def _tighten_for_json(schema: Any) -> None:
    """Make every integer, number and boolean of a core schema take JSON's own types only: a
    body says 1 or true, never "1" or "yes" (strings are how JSON carries ids, times and
    amounts, and stay strings); and give a trimmed string that may not be empty a pattern that
    says so, as the spec cannot say it with a length."""
    if isinstance(schema, dict):
        if schema.get("type") == "function-before" and schema["function"]["function"] is _integral:
            return  # a nested request model's, done already
        if schema.get("type") in ("float", "bool"):
            schema["strict"] = True
        elif schema.get("type") == "int":
            inner = dict(schema)
            schema.clear()
            schema.update(core_schema.no_info_before_validator_function(_integral, inner))
            return
        elif (
            schema.get("type") == "str"
            and schema.get("strip_whitespace")
            and schema.get("min_length")
            and "pattern" not in schema
        ):
            # What is left once trimmed is never empty: the spec says so as a pattern.
            schema["pattern"] = NOT_BLANK
        for value in schema.values():
            _tighten_for_json(value)
    elif isinstance(schema, list):
        for value in schema:
            _tighten_for_json(value)


# Strings whose format or fixed values already keep a NUL byte out.
_SHAPED = ("uuid", "date-time", "date")


def _says_no_nul(schema: Any) -> None:
    """Declare in a model's JSON schema what `_no_nul` enforces: each free-text string (one
    with no pattern of its own) and each map's keys get the NO_NUL pattern. Nested models
    declare their own."""
    if not isinstance(schema, dict) or "$ref" in schema:
        return
    kind = schema.get("type")
    if (
        (kind == "string" or (isinstance(kind, list) and "string" in kind))
        and "pattern" not in schema
        and schema.get("format") not in _SHAPED
        and "enum" not in schema
        and "const" not in schema
    ):
        schema["pattern"] = NO_NUL
    if kind == "object" and "properties" not in schema and "propertyNames" not in schema:
        schema["propertyNames"] = {"pattern": NO_NUL}
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for sub in schema.get(key, []):
            _says_no_nul(sub)
    for key in ("items", "additionalProperties"):
        _says_no_nul(schema.get(key))
    for sub in schema.get("properties", {}).values():
        _says_no_nul(sub)


class RequestModel(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[BaseModel], handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        schema = handler(source)
        _tighten_for_json(schema)
        return schema

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        found = super().__get_pydantic_json_schema__(schema, handler)
        model = handler.resolve_ref_schema(found)
        for prop in model.get("properties", {}).values():
            _says_no_nul(prop)
        return found

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        # PostgreSQL text cannot hold NUL, and no field has a use for it.
        if _has_nul(value):
            raise ValueError("must not contain NUL characters")
        return value


# For free-text query parameters, which are not models: Query(pattern=NO_NUL).
NO_NUL = r"^[^\x00]*$"
# A body's string that is trimmed and may not be empty: something besides whitespace, no NUL.
NOT_BLANK = r"^[^\x00]*[^\s\x00][^\x00]*$"

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


def _written_out(value: object) -> object:
    """A date and time is text (or already one): a number is not read as seconds since 1970,
    as JSON's own types are kept everywhere else."""
    if isinstance(value, datetime) or (isinstance(value, str) and not _a_number(value)):
        return value
    raise ValueError("must be a date and time written out, such as 2026-01-31T09:00:00Z")


def _a_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# The one datetime input type, for request fields and query parameters alike: an instant
# that cannot be stored and read back is a 422, never a 500 deeper down.
UtcDatetime = Annotated[
    datetime, BeforeValidator(_written_out), AfterValidator(utc_instant), _Documented
]


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
