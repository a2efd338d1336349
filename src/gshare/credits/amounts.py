"""Credit amounts: integer micro-credits inside, decimal strings with up to six places outside."""

from __future__ import annotations

import re
from decimal import Decimal

MICRO = 1_000_000  # micro-credits per credit
# A trillion credits: far above any real figure, and a balance of nine of them still fits a
# PostgreSQL bigint (the ledger refuses a balance that would not).
MAX_AMOUNT = 10**12 * MICRO
_DECIMAL = re.compile(r"[0-9]+(\.[0-9]+)?", re.ASCII)


class AmountError(ValueError):
    pass


def parse_amount(text: str, *, allow_zero: bool = False) -> int:
    """'12.5' -> 12_500_000. Only ASCII digits with an optional decimal point: no signs,
    exponents, separators or other scripts' digits; at most six decimals; not zero."""
    cleaned = text.strip()
    if not _DECIMAL.fullmatch(cleaned):
        raise AmountError("Amounts are positive decimals such as 12.5, with at most 6 decimals.")
    value = Decimal(cleaned)
    exponent = value.as_tuple().exponent
    if isinstance(exponent, int) and exponent < -6:
        raise AmountError("Amounts have at most 6 decimals.")
    micro = int(value * MICRO)
    if micro == 0 and not allow_zero:
        raise AmountError("The amount must be more than zero.")
    if micro > MAX_AMOUNT:
        raise AmountError("The amount is too large.")
    return micro


def format_amount(micro: int) -> str:
    """12_500_000 -> '12.5'; negative amounts keep their sign."""
    sign = "-" if micro < 0 else ""
    whole, frac = divmod(abs(micro), MICRO)
    if frac == 0:
        return f"{sign}{whole}"
    return f"{sign}{whole}.{frac:06d}".rstrip("0")


def hold_amount(rate_per_hour: int, window_seconds: int) -> int:
    """What a hold reserves: the hourly rate over the window, rounded up to a micro-credit."""
    return -(-rate_per_hour * window_seconds // 3600)
