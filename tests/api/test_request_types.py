"""Request bodies take JSON's own types: a number or a boolean given as a string ("1", "true")
is a 422, in every body of every route, never quietly converted; nor is a number taken for a
date and time."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from gshare.api.openapi import spec
from gshare.kit.schemas import UTC_DATETIME_MARK

SPEC: dict[str, Any] = spec()
METHODS = {"get", "post", "put", "patch", "delete"}
# What a string given for each JSON type is, and the error a strict field answers it with.
AS_STRING = {
    "integer": ("1", "int_type"),
    "number": ("1.5", "float_type"),
    "boolean": ("true", "bool_type"),
}


def _models(cls: type[BaseModel]) -> Iterator[type[BaseModel]]:
    for sub in cls.__subclasses__():
        if sub.__module__.startswith("gshare."):
            yield sub
        yield from _models(sub)


# The spec names each body by its model (the app, built by spec(), imported them all).
MODELS = {m.__name__: m for m in _models(BaseModel)}


@dataclass(frozen=True)
class Leaf:
    where: str  # the operation
    body: str  # the body's schema: its model's name
    path: tuple[str | int, ...]  # the property names (and 0 for an array's item) down to it
    kind: str  # integer, number or boolean

    def __str__(self) -> str:
        return f"{self.where} {self.body}.{'.'.join(map(str, self.path))} ({self.kind})"


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    return SPEC["components"]["schemas"][ref.rsplit("/", 1)[-1]] if ref else schema


# What a field is to a walk: a kind of leaf to try, None to look further down, or SKIP.
SKIP = "skip"


def _walk(
    schema: dict[str, Any],
    top: Leaf,
    path: tuple[str | int, ...],
    seen: frozenset[str],
    kind_of: Callable[[dict[str, Any]], str | None],
) -> Iterator[Leaf]:
    """Each leaf under `schema` that `kind_of` gives a kind, down anyOf branches, array items
    and properties (each $ref followed once on a path)."""
    ref = schema.get("$ref")
    if ref is not None:
        if ref in seen:
            return
        seen = seen | {ref}
    schema = _resolve(schema)
    kind = kind_of(schema)
    if kind is not None:
        if kind != SKIP:
            yield Leaf(top.where, top.body, path, kind)
        return
    for branch in schema.get("anyOf", []):
        yield from _walk(branch, top, path, seen, kind_of)
    if isinstance(schema.get("items"), dict):
        yield from _walk(schema["items"], top, (*path, 0), seen, kind_of)
    for name, sub in schema.get("properties", {}).items():
        yield from _walk(sub, top, (*path, name), seen, kind_of)


def _number_or_boolean(schema: dict[str, Any]) -> str | None:
    if any(_resolve(b).get("type") == "string" for b in schema.get("anyOf", [])):
        return SKIP  # a string is one of the field's own types
    return schema["type"] if schema.get("type") in AS_STRING else None


def _datetime(schema: dict[str, Any]) -> str | None:
    """A datetime field (UtcDatetime marks each)."""
    return "datetime" if UTC_DATETIME_MARK in schema else None


def _leaves_of(kind_of: Callable[[dict[str, Any]], str | None]) -> list[Leaf]:
    return [
        leaf
        for body in BODIES
        for leaf in _walk(
            {"$ref": f"#/components/schemas/{body.body}"}, body, (), frozenset(), kind_of
        )
    ]


def bodies() -> Iterator[Leaf]:
    """Each operation's JSON body, as a leaf with no path."""
    for path, item in SPEC["paths"].items():
        for method, operation in item.items():
            if method not in METHODS:
                continue
            for media in operation.get("requestBody", {}).get("content", {}).values():
                ref = media["schema"].get("$ref", "")
                yield Leaf(f"{method.upper()} {path}", ref.rsplit("/", 1)[-1], (), "object")


BODIES = list(bodies())
LEAVES = _leaves_of(_number_or_boolean)


def _nested(path: tuple[str | int, ...], value: object) -> object:
    for key in reversed(path):
        value = [value] if isinstance(key, int) else {key: value}
    return value


def test_every_body_is_a_model_the_walk_knows() -> None:
    unknown = sorted(
        f"{b.where}: {b.body or 'an inline schema'}" for b in BODIES if b.body not in MODELS
    )
    assert not unknown, "bodies that are not a named model:\n" + "\n".join(unknown)


def test_the_walk_finds_numbers_and_booleans_in_bodies() -> None:
    found = {(leaf.body, leaf.path) for leaf in LEAVES}
    assert ("BookingIn", ("count",)) in found
    assert ("BookingEdit", ("once",)) in found
    assert ("SessionCreate", ("cpu_millicores",)) in found
    assert ("InventoryReport", ("nodes", 0, "cards", 0, "memory_mib")) in found


@pytest.mark.parametrize("leaf", LEAVES, ids=str)
def test_a_number_or_boolean_given_as_a_string_is_refused(leaf: Leaf) -> None:
    value, error = AS_STRING[leaf.kind]
    try:
        MODELS[leaf.body].model_validate(_nested(leaf.path, value))
        errors = []
    except ValidationError as exc:
        errors = exc.errors()
    refused = [e for e in errors if e["loc"] == leaf.path]
    assert refused, f"{leaf}: {value!r} was taken"
    assert {e["type"] for e in refused} == {error}, refused


DATETIMES = sorted(set(_leaves_of(_datetime)), key=str)


def test_the_walk_finds_datetimes_in_bodies() -> None:
    assert ("BookingIn", ("starts_at",)) in {(leaf.body, leaf.path) for leaf in DATETIMES}


@pytest.mark.parametrize("leaf", DATETIMES, ids=str)
@pytest.mark.parametrize("value", [1_900_000_000, "1900000000", 1.5, True])
def test_a_datetime_given_as_a_number_is_refused(leaf: Leaf, value: object) -> None:
    """Not read as seconds since 1970: a date and time is written out."""
    with pytest.raises(ValidationError) as refused:
        MODELS[leaf.body].model_validate_json(json.dumps(_nested(leaf.path, value)))
    assert any(e["loc"] == leaf.path for e in refused.value.errors()), leaf
