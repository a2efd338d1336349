"""Every input is bounded in the spec: strings by a length their column can hold and a pattern
that keeps NUL bytes out, datetimes by the one datetime type, so that oversized or unstorable
values are a 422 and never a 500, and the spec says what the server takes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import String
from sqlalchemy.orm import InstrumentedAttribute

from gshare.api.openapi import spec
from gshare.audit.models import AuditEntry
from gshare.capacity.models import (
    Booking,
    Drain,
    GpuCard,
    GpuModel,
    GpuNode,
    GpuTier,
    IsolationIncident,
    NodeDedication,
)
from gshare.clusters.models import Cluster
from gshare.identity.models import Group, Organization, SignInFailure, User
from gshare.kit.idempotency import IdempotencyRecord
from gshare.kit.schemas import UTC_DATETIME_MARK
from gshare.sessions.models import CatalogImage, InteractiveSession, Volume

SPEC: dict[str, Any] = spec()
METHODS = {"get", "post", "put", "patch", "delete"}
# Strings whose shape already bounds them.
BOUNDED_FORMATS = {"uuid", "date-time", "date"}

# Where each stored string input ends up. A free-text input must be listed here or in
# NOT_STORED, so a new field is a decision rather than an oversight.
COLUMNS: dict[tuple[str, str], InstrumentedAttribute[Any]] = {
    ("LoginRequest", "email"): SignInFailure.email_key,
    ("OrgCreate", "name"): Organization.name,
    ("OrgUpdate", "name"): Organization.name,
    ("GroupCreate", "name"): Group.name,
    ("GroupUpdate", "name"): Group.name,
    ("UserCreate", "email"): User.email,
    ("UserCreate", "name"): User.name,
    ("UserUpdate", "name"): User.name,
    ("ClusterRegister", "name"): Cluster.name,
    ("ClusterRegister", "sessions_domain"): Cluster.sessions_domain,
    ("ReportedCard", "uuid"): GpuCard.uuid,
    ("ReportedCard", "model"): GpuCard.model,
    ("ReportedCardError", "card_uuid"): GpuCard.uuid,
    ("ReportedNode", "name"): GpuCard.node,
    ("GpuModelIn", "name"): GpuModel.name,
    ("TierIn", "mig_profile"): GpuTier.mig_profile,
    ("GET /api/v1/audit", "action"): AuditEntry.action,
    ("GET /api/v1/audit", "target_type"): AuditEntry.target_type,
    ("GET /api/v1/audit", "target_id"): AuditEntry.target_id,
    ("ImageCreate", "name"): CatalogImage.name,
    ("ImageCreate", "reference"): CatalogImage.reference,
    ("ImageUpdate", "name"): CatalogImage.name,
    ("ImageUpdate", "reference"): CatalogImage.reference,
    ("SharedVolumeCreate", "name"): Volume.name,
    ("SessionCreate", "name"): InteractiveSession.name,
    ("DrainIn", "node"): Drain.node,
    ("DedicationCreate", "node"): NodeDedication.node,
    ("ClusterIsolationPut", "sandbox_runtime_class"): Cluster.sandbox_runtime_class,
    ("ReportedNode", "dedicated_label"): GpuNode.dedicated_label,
    ("DriftReport", "reason"): IsolationIncident.reason,
    ("DriftReport", "node"): IsolationIncident.node,
    ("DriftReport", "pod"): IsolationIncident.pod,
    ("BookingIn", "title"): Booking.title,
    ("BookingEdit", "title"): Booking.title,
    ("GET /api/v1/bookings", "model"): Booking.model,
    ("GET /api/v1/bookings/calendar", "model"): Booking.model,
    **{
        (operation, "Idempotency-Key"): IdempotencyRecord.key
        for operation in (
            "POST /api/v1/credits/mint",
            "POST /api/v1/credits/transfers",
            "PUT /api/v1/wallets/{wallet_id}/monthly-grant",
            "POST /api/v1/sessions",
            "DELETE /api/v1/sessions/{session_id}",
            "POST /api/v1/sessions/{session_id}/pause",
            "POST /api/v1/sessions/{session_id}/resume",
            "POST /api/v1/sessions/{session_id}/stop",
            "POST /api/v1/sessions/{session_id}/keep-running",
        )
    },
}
NOT_STORED = {
    ("DrainIn", "reason"),  # a text column
    ("ImageCreate", "description"),  # a text column
    ("ImageUpdate", "description"),
    ("UtilizationReport", "error"),  # a text column
    ("ReportedCardError", "detail"),  # in a notification's JSON data
    ("LoginRequest", "password"),  # only compared with a hash
    ("PasswordChangeRequest", "current_password"),
    ("PasswordChangeRequest", "new_password"),  # stored hashed
    ("PasswordCheckRequest", "password"),
    ("PasswordCheckRequest", "email"),
    ("PasswordCheckRequest", "name"),
    ("UserCreate", "initial_password"),
    ("PasswordResetRequest", "initial_password"),
    ("ClusterRegister", "kubeconfig"),  # kept in a file, never in the database
    ("MintRequest", "amount"),  # parsed into a bigint
    ("WalletAlertRequest", "below"),
    ("MintRequest", "memo"),  # a text column
    ("TransferRequest", "amount"),
    ("TransferRequest", "memo"),
    ("MonthlyGrantPut", "amount"),
    ("StatusReport", "message"),  # a text column
    ("StartupStepReport", "reason"),  # kept in a bounded JSON list (startup_steps)
    ("StartupStepReport", "message"),
    ("GpuModelIn", "exclusive_price"),  # parsed into a bigint
    ("GpuModelPatch", "exclusive_price"),
    ("TierIn", "price_per_hour"),
    ("TierPatch", "price_per_hour"),
    ("MigInstanceIn", "profile"),  # checked against the GPU's profiles
    ("ReportedNode", "runtime_classes"),  # a bounded JSON list
}


@dataclass(frozen=True)
class Input:
    where: str  # the operation, for messages
    owner: str  # a request body's schema name, or the operation for a parameter
    name: str  # the property or parameter
    schema: dict[str, Any]


def _resolve(schema: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    ref = schema.get("$ref")
    if ref is None:
        return None, schema
    name = ref.rsplit("/", 1)[-1]
    return name, SPEC["components"]["schemas"][name]


def _leaves(
    schema: dict[str, Any], where: str, owner: str, name: str, seen: frozenset[str]
) -> Iterator[Input]:
    ref, schema = _resolve(schema)
    if ref is not None:
        if ref in seen:
            return
        seen = seen | {ref}
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for sub in schema.get(key, []):
            yield from _leaves(sub, where, owner, name, seen)
    if isinstance(schema.get("items"), dict):
        yield from _leaves(schema["items"], where, owner, name, seen)
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _leaves(schema["additionalProperties"], where, owner, name, seen)
    for prop, sub in schema.get("properties", {}).items():
        yield from _leaves(sub, where, ref or owner, prop, seen)
    types = schema.get("type")
    if types == "string" or (isinstance(types, list) and "string" in types):
        yield Input(where, owner, name, schema)


def inputs() -> Iterator[Input]:
    for path, item in SPEC["paths"].items():
        for method, operation in item.items():
            if method not in METHODS:
                continue
            where = f"{method.upper()} {path}"
            for param in operation.get("parameters", []):
                if param["in"] in ("query", "path", "header"):
                    yield from _leaves(param["schema"], where, where, param["name"], frozenset())
            body = operation.get("requestBody", {}).get("content", {})
            for media in body.values():
                yield from _leaves(media["schema"], where, where, "body", frozenset())


INPUTS = list(inputs())


def _free_text(i: Input) -> bool:
    return (
        i.schema.get("format") not in BOUNDED_FORMATS
        and "enum" not in i.schema
        and "const" not in i.schema
    )


def test_the_walk_finds_the_inputs_it_should() -> None:
    found = {(i.owner, i.name) for i in INPUTS}
    assert ("OrgCreate", "name") in found
    assert ("MembershipPut", "expires_at") in found
    assert ("GET /api/v1/audit", "since") in found
    assert ("GET /api/v1/orgs", "cursor") in found
    assert ("POST /api/v1/sessions", "Idempotency-Key") in found
    assert ("MigInstanceIn", "profile") in found


def test_every_string_input_has_a_max_length() -> None:
    unbounded = sorted(
        {
            f"{i.where}: {i.owner}.{i.name}"
            for i in INPUTS
            if _free_text(i) and "maxLength" not in i.schema
        }
    )
    assert not unbounded, "strings without maxLength:\n" + "\n".join(unbounded)


def test_every_datetime_input_uses_the_one_datetime_type() -> None:
    loose = sorted(
        {
            f"{i.where}: {i.owner}.{i.name}"
            for i in INPUTS
            if i.schema.get("format") == "date-time" and UTC_DATETIME_MARK not in i.schema
        }
    )
    assert not loose, "datetime inputs not typed UtcDatetime (kit/schemas.py):\n" + "\n".join(loose)


def test_stored_strings_fit_their_columns() -> None:
    too_long = []
    for i in INPUTS:
        column = COLUMNS.get((i.owner, i.name))
        if column is None or "maxLength" not in i.schema:
            continue
        kind = column.property.columns[0].type
        assert isinstance(kind, String), f"{column} is not a String"
        assert kind.length, f"{column} has no length"
        if i.schema["maxLength"] > kind.length:
            too_long.append(f"{i.owner}.{i.name}: {i.schema['maxLength']} > {column} {kind.length}")
    assert not too_long, "\n".join(too_long)


@pytest.mark.parametrize("key", sorted(COLUMNS) + sorted(NOT_STORED), ids=".".join)
def test_every_listed_input_still_exists(key: tuple[str, str]) -> None:
    assert key in {(i.owner, i.name) for i in INPUTS}, f"{key} is no longer an input: unlist it"


def test_every_free_text_input_is_known_to_be_stored_or_not() -> None:
    # Parameters that only narrow a query (searches, cursors) are compared, never stored.
    unknown = sorted(
        {
            f"{i.where}: {i.owner}.{i.name}"
            for i in INPUTS
            if _free_text(i)
            and (i.owner, i.name) not in COLUMNS
            and (i.owner, i.name) not in NOT_STORED
            and not i.owner.startswith("GET ")
        }
    )
    assert not unknown, "list these in COLUMNS or NOT_STORED:\n" + "\n".join(unknown)


def test_every_free_text_input_refuses_a_nul_byte() -> None:
    """PostgreSQL cannot hold or compare a NUL byte in text: an input that carries one is a 422
    at the edge (a parameter's pattern; a body's validator, which its model's spec declares as
    a pattern), never an error from the database, and the spec says so."""
    open_to_nul = sorted(
        {
            f"{i.where}: {i.owner}.{i.name}"
            for i in INPUTS
            if _free_text(i) and re.search(i.schema.get("pattern", ""), "a\x00b") is not None
        }
    )
    assert not open_to_nul, "inputs whose spec lets a NUL byte through:\n" + "\n".join(open_to_nul)


def _maps(schema: dict[str, Any], seen: frozenset[str]) -> Iterator[dict[str, Any]]:
    ref, schema = _resolve(schema)
    if ref is not None:
        if ref in seen:
            return
        seen = seen | {ref}
    if schema.get("type") == "object" and "properties" not in schema:
        yield schema
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for sub in schema.get(key, []):
            yield from _maps(sub, seen)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from _maps(schema[key], seen)
    for sub in schema.get("properties", {}).values():
        yield from _maps(sub, seen)


def test_every_map_in_a_body_refuses_a_nul_byte_in_its_keys() -> None:
    maps = [
        (f"{method.upper()} {path}", found)
        for path, item in SPEC["paths"].items()
        for method, operation in item.items()
        if method in METHODS
        for media in operation.get("requestBody", {}).get("content", {}).values()
        for found in _maps(media["schema"], frozenset())
    ]
    assert maps, "the walk finds the policy values"
    open_to_nul = sorted(
        where
        for where, found in maps
        if re.search(found.get("propertyNames", {}).get("pattern", ""), "a\x00b") is not None
    )
    assert not open_to_nul, "maps whose keys may hold a NUL byte:\n" + "\n".join(open_to_nul)
