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
        description="PostgreSQL URL (postgresql://…). Unset: `gshare up` and `gshare migrate` "
        "run an embedded server under the data dir; `gshare api` and `gshare worker` need it.",
    )
    data_dir: Path = Field(
        default=Path(".gshare"),
        description="The folder for local state, relative to the working directory: the "
        "embedded database, the first admin's generated password and, outside Kubernetes, the "
        "internal key set and clusters' kubeconfigs. Point it at persistent storage.",
    )
    host: str = Field(
        default="127.0.0.1",
        description="The address the API listens on. Set 0.0.0.0 to accept connections from "
        "other machines (the chart does, in its pods).",
    )
    port: int = Field(
        default=8000, ge=1, le=65535, description="The TCP port the API and console listen on."
    )
    database_wait_seconds: float = Field(
        default=0,
        ge=0,
        le=3600,
        description="How long `gshare migrate`, `api` and `worker` wait for GSHARE_DATABASE_URL "
        "to accept connections (and `api` and `worker` for its schema to be migrated) before "
        "giving up, for servers started beside the database (Compose sets 120). 0: fail at once.",
    )
    metrics_host: str = Field(
        default="127.0.0.1",
        description="The address the metrics endpoint listens on. Set 0.0.0.0 to let "
        "Prometheus scrape it from other machines (the chart does, in its pods).",
    )
    metrics_port: int = Field(
        default=0,
        ge=0,
        le=65535,
        description="The TCP port of the Prometheus metrics endpoint (/metrics), apart from "
        "the API's port; 0: off, so that `gshare up` and tests never compete for a port. See "
        "docs/how-to/monitor.md.",
    )
    console_dir: Path = Field(
        default=_REPO_CONSOLE,
        description="The built console served at /. Change it when GShare is installed from a "
        "package rather than run from the source tree.",
    )

    bootstrap_admin_email: str | None = Field(
        default=None,
        description="The first super admin's email, used once on an empty database; unset: "
        "admin@gshare.local.",
    )
    bootstrap_admin_password: str | None = Field(
        default=None,
        description="The first super admin's initial password, which must pass the password "
        "policy. Unset: `gshare up` generates one and prints it once; `gshare migrate` creates "
        "the first admin only when this is set.",
    )
    bootstrap_admin_name: str = Field(
        default="Administrator", description="The first super admin's display name."
    )

    session_idle_timeout: timedelta = Field(
        default=timedelta(hours=8),
        description="A console sign-in ends after this long without a request. Shorten it "
        "where shared computers are common.",
    )
    session_absolute_timeout: timedelta = Field(
        default=timedelta(days=7),
        description="A console sign-in ends this long after it began, however active.",
    )
    cookie_secure: Literal["auto", "always", "never"] = Field(
        default="auto",
        description="When the sign-in cookie is marked Secure: auto, when the request came "
        "over HTTPS (X-Forwarded-Proto from a trusted proxy counts); set always behind a "
        "TLS-terminating proxy.",
    )
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
        default=15,
        ge=0,
        le=300,
        description="Seconds a read may reuse a signed-in caller's roles from the per-process "
        "cache (changes still drop it at once through NOTIFY); 0 turns the cache off.",
    )
    credits_timezone: str = Field(
        default="UTC",
        description="The time zone (such as Europe/Berlin) whose midnight on the first of each "
        "month starts the monthly refills; set it to where your organizations keep their "
        "books.",
    )
    hold_window_seconds: int = Field(
        default=3600,
        ge=60,
        le=7 * 24 * 3600,
        description="Seconds of use one credit hold covers: admission reserves the tier's price "
        "over this window and the wallet must have that much available. Longer windows "
        "reserve more and extend less often.",
    )
    refill_interval_seconds: float = Field(
        default=60,
        gt=0,
        le=3600,
        description="Seconds between the worker's looks for wallets due their monthly refill.",
    )
    dequeue_interval_seconds: float = Field(
        default=15,
        gt=0,
        le=3600,
        description="Seconds between the worker's walks of the admission queue when no freed "
        "capacity wakes it sooner; a safety net, rarely worth changing.",
    )
    fair_share_half_life_minutes: float = Field(
        default=240,
        gt=0,
        le=30 * 24 * 60,
        description="Minutes after which a user's or group's past GPU usage counts half in "
        "queue priorities; longer remembers heavy users longer.",
    )
    fair_share_interval_seconds: float = Field(
        default=60,
        gt=0,
        le=3600,
        description="Seconds between samples of GPU usage for fair-share priorities.",
    )
    starvation_limit_minutes: float = Field(
        default=120,
        gt=0,
        le=30 * 24 * 60,
        description="Minutes a queued request may wait before it goes first and reserves the next "
        "card that would fit it.",
    )
    events_retention_hours: float = Field(
        default=24,
        gt=0,
        le=90 * 24,
        description="Hours live-update events are kept for consoles that reconnect with "
        "Last-Event-ID; one away longer reloads everything.",
    )
    events_stream_seconds: float = Field(
        default=300,
        ge=5,
        le=24 * 3600,
        description="Seconds one live-update stream stays open at most before the browser "
        "reconnects.",
    )
    events_heartbeat_seconds: float = Field(
        default=15,
        gt=0,
        le=300,
        description="Seconds between comments on an idle live-update stream; keep it below your "
        "proxies' read timeout.",
    )
    events_relay_interval_seconds: float = Field(
        default=1,
        gt=0,
        le=60,
        description="Seconds between each process's passes numbering events that no local commit "
        "woke it for (those written by other processes, or before a crash).",
    )
    sessions_namespace: str = Field(
        default="gshare-sessions",
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        max_length=63,
        description="The namespace sessions run in on every cluster; it must match the "
        "operators' GSHARE_OPERATOR_NAMESPACE (the chart sets both).",
    )
    metering_interval_seconds: float = Field(
        default=60,
        gt=0,
        le=3600,
        description="Seconds between billings of running GPU sessions (each bills to the "
        "second, so this changes only how fresh balances are).",
    )
    session_reconcile_interval_seconds: float = Field(
        default=60,
        gt=0,
        le=3600,
        description="Seconds between the worker's checks for sessions that never started, went "
        "silent or lost their card (each then fails or is lost, and is settled).",
    )
    session_apply_interval_seconds: float = Field(
        default=5,
        gt=0,
        le=3600,
        description="Seconds between applies of sessions' resources to their clusters when no "
        "local change wakes the loop (changes made by other processes wait at most this).",
    )
    idle_check_interval_seconds: float = Field(
        default=60,
        gt=0,
        le=3600,
        description="Seconds between checks that warn and pause idle and over-long sessions.",
    )
    usage_rollup_interval_seconds: float = Field(
        default=60,
        gt=0,
        le=3600,
        description="Seconds between runs of the usage rollup, which counts GPU time, credits and "
        "idle time into the hourly and daily rows the usage reports read.",
    )
    usage_export_stall_seconds: float = Field(
        default=60,
        gt=0,
        le=3600,
        description="Seconds a client may stop reading a usage CSV export before the export is "
        "ended: while it streams, an export holds a database connection.",
    )
    idle_threshold_percent: float = Field(
        default=5,
        ge=0,
        le=100,
        description="GPU utilization, in percent, below which a session counts as idle.",
    )
    idle_warning_minutes: int = Field(
        default=10,
        ge=0,
        le=24 * 60,
        description="Minutes before an idle pause that the owner is warned; 0: no warning.",
    )
    metrics_stale_minutes: float = Field(
        default=5,
        gt=0,
        le=24 * 60,
        description="Minutes after which a cluster's utilization report is too old to act on: "
        "no session there is paused for idleness until a fresh one arrives.",
    )
    session_start_timeout_minutes: float = Field(
        default=15,
        gt=0,
        le=24 * 60,
        description="Minutes a session may take to run after it got its card before it fails "
        "and is settled (its pod cannot be scheduled or its image pulled); raise it for "
        "large images on slow registries.",
    )
    session_report_timeout_minutes: float = Field(
        default=30,
        gt=0,
        le=7 * 24 * 60,
        description="Minutes without a report from its cluster after which a session is lost "
        "and settled (operators re-send every status every ten minutes).",
    )
    idempotency_key_days: int = Field(
        default=7,
        ge=1,
        le=365,
        description="Days a stored Idempotency-Key answer is kept and replayed for a repeat.",
    )
    kubeconfig_store: Literal["auto", "file", "secret"] = Field(
        default="auto",
        description="Where cluster kubeconfigs are kept: 0600 files under the data dir, or "
        "Secrets in the secrets namespace; auto picks Secrets when running inside Kubernetes.",
    )
    local_cluster: str = Field(
        default="",
        pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$",
        max_length=63,
        description="When the control plane runs inside the Kubernetes cluster its sessions "
        "run in, the name the worker registers that cluster under (with the worker's own "
        "service account, kept fresh); empty: clusters are registered from the console only.",
    )
    local_sessions_domain: str = Field(
        default="sessions.gshare.local",
        max_length=200,
        pattern=r"^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
        r"(:[0-9]{1,5})?$",
        description="The sessions domain of the cluster registered by GSHARE_LOCAL_CLUSTER: "
        "session pages are served at https://<session id>.<domain>/.",
    )
    secrets_namespace: str = Field(
        default="gshare-secrets",
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        max_length=63,
        description="Inside Kubernetes, the namespace of the Secrets the control plane keeps "
        "(the internal key set, registered clusters' kubeconfigs): one that holds nothing "
        "else, so that the right to write Secrets there reaches no other credential.",
    )
    key_store: Literal["auto", "file", "secret"] = Field(
        default="auto",
        description="Where the internal signing key set is kept: a 0600 file under the data "
        "dir, or the Secret gshare-internal-keys in the secrets namespace, which API replicas "
        "and the worker share; auto picks the Secret when running inside Kubernetes.",
    )
    password_hash_concurrency: int = Field(
        default=2,
        ge=1,
        le=64,
        description="How many argon2id password hashes one process computes at once; each "
        "takes 19 MiB and one core for about 20 ms. Raise it on larger machines if sign-ins "
        "queue.",
    )
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        default="info",
        description="The lowest level logged; requests are logged at debug and info.",
    )

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
        "GSHARE_OPERATOR_INGRESS_CLASS",
        "GSHARE_OPERATOR_INGRESS_NAMESPACE",
        "GSHARE_OPERATOR_STORAGE_CLASS",
        "GSHARE_OPERATOR_NODE_CIDRS",
        "GSHARE_SESSIONS_DOMAIN",
        "GSHARE_SESSION_AUTH_URL",
        "GSHARE_SESSION_SIGNIN_URL",
        "GSHARE_DEMO_NODES",
        "GSHARE_DEMO_NODE",
        "GSHARE_DEMO_CARDS",
        "GSHARE_DEMO_SESSIONS_PORT",
        "GSHARE_DEMO_JUPYTER",
        "GSHARE_DEMO_CODE_SERVER",
        "GSHARE_TESTENV_CACHE",
        # The images and the Compose path (hack/images.sh, hack/compose.sh, compose.yaml),
        # which .env may also hold.
        "GSHARE_IMAGE_PREFIX",
        "GSHARE_IMAGE_TAG",
        "GSHARE_DEBIAN_MIRROR",
        "GSHARE_COMPOSE_PROJECT",
        "GSHARE_COMPOSE_ADDRESS",
        "GSHARE_COMPOSE_PORT",
        "GSHARE_COMPOSE_ENV",
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
