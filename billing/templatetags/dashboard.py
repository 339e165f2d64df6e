"""Formatting filters for the dashboard."""

from decimal import Decimal

from django import template

register = template.Library()


@register.filter
def usd(value) -> str:
    """Dollars with enough places for sub-cent calls: 0.000123."""
    if value is None:
        return "0"
    return f"{Decimal(value):.6f}"


@register.filter
def ms(value) -> str:
    if value is None:
        return "—"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value} ms"
