"""Every string the cluster, capacity and session routes take is bounded, and no longer than
the column it is stored in, so an over-long value is a 422 and never a database error."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from pydantic import BaseModel
from sqlalchemy import String

from gshare.capacity import schemas as capacity_schemas
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
from gshare.clusters import schemas as cluster_schemas
from gshare.clusters.models import Cluster
from gshare.kit.schemas import RequestModel
from gshare.sessions import schemas as session_schemas
from gshare.sessions.models import CatalogImage, InteractiveSession, Volume

# request field -> the column it is stored in (None: kept outside the database, or Text)
STORED: dict[tuple[str, str], Any] = {
    ("ClusterRegister", "name"): Cluster.__table__.c.name,
    ("ClusterRegister", "sessions_domain"): Cluster.__table__.c.sessions_domain,
    ("ClusterRegister", "kubeconfig"): None,  # in the kubeconfig store
    ("ReportedCard", "uuid"): GpuCard.__table__.c.uuid,
    ("ReportedCard", "model"): GpuCard.__table__.c.model,
    ("ReportedNode", "name"): GpuCard.__table__.c.node,
    ("StatusReport", "message"): InteractiveSession.__table__.c.phase_message,
    ("GpuModelIn", "name"): GpuModel.__table__.c.name,
    ("GpuModelIn", "exclusive_price"): None,  # parsed into a bigint
    ("GpuModelPatch", "exclusive_price"): None,
    ("MigInstanceIn", "profile"): None,  # checked against the GPU's profiles, kept as JSON
    ("ImageCreate", "name"): CatalogImage.__table__.c.name,
    ("ImageCreate", "reference"): CatalogImage.__table__.c.reference,
    ("ImageCreate", "description"): None,  # a text column
    ("SessionCreate", "name"): InteractiveSession.__table__.c.name,
    ("SharedVolumeCreate", "name"): Volume.__table__.c.name,
    ("UtilizationReport", "error"): None,  # cut to the column's width, a text column
    ("StartupStepReport", "reason"): None,  # kept in a JSON column, bounded by the schema
    ("StartupStepReport", "message"): None,
    # Optional fields, which the schema states as "a string or null".
    ("TierIn", "mig_profile"): GpuTier.__table__.c.mig_profile,
    ("TierIn", "price_per_hour"): None,  # parsed into a bigint
    ("TierPatch", "price_per_hour"): None,
    ("ImageUpdate", "name"): CatalogImage.__table__.c.name,
    ("ImageUpdate", "reference"): CatalogImage.__table__.c.reference,
    ("ImageUpdate", "description"): None,  # a text column
    ("DrainIn", "node"): Drain.__table__.c.node,
    ("DedicationCreate", "node"): NodeDedication.__table__.c.node,
    ("ClusterIsolationPut", "sandbox_runtime_class"): Cluster.__table__.c.sandbox_runtime_class,
    ("ReportedNode", "dedicated_label"): GpuNode.__table__.c.dedicated_label,
    ("DriftReport", "reason"): IsolationIncident.__table__.c.reason,
    ("DriftReport", "node"): IsolationIncident.__table__.c.node,
    ("DriftReport", "pod"): IsolationIncident.__table__.c.pod,
    ("DrainIn", "reason"): None,  # a text column
    ("BookingIn", "title"): Booking.__table__.c.title,
    ("BookingEdit", "title"): Booking.__table__.c.title,
    ("ReportedCardError", "card_uuid"): GpuCard.__table__.c.uuid,  # matched against it
    ("ReportedCardError", "detail"): None,  # passed on in a notification, not stored
}


def _request_models() -> list[type[BaseModel]]:
    return [
        model
        for module in (cluster_schemas, capacity_schemas, session_schemas)
        for _, model in inspect.getmembers(module, inspect.isclass)
        if issubclass(model, RequestModel) and model is not RequestModel
    ]


def _free_text(prop: dict[str, Any]) -> dict[str, Any] | None:
    """The free-text string a property holds, also where it may be null (`anyOf`)."""
    for option in [prop, *prop.get("anyOf", [])]:
        if option.get("type") == "string" and "enum" not in option and "format" not in option:
            return dict(option)
    return None


def _string_fields(model: type[BaseModel]) -> dict[str, dict[str, Any]]:
    properties = model.model_json_schema()["properties"]
    found = {name: _free_text(prop) for name, prop in properties.items()}
    return {name: prop for name, prop in found.items() if prop is not None}


def test_every_string_field_is_known_and_bounded() -> None:
    found = {
        (model.__name__, name): prop
        for model in _request_models()
        for name, prop in _string_fields(model).items()
    }
    assert set(found) == set(STORED)
    unbounded = [key for key, prop in found.items() if "maxLength" not in prop]
    assert unbounded == []


@pytest.mark.parametrize(("field", "column"), STORED.items(), ids=lambda v: str(v))
def test_a_bound_fits_its_column(field: tuple[str, str], column: Any) -> None:
    if column is None or not isinstance(column.type, String) or column.type.length is None:
        return
    model = next(m for m in _request_models() if m.__name__ == field[0])
    assert _string_fields(model)[field[1]]["maxLength"] <= column.type.length
