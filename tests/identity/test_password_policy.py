"""What makes a password acceptable."""

from __future__ import annotations

import pytest

from gshare.identity.password_policy import MAX_LENGTH, MIN_LENGTH, judge_password


@pytest.mark.parametrize(
    "password",
    ["short", "password1234", "qwertyuiop123", "111111111111", "iloveyou2026"],
)
def test_common_or_short_passwords_are_refused(password: str) -> None:
    assert not judge_password(password).acceptable


def test_passwords_built_from_the_users_details_are_refused() -> None:
    verdict = judge_password(
        "lovelace-1815-engine", email="ada.lovelace@example.org", name="Ada Lovelace"
    )
    assert not verdict.acceptable
    assert "email" in verdict.warning or "name" in verdict.warning


def test_strong_passphrases_pass() -> None:
    verdict = judge_password("orbit-lantern-quiet-river-88", email="x@example.org", name="X")
    assert verdict.acceptable
    assert verdict.score >= 3


def test_length_bounds() -> None:
    assert MIN_LENGTH == 12
    assert not judge_password("Zq9!x" * 2).acceptable
    assert judge_password("Tq8#mv-" * 18 + "z").acceptable  # 127 characters
    assert not judge_password("x" * (MAX_LENGTH + 1)).acceptable
