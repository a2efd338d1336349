"""Request and response bodies of the session routes."""

from __future__ import annotations

from pydantic import Field

from gshare.kit.schemas import RequestModel, ResponseModel
from gshare.sessions.status import Phase


class StatusReport(RequestModel):
    """What an operator reports about one session's resource."""

    generation: int = Field(ge=0, description="The resource generation this status reflects.")
    sequence: int = Field(ge=1, description="Grows with every report the operator sends.")
    phase: Phase
    message: str = Field(default="", max_length=1000)
    url: str = Field(default="", max_length=500, pattern=r"^(https?://[^\s]+)?$")


class StatusAck(ResponseModel):
    applied: bool = Field(description="False when the report was older than the one stored.")
    sequence: int


class EntryOut(ResponseModel):
    url: str = Field(description="Open this within a minute to enter the session.")
