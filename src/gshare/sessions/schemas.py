"""Request and response bodies of the session routes."""

from __future__ import annotations

from pydantic import Field

from gshare.kit.schemas import RequestModel, ResponseModel
from gshare.sessions.status import Phase

BIGINT_MAX = 2**63 - 1


class StatusReport(RequestModel):
    """What an operator reports about one session's resource."""

    generation: int = Field(
        ge=0, le=BIGINT_MAX, description="The resource generation this status reflects."
    )
    sequence: int = Field(
        ge=1, le=BIGINT_MAX, description="Grows with every report the operator sends."
    )
    phase: Phase
    message: str = Field(default="", max_length=1000)


class StatusAck(ResponseModel):
    applied: bool = Field(
        description="False when the report was not newer than the stored one, or the session "
        "has ended."
    )
    sequence: int


class SessionEntryOut(ResponseModel):
    url: str = Field(description="Open this within a minute to enter the session; it works once.")
