"""How money is written: one place for the dashboard, the CSV and the API.

- ``decimal_str``: the exact value as a plain decimal string without trailing zeros
  (``Decimal("0.0000201900")`` -> ``"0.00002019"``), for the API, the CSV and hover text.
- ``money``: dollars and cents, more digits under a cent (``$10.00``, ``$0.0042``), for
  the sentences of 402 refusals and spend alerts.
- ``usd_short``: a human figure with a dollar sign and thousands separators: two
  decimals from $1 up, else three significant digits (``$0.0000102``, ``$0.0031``).
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

SIGNIFICANT_DIGITS = 3


def _nonzero(value) -> Decimal | None:
    """``value`` as a Decimal; None for None and for zero (both written as a bare 0)."""
    if value is None:
        return None
    number = Decimal(value)
    return number if number else None


def decimal_str(value) -> str:
    """The exact value, no exponent, no trailing zeros ("0" for zero)."""
    number = _nonzero(value)
    return "0" if number is None else format(number.normalize(), "f")


def usd_short(value) -> str:
    """``$1,234.50``, ``$0.50``, ``$0.0031``, ``$0.0000102``, ``$0``; negative as ``-$0.02``."""
    number = _nonzero(value)
    if number is None:
        return "$0"
    sign, number = ("-", -number) if number < 0 else ("", number)
    if number >= 1:
        return f"{sign}${number.quantize(Decimal('0.01'), ROUND_HALF_EVEN):,}"
    # Three significant digits below $1, at least two decimals ($0.50, not $0.5).
    exponent = number.adjusted() - SIGNIFICANT_DIGITS + 1
    rounded = number.quantize(Decimal(1).scaleb(min(exponent, -2)), ROUND_HALF_EVEN)
    text = format(rounded, "f").rstrip("0")
    whole, _, fraction = text.partition(".")
    return f"{sign}${whole}.{fraction.ljust(2, '0')}"


def money(amount: Decimal) -> str:
    """$ with cents, or more digits for amounts under a cent."""
    if amount == 0 or abs(amount) >= Decimal("0.01"):
        return f"${amount:.2f}"
    return f"${amount:.6f}".rstrip("0")
