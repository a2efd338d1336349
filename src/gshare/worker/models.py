"""The worker's own table: how each periodic loop last ran, for the admins' health view."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, DateTime, Float, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from gshare.kit.db import Base


class WorkerLoop(Base):
    """One loop across every worker process: the last tick started and the last that succeeded,
    the last error and how many ticks in a row have failed."""

    __tablename__ = "worker_loops"

    name: Mapped[str] = mapped_column(String(40), primary_key=True)
    interval_seconds: Mapped[float] = mapped_column(Float, nullable=False)
    last_run_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    last_ok_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    failures: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    last_error: Mapped[str] = mapped_column(Text, nullable=False, server_default="")
