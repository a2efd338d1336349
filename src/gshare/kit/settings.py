"""Configuration: GSHARE_* environment variables and .env, validated once at start."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from datetime import timedelta
from difflib import get_close_matches
from functools import lru_cache
from ipaddress import IPv4Network, IPv6Network, ip_network
from pathlib import Path
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dotenv import dotenv_values
from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

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
    # NoDecode: the variable is a comma-separated list, not JSON.
    trusted_proxies: Annotated[tuple[IPv4Network | IPv6Network, ...], NoDecode] = Field(
        default=(IPv4Network("127.0.0.0/8"), IPv6Network("::1/128")),
        description="Comma-separated addresses or CIDRs of the proxies whose X-Forwarded-For "
        "and X-Forwarded-Proto are believed; empty: none.",
    )
    api_docs: bool = Field(
        default=False, description="Serve the interactive API docs page at /api/v1/docs."
    )

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
    dequeue_interval_seconds: float = Field(
        default=15,
        gt=0,
        le=3600,
        description="How often the worker walks the admission queue when nothing wakes it.",
    )
    fair_share_half_life_minutes: float = Field(
        default=240, gt=0, le=30 * 24 * 60, description="Half-life of recent GPU usage."
    )
    fair_share_interval_seconds: float = Field(
        default=60, gt=0, le=3600, description="How often GPU usage is sampled."
    )
    starvation_limit_minutes: float = Field(
        default=120,
        gt=0,
        le=30 * 24 * 60,
        description="A request waiting longer reserves the next card that would fit it.",
    )
    events_retention_hours: float = Field(
        default=24,
        gt=0,
        le=90 * 24,
        description="How long events are kept for clients that reconnect with Last-Event-ID.",
    )
    events_stream_seconds: float = Field(
        default=300,
        ge=5,
        le=24 * 3600,
        description="The longest one live-update stream stays open; the client reconnects.",
    )
    events_heartbeat_seconds: float = Field(
        default=15,
        gt=0,
        le=300,
        description="How often an idle live-update stream sends a comment to keep proxies open.",
    )
    events_relay_interval_seconds: float = Field(
        default=1,
        gt=0,
        le=60,
        description="How often each process numbers events that no local commit woke it for.",
    )
    sessions_namespace: str = Field(
        default="gshare-sessions",
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        max_length=63,
        description="The namespace of every cluster that sessions run in (the operator's).",
    )
    metering_interval_seconds: float = Field(
        default=60, gt=0, le=3600, description="How often running GPU sessions are billed."
    )
    session_apply_interval_seconds: float = Field(
        default=5,
        gt=0,
        le=3600,
        description="How often sessions' wanted resources are applied to their clusters when "
        "no local change wakes the loop.",
    )
    idle_check_interval_seconds: float = Field(
        default=60, gt=0, le=3600, description="How often idle and over-long sessions are paused."
    )
    idle_threshold_percent: float = Field(
        default=5,
        ge=0,
        le=100,
        description="A GPU session below this utilization counts as idle.",
    )
    idle_warning_minutes: int = Field(
        default=10,
        ge=0,
        le=24 * 60,
        description="How long before an idle pause its owner is warned.",
    )
    metrics_stale_minutes: float = Field(
        default=5,
        gt=0,
        le=24 * 60,
        description="Utilization older than this is not acted on: nothing is reaped.",
    )
    session_start_timeout_minutes: float = Field(
        default=15,
        gt=0,
        le=24 * 60,
        description="A session not running this long after it got its card fails (and is "
        "settled): its pod cannot be scheduled or its image pulled.",
    )
    session_report_timeout_minutes: float = Field(
        default=30,
        gt=0,
        le=7 * 24 * 60,
        description="A session its cluster has not reported for this long is lost.",
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

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _networks(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        items = [item.strip() for item in value.split(",") if item.strip()]
        try:
            return tuple(ip_network(item, strict=False) for item in items)
        except ValueError as exc:
            raise ValueError("must be comma-separated IP addresses or CIDRs") from exc

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


PREFIX = "GSHARE_"
# Read outside Settings: by the operator, the demo and the test tooling.
READ_ELSEWHERE = frozenset(
    {
        "GSHARE_OPERATOR_NAMESPACE",
        "GSHARE_OPERATOR_SCHEDULER",
        "GSHARE_OPERATOR_API_URL",
        "GSHARE_OPERATOR_CLUSTER_ID",
        "GSHARE_OPERATOR_TOKEN_FILE",
        "GSHARE_OPERATOR_METRICS_URL",
        "GSHARE_OPERATOR_METRICS_SOURCE",
        "GSHARE_OPERATOR_METRICS_INTERVAL",
        "GSHARE_SESSIONS_DOMAIN",
        "GSHARE_SESSION_AUTH_URL",
        "GSHARE_DEMO_NODES",
        "GSHARE_DEMO_CARDS",
        "GSHARE_DEMO_SESSIONS_PORT",
        "GSHARE_DEMO_JUPYTER",
        "GSHARE_DEMO_CODE_SERVER",
        "GSHARE_TESTENV_CACHE",
    }
)


def unknown_variables(
    environ: Mapping[str, str] | None = None, env_file: Path | None = None
) -> list[str]:
    """Warnings about GSHARE_* names, in the environment or the .env file, that nothing reads:
    a misspelled setting would otherwise be ignored without a word."""
    if environ is None:
        environ = os.environ
    if env_file is None:
        env_file = Path(str(Settings.model_config.get("env_file") or ".env"))
    names = dict.fromkeys(environ, "environment")
    if env_file.is_file():
        names.update(
            {name: str(env_file) for name in dotenv_values(env_file) if name not in environ}
        )
    known = {f"{PREFIX}{field}".upper() for field in Settings.model_fields} | READ_ELSEWHERE
    warnings = []
    for name, source in sorted(names.items()):
        upper = name.upper()  # settings are matched without regard to case
        if not upper.startswith(PREFIX) or upper in known:
            continue
        where = "the environment" if source == "environment" else source
        message = f"{name} (in {where}) is not a setting GShare reads; it is ignored"
        close = get_close_matches(upper, sorted(known), n=1)
        warnings.append(message + (f" (did you mean {close[0]}?)" if close else ""))
    return warnings


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        print(f"gshare: {describe(exc)}", file=sys.stderr)
        raise ConfigurationError(2) from None
