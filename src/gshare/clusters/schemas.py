"""Shapes of the cluster registry and of the operators' callbacks."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, model_validator

from gshare.kit.schemas import RequestModel, ResponseModel

ClusterName = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63
    ),
]


# A DNS name of lowercase labels, at least two of them: https://<session id>.<this>/ must work.
SessionsDomain = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True,
        to_lower=True,
        max_length=200,
        pattern=r"^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
    ),
]
DEFAULT_SESSIONS_DOMAIN = "sessions.gshare.local"


class ClusterRegister(RequestModel):
    name: ClusterName
    kubeconfig: Annotated[str, StringConstraints(min_length=1, max_length=256 * 1024)]
    sessions_domain: SessionsDomain = Field(
        default=DEFAULT_SESSIONS_DOMAIN,
        description="The domain under which this cluster's ingress serves session pages, "
        "as its operator's GSHARE_SESSIONS_DOMAIN says: https://<session id>.<domain>/.",
    )


class CardOut(ResponseModel):
    uuid: str
    node: str
    model: str
    memory_mib: int
    cores: int
    split_count: int
    healthy: bool
    missing: bool
    last_seen_at: datetime


class ClusterOut(ResponseModel):
    id: uuid.UUID
    name: str
    api_server: str
    sessions_domain: str
    status: Literal["connected", "unreachable", "missing_crd"]
    status_message: str
    last_contact_at: datetime | None
    nodes: int
    cards: int
    healthy_cards: int
    missing_cards: int
    created_at: datetime


class ClusterDetailOut(ClusterOut):
    card_list: list[CardOut]


class ClusterPage(ResponseModel):
    items: list[ClusterOut]
    next_cursor: str | None


INT_MAX = 2**31 - 1


class ReportedCard(RequestModel):
    uuid: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    model: Annotated[str, StringConstraints(max_length=120)]
    memory_mib: int = Field(gt=0, le=INT_MAX)
    cores: int = Field(ge=0, le=INT_MAX)
    split_count: int = Field(gt=0, le=INT_MAX)
    numa: int = Field(ge=0, le=INT_MAX)
    healthy: bool


class ReportedNode(RequestModel):
    name: Annotated[str, StringConstraints(min_length=1, max_length=253)]
    cards: list[ReportedCard] = Field(max_length=64)


class InventoryReport(RequestModel):
    """The whole inventory of a cluster; `sequence` grows with every report the operator sends."""

    sequence: int = Field(ge=1, le=2**63 - 1)
    nodes: list[ReportedNode] = Field(max_length=5000)

    @model_validator(mode="after")
    def _each_card_once(self) -> InventoryReport:
        uuids = [card.uuid for node in self.nodes for card in node.cards]
        if len(uuids) != len(set(uuids)):
            raise ValueError("each card may be reported once")
        names = [node.name for node in self.nodes]
        if len(names) != len(set(names)):
            raise ValueError("each node may be reported once")
        return self


class InventoryAck(ResponseModel):
    applied: bool
    sequence: int


class RefusalOut(ResponseModel):
    source: str = Field(description="The client address (an IPv6 one as its /64), or 'other'.")
    reason: str
    route: str
    window_start: datetime
    first_at: datetime
    last_at: datetime
    refusals: int = Field(description="How many calls were refused in this window.")


class RefusalPage(ResponseModel):
    items: list[RefusalOut]
    next_cursor: str | None
