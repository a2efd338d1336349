"""Which passwords are acceptable: long, not common, not built from the user's own details."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from zxcvbn import zxcvbn

MIN_LENGTH = 12
MAX_LENGTH = 256
MIN_SCORE = 3  # zxcvbn's 0..4; 3 is "safely unguessable" for an online attack
_ESTIMATE_CHARS = 100  # the estimator is quadratic; the first 100 characters decide


@dataclass(frozen=True)
class PasswordVerdict:
    acceptable: bool
    score: int
    warning: str = ""
    suggestions: list[str] = field(default_factory=list)


def _personal_words(email: str | None, name: str | None) -> list[str]:
    words: list[str] = []
    if email:
        local, _, domain = email.lower().partition("@")
        words += [email.lower(), local, *re.split(r"[._+\-]", local), *domain.split(".")]
    if name:
        words += [name.lower(), *name.lower().split()]
    return [w for w in dict.fromkeys(words) if len(w) >= 4]


def judge_password(
    password: str, *, email: str | None = None, name: str | None = None
) -> PasswordVerdict:
    if len(password) < MIN_LENGTH:
        return PasswordVerdict(False, 0, f"Use at least {MIN_LENGTH} characters.")
    if len(password) > MAX_LENGTH:
        return PasswordVerdict(False, 0, f"Use at most {MAX_LENGTH} characters.")
    personal = _personal_words(email, name)
    sample = password[:_ESTIMATE_CHARS]
    result = zxcvbn(sample, user_inputs=personal, max_length=_ESTIMATE_CHARS)
    score = int(result["score"])
    feedback = result.get("feedback") or {}
    warning = str(feedback.get("warning") or "")
    suggestions = [str(s) for s in feedback.get("suggestions") or []]
    lowered = password.lower()
    if any(word in lowered for word in personal):
        return PasswordVerdict(
            False,
            min(score, 1),
            "Do not build the password from your email address or name.",
            suggestions,
        )
    if score < MIN_SCORE:
        return PasswordVerdict(
            False,
            score,
            warning or "This password is too easy to guess.",
            suggestions or ["Add more words that are less common."],
        )
    return PasswordVerdict(True, score, warning, suggestions)
