"""Shapes of the usage API. Credits travel as decimal strings; times as hours."""

from __future__ import annotations

import uuid
from datetime import date

from pydantic import Field

from gshare.kit.schemas import ResponseModel


class UsageFiguresOut(ResponseModel):
    gpu_hours: float = Field(
        description="Cards held, in hours, each weighed by its share of the card: a quarter "
        "card for an hour is 0.25."
    )
    idle_gpu_hours: float = Field(
        description="Of those, the hours whose reported utilization was under the idle threshold."
    )
    idle_share: float | None = Field(
        description="idle_gpu_hours / gpu_hours; None when nothing was held."
    )
    session_hours: float = Field(description="Sessions holding a card, in hours, unweighed.")
    measured_hours: float = Field(
        description="Session hours the cluster reported utilization for; time without reports "
        "is never counted idle."
    )
    credits: str = Field(description="Credits charged, as the ledger captured them.")
    vram_peak_mib: int | None = Field(description="The highest VRAM use reported.")


class UsagePeriodOut(UsageFiguresOut):
    period_start: date


class UsageRowOut(ResponseModel):
    key: str | None = Field(
        description="What the row groups by: a user, group, organization or cluster id, a "
        "model, or a model and tier; None when not grouped."
    )
    name: str | None = Field(description="The key's name: an email, a name, or the key itself.")
    totals: UsageFiguresOut
    series: list[UsagePeriodOut] = Field(description="Per period, oldest first; empty if none.")


class UsageReportOut(ResponseModel):
    since: date
    until: date = Field(description="The last day counted, inclusive (UTC days).")
    by: str
    every: str
    totals: UsageFiguresOut
    rows: list[UsageRowOut] = Field(description="By key.")


class IdleSessionOut(ResponseModel):
    session_id: uuid.UUID
    session_name: str | None = Field(description="None once the session is gone.")
    owner_email: str
    group_name: str
    model: str
    tier: str
    gpu_hours: float
    idle_gpu_hours: float
    credits: str
    vram_peak_mib: int | None
    vram_limit_mib: int


class IdleSessionsOut(ResponseModel):
    items: list[IdleSessionOut] = Field(description="Most idle GPU hours first; at most 20.")


class SmallerTierOut(ResponseModel):
    tier_id: uuid.UUID
    model: str
    name: str
    vram_mib: int
    price_per_hour: str


class SizingOut(ResponseModel):
    sessions: int = Field(description="Recent sessions of the image on the tier looked at.")
    peak_vram_mib: int | None = Field(description="The highest VRAM any of them used.")
    smaller: SmallerTierOut | None = Field(
        description="A cheaper tier of the same model that would have held them with room."
    )
    near_limit: int = Field(description="Of them, those that came within 10% of their limit.")
    in_words: str | None = Field(description="The advice, when there is one.")
