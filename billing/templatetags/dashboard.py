"""Formatting filters for the dashboard (money rules in billing/money.py)."""

from __future__ import annotations

from django import template
from django.utils.html import conditional_escape
from django.utils.safestring import mark_safe

from ..money import decimal_str, usd_short
from ..provider_colours import provider_index

register = template.Library()
# Attempts that got no HTTP response: what happened instead, in the HTTP column.
_NO_RESPONSE = {"connect_error": "—conn", "timeout_error": "—timeout"}


@register.filter
def usd(value) -> str:
    """Short dollars: ``$0.0000102``, ``$1,234.50`` (plain text, for admin and titles)."""
    return usd_short(value)


@register.filter
def money(value) -> str:
    """Short dollars with the exact value on hover: ``<span title="0.0000102 USD">``."""
    return mark_safe(_money_html(value))  # noqa: S308 (digits, "$", ",", ".", "-" only)


def _money_html(value) -> str:
    # decimal_str and usd_short write only digits, "$", ",", "." and "-": nothing to
    # escape (format_html would return the same text, ~5 times slower).
    exact = decimal_str(value)
    return f'<span class="money" title="{exact} USD" data-exact="{exact}">{usd_short(value)}</span>'


@register.filter
def exact(value) -> str:
    return decimal_str(value)


@register.filter
def num(value) -> str:
    """An integer with thousands separators: 150,012."""
    if value is None:
        return "—"
    return f"{int(value):,}"


@register.filter
def percent(value) -> str:
    return "—" if value is None else f"{value:.0f}%"


@register.filter
def ms(value) -> str:
    if value is None:
        return "—"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:,} ms"


@register.filter
def savings_text(savings) -> str:
    """ "$0.0031 · 62% below list / $0.0052 below the cheapest-input route"."""
    parts = []
    if savings.vs_list is not None:
        if savings.vs_list >= 0:
            share = f"{savings.vs_list_percent:.0f}%"
            parts.append(f"{usd_short(savings.vs_list)} · {share} below list")
        else:
            parts.append(f"{usd_short(-savings.vs_list)} above list")
    if savings.vs_cheapest is not None:
        if savings.vs_cheapest == 0:
            parts.append("the cheapest-input route's price")
        elif savings.vs_cheapest > 0:
            parts.append(f"{usd_short(savings.vs_cheapest)} below the cheapest-input route")
        else:
            amount = usd_short(-savings.vs_cheapest)
            parts.append(f"{amount} above the cheapest-input route (paid for speed)")
    return " / ".join(parts) or "—"


@register.filter
def key_limits(api_key) -> str:
    """Every limit of a key in one line: "monthly $20.00 · daily $2.50 · 60 rpm · 100,000
    tpm · 4 at once · models: a, b" ("none" without any; the expiry is in Status)."""
    parts = []
    if api_key.monthly_limit_usd is not None:
        parts.append(f"monthly {usd_short(api_key.monthly_limit_usd)}")
    if api_key.daily_limit_usd is not None:
        parts.append(f"daily {usd_short(api_key.daily_limit_usd)}")
    rates = (
        (api_key.rate_limit_rpm, "rpm"),
        (api_key.rate_limit_tpm, "tpm"),
        (api_key.max_concurrent, "at once"),
    )
    for value, unit in rates:
        if value:
            parts.append(f"{value:,} {unit}")
    if api_key.allowed_models:
        parts.append("models: " + ", ".join(api_key.allowed_models))
    return " · ".join(parts) or "none"


@register.filter
def absolute(value):
    return None if value is None else abs(value)


@register.filter
def premium_text(premium) -> str:
    """What a premium over the cheapest-input route bought: "$0.0207 paid for speed on 12
    calls: first tokens 14.20 s sooner in all (1.18 s a call), since 2026-11-01"."""
    text = f"{usd_short(premium.paid)} paid for speed on {premium.calls:,} calls"
    if premium.measured_calls:
        text += (
            f": first tokens {ms(premium.ttft_saved_ms)} sooner in all "
            f"({ms(premium.per_call_ms)} a call)"
        )
    if premium.unmeasured:
        text += f"; the cheapest route's speed not measured for {premium.unmeasured:,}"
    return f"{text}, since {premium.since:%Y-%m-%d}"


@register.filter
def share(value) -> str:
    """A fraction as a percentage: 0.125 -> 12.5%."""
    return "—" if value is None else f"{value:.1%}"


# A Usage breakdown table (``usage_breakdown``) by its CSV ``by``: its title, label column,
# the row field its ``data-<by>`` attribute holds, the field shown, and the label of a
# row without one.
_BREAKDOWNS = {
    "provider": ("Per provider", "Provider", "provider_slug", "provider_slug", "(not served)"),
    "key": ("Per API key", "Key", "api_key_id", "api_key__name", "(deleted key)"),
    "model": ("Per model", "Model", "model_slug", "model_slug", ""),
}


@register.inclusion_tag("dashboard/usage_breakdown.html")
def usage_breakdown(by: str, rows: list[dict], query: str, totals: dict | None = None) -> dict:
    """One Usage table of spend per provider, key or model (``by``), with its CSV link;
    ``totals``, if given, is its footer."""
    title, column, key_field, label_field, missing = _BREAKDOWNS[by]
    return {
        "by": by,
        "title": title,
        "column": column,
        "query": query,
        "totals": totals,
        "rows": [(row, row[key_field], row[label_field] or missing) for row in rows],
    }


@register.simple_tag
def usage_cells(row: dict, label, label_name: str) -> str:
    """The eight cells of a Usage table row (label, calls, tokens, spend, savings), built
    in Python: one call a row instead of an included template's ~20 nodes, which made
    the 366-day per-day table the slowest part of the Usage page."""
    savings = row["savings"]
    if savings.vs_list is not None:
        vs_list = (
            f"{_money_html(savings.vs_list)} <small>{percent(savings.vs_list_percent)}</small>"
        )
    else:
        vs_list = "—"
    vs_cheapest = _money_html(savings.vs_cheapest) if savings.vs_cheapest is not None else "—"
    # Only the label and its name can hold text to escape: num, percent and _money_html
    # write digits and punctuation (the same HTML format_html built, in a fraction of
    # the time: the 366-row per-day table).
    return mark_safe(  # noqa: S308
        f'<td data-label="{conditional_escape(label_name)}">{conditional_escape(label)}</td>'
        f'<td class="num" data-label="Calls">{num(row["calls"])}</td>'
        f'<td class="num" data-label="Input">{num(row["prompt"])}</td>'
        f'<td class="num" data-label="Cached">{num(row["cached"])}</td>'
        f'<td class="num" data-label="Output">{num(row["completion"])}</td>'
        f'<td class="num" data-label="Spend">{_money_html(row["cost"])}</td>'
        f'<td class="num saved" data-label="Saved vs list">{vs_list}</td>'
        f'<td class="num" data-label="vs cheapest-input">{vs_cheapest}</td>'
    )


@register.filter
def provider_class(slug) -> str:
    """``prov prov-N``: the provider's colour swatch (billing/provider_colours.py)."""
    return f"prov prov-{provider_index(slug)}" if slug else ""


@register.filter
def attempt_http(attempt) -> str:
    """The HTTP status of every attempt: the upstream's, 200 for a success that kept
    none, "—conn" when no response came (connect error, timeout)."""
    if attempt.http_status:
        return str(attempt.http_status)
    if attempt.outcome == "success":
        return "200"
    return _NO_RESPONSE.get(attempt.outcome, "—")


@register.filter
def model_breaks(slug) -> str:
    """A model slug that may wrap after its "/" and "-" (never cut): ``<wbr>`` there."""
    text = conditional_escape(slug or "")
    return mark_safe(text.replace("/", "/<wbr>").replace("-", "-<wbr>"))  # noqa: S308


@register.filter
def uptime(value) -> str:
    """An uptime percentage (99.5 -> 99.5%); "no calls" without a measurement."""
    return "no calls" if value is None else f"{value:g}%"
