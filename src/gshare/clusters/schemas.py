"""Shapes of the cluster registry and of refused internal calls."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StringConstraints

from gshare.kit.schemas import RequestModel, ResponseModel

ClusterName = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63
    ),
]


def _port_in_range(domain: str) -> str:
    if ":" in domain and not 1 <= int(domain.rsplit(":", 1)[1]) <= 65535:
        raise ValueError("the port must be between 1 and 65535")
    return domain


# A DNS name of lowercase labels, at least two of them, and the ingress's port when it is not
# the standard one: https://<session id>.<this>/ must work.
SessionsDomain = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True,
        to_lower=True,
        max_length=200,
        pattern=(
            r"^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
            r"(:[0-9]{1,5})?$"
        ),
    ),
    AfterValidator(_port_in_range),
]
DEFAULT_SESSIONS_DOMAIN = "sessions.gshare.local"


class ClusterRegister(RequestModel):
    name: ClusterName
    kubeconfig: Annotated[str, StringConstraints(min_length=1, max_length=256 * 1024)]
    sessions_domain: SessionsDomain = Field(
        default=DEFAULT_SESSIONS_DOMAIN,
        description="The domain under which this cluster's ingress serves session pages, "
        "as its operator's GSHARE_SESSIONS_DOMAIN says, with the ingress's port if it is not "
        "443: https://<session id>.<domain>/ (plain http under localhost).",
    )


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
    sandbox_runtime_class: str | None = Field(
        description="The RuntimeClass sandboxed sessions run with here; null: none."
    )
    user_namespaces: bool = Field(
        description="The admin vouches that every node here runs pods in user namespaces."
    )


# A DNS subdomain, as Kubernetes names a RuntimeClass.
RuntimeClassName = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True,
        min_length=1,
        max_length=253,
        pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
    ),
]


class ClusterIsolationPut(RequestModel):
    """What a cluster offers to isolation levels beyond what its nodes report."""

    sandbox_runtime_class: RuntimeClassName | None = Field(
        default=None,
        description="The RuntimeClass sandboxed sessions run with here (gVisor's runsc, Kata); "
        "its nodes are those whose operator reports they meet its scheduling constraints. "
        "Null: sandboxed sessions never run here.",
    )
    user_namespaces: bool = Field(
        default=False,
        description="Vouch that every node here runs pods in user namespaces, whatever the "
        "nodes report (false: trust what each node reports).",
    )


class ClusterPage(ResponseModel):
    items: list[ClusterOut]
    next_cursor: str | None


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
