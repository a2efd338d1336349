"""Password hashing with argon2id (OWASP: m=19 MiB, t=2, p=1), off the event loop, bounded."""

from __future__ import annotations

import anyio
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

HASHER = PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1)

# Each hash holds 19 MiB for tens of milliseconds; the limiter caps memory and CPU per process.
_limiter: anyio.CapacityLimiter | None = None
_limit = 2


def configure(concurrency: int) -> None:
    global _limit, _limiter
    _limit = concurrency
    _limiter = None


def _get_limiter() -> anyio.CapacityLimiter:
    global _limiter
    if _limiter is None:
        _limiter = anyio.CapacityLimiter(_limit)
    return _limiter


def hash_password_sync(password: str) -> str:
    return HASHER.hash(password)


def _verify_sync(stored: str, password: str) -> bool:
    try:
        return HASHER.verify(stored, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


async def hash_password(password: str) -> str:
    return await anyio.to_thread.run_sync(hash_password_sync, password, limiter=_get_limiter())


async def verify_password(stored: str, password: str) -> bool:
    return await anyio.to_thread.run_sync(_verify_sync, stored, password, limiter=_get_limiter())


def needs_rehash(stored: str) -> bool:
    return HASHER.check_needs_rehash(stored)


# Verified against when the email is unknown, so both answers take the same time.
DUMMY_HASH = hash_password_sync("an unguessable placeholder that no account uses")
