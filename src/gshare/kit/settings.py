"""Configuration: GSHARE_* environment variables and .env, validated once at start."""

from __future__ import annotations

import sys
from datetime import timedelta
from functools import lru_cache
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

_REPO_CONSOLE = Path(__file__).resolve().parents[3] / "frontend" / "dist"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="GSHARE_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    database_url: str | None = Field(
        default=None,
        description="PostgreSQL URL (postgresql://…). Unset: GShare runs its own embedded server.",
    )
    data_dir: Path = Field(default=Path(".gshare"), description="Where local state lives.")
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    console_dir: Path = Field(default=_REPO_CONSOLE, description="The built console to serve.")

    bootstrap_admin_email: str | None = None
    bootstrap_admin_password: str | None = None
    bootstrap_admin_name: str = "Administrator"

    session_idle_timeout: timedelta = timedelta(hours=8)
    session_absolute_timeout: timedelta = timedelta(days=7)
    cookie_secure: Literal["auto", "always", "never"] = "auto"

    auth_cache_seconds: float = Field(
        default=15, ge=0, le=300, description="How long a read may reuse a caller's view; 0: off."
    )
    credits_timezone: str = Field(
        default="UTC", description="The time zone whose month boundaries start refills."
    )
    hold_window_seconds: int = Field(
        default=3600, ge=60, le=7 * 24 * 3600, description="How long one hold window lasts."
    )
    refill_interval_seconds: float = Field(
        default=60, gt=0, le=3600, description="How often the worker looks for due refills."
    )
    idempotency_key_days: int = Field(
        default=7, ge=1, le=365, description="How long a repeated Idempotency-Key is honoured."
    )
    kubeconfig_store: Literal["auto", "file", "secret"] = Field(
        default="auto",
        description="Where cluster kubeconfigs are kept: 0600 files under the data dir, or "
        "Secrets in gshare-system; auto picks Secrets when running inside Kubernetes.",
    )
    password_hash_concurrency: int = Field(default=2, ge=1, le=64)
    log_level: Literal["debug", "info", "warning", "error"] = "info"

    @field_validator("database_url")
    @classmethod
    def _postgres_only(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        if not value.startswith(("postgresql://", "postgresql+asyncpg://", "postgres://")):
            raise ValueError("must be a postgresql:// URL")
        return value

    @field_validator("credits_timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError("must be a time zone name such as UTC or Europe/Berlin") from exc
        return value

    @field_validator("session_idle_timeout", "session_absolute_timeout", mode="before")
    @classmethod
    def _plain_seconds(cls, value: object) -> object:
        """Accept a plain number of seconds as well as ISO 8601 durations (PT8H)."""
        if isinstance(value, str) and value.strip().replace(".", "", 1).isdigit():
            return float(value)
        return value

    @field_validator("session_idle_timeout", "session_absolute_timeout")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value.total_seconds() <= 0:
            raise ValueError("must be positive")
        return value


class ConfigurationError(SystemExit):
    """Stops the process with one line naming the offending variable."""


def describe(error: ValidationError) -> str:
    first = error.errors()[0]
    field = str(first["loc"][0]) if first["loc"] else "?"
    return f"invalid configuration: GSHARE_{field.upper()}: {first['msg']}"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        print(f"gshare: {describe(exc)}", file=sys.stderr)
        raise ConfigurationError(2) from None
