"""Which instants a client may hand us: aware, converted to UTC, and safe to store and read back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

# A day inside Python's own limits (years 1 to 9999), so that the instant seen in any time
# zone, and a day of arithmetic on it, never overflows. timestamptz reaches far wider, so
# whatever lies in this window round-trips through PostgreSQL unchanged.
EARLIEST = datetime.min.replace(tzinfo=UTC) + timedelta(days=1)
LATEST = datetime.max.replace(tzinfo=UTC) - timedelta(days=1)


def utc_instant(value: datetime) -> datetime:
    """The same instant in UTC; ValueError when it has no time zone or lies outside the window."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("needs a time zone, such as Z or +02:00")
    try:
        utc = value.astimezone(UTC)
    except OverflowError:
        raise ValueError(_outside()) from None
    if not EARLIEST <= utc <= LATEST:
        raise ValueError(_outside())
    return utc


def _outside() -> str:
    return f"must lie between {EARLIEST.isoformat()} and {LATEST.isoformat()}"
