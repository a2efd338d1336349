"""Configuration parsing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from gshare.kit.settings import Settings, describe


def test_timeouts_take_seconds_or_iso_durations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GSHARE_SESSION_IDLE_TIMEOUT", "3600")
    monkeypatch.setenv("GSHARE_SESSION_ABSOLUTE_TIMEOUT", "P2D")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.session_idle_timeout == timedelta(hours=1)
    assert settings.session_absolute_timeout == timedelta(days=2)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("GSHARE_PORT", "0"),
        ("GSHARE_DATABASE_URL", "mysql://x/y"),
        ("GSHARE_SESSION_IDLE_TIMEOUT", "-5"),
        ("GSHARE_COOKIE_SECURE", "sometimes"),
    ],
)
def test_bad_values_name_their_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError) as info:
        Settings(_env_file=None)  # type: ignore[call-arg]
    assert describe(info.value).startswith(f"invalid configuration: {name}:")
