"""Text tables and the JSON document of a simulation (one column per strategy)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Summary = dict[str, Any]


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:.3f}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _bucket(name: str, stat: str) -> Callable[[Summary], str]:
    return lambda s: _s(s["ttft_s_by_bucket"][name][stat])


ROWS: list[tuple[str, Callable[[Summary], str]]] = [
    ("TTFT p50 (s)", lambda s: _s(s["ttft_s"]["p50"])),
    ("TTFT p90 (s)", lambda s: _s(s["ttft_s"]["p90"])),
    ("TTFT p95 (s)", lambda s: _s(s["ttft_s"]["p95"])),
    *[
        row
        for name in ("<8k", "8k-32k", "32k-128k", ">128k")
        for row in (
            (f"TTFT {name} mean (s)", _bucket(name, "mean")),
            (
                f"TTFT {name} p50/p90/p95",
                lambda s, n=name: " / ".join(
                    _s(s["ttft_s_by_bucket"][n][q]) for q in ("p50", "p90", "p95")
                ),
            ),
        )
    ],
    ("whole request p50 (s)", lambda s: _s(s["whole_request_s"]["p50"])),
    ("whole request p95 (s)", lambda s: _s(s["whole_request_s"]["p95"])),
    ("cost / 1k req. incl. platform", lambda s: _usd(s["total_cost_usd_per_1k_requests"])),
    ("  customer cost / 1k requests", lambda s: _usd(s["cost_usd_per_1k_requests"])),
    ("  platform / 1k requests", lambda s: _usd(s["platform_usd_per_1k_requests"])),
    ("cost / 1M tokens", lambda s: _usd(s["cost_usd_per_1m_tokens"])),
    ("streams >32k: cost / 1k", lambda s: _usd(s["long_streams"]["cost_usd_per_1k"])),
    ("streams >32k: TTFT mean (s)", lambda s: _s(s["long_streams"]["ttft_s"]["mean"])),
    ("streams >32k: TTFT p90 (s)", lambda s: _s(s["long_streams"]["ttft_s"]["p90"])),
    ("needed a retry", lambda s: _pct(s["retry_share"])),
    ("met a 429", lambda s: _pct(s["share_with_429"])),
    ("hedged", lambda s: _pct(s["hedged_share"])),
    ("failed (all attempts)", lambda s: _pct(s["failed_share"])),
    ("hedge spend (platform)", lambda s: _usd(s["hedge_spend_usd"])),
    ("hedge legs: primary stalled / not", lambda s: _hedge_legs(s)),
    (
        "32k-128k hedge spend, not stalled",
        lambda s: _pct(s["hedges"]["spend_32k_128k_not_stalled_share"]),
    ),
    ("probe spend (platform)", lambda s: _usd(s["probe_spend_usd"])),
    ("probe spend: most in a UTC day", lambda s: _probe_day(s)),
    ("lost on failed tries (ms/req)", lambda s: _ms(s["lost_ms_per_request"])),
    ("served fast enough", lambda s: _pct(s["fast_enough_share"])),
]


def _probe_day(summary: Summary) -> str:
    """The dearest UTC day's probe spend / the daily budget (probes not sent)."""
    days = summary.get("probe_spend_by_day") or {}
    most = _usd(max(days.values())) if days else "-"
    budget = summary.get("probe_budget_usd_per_day") or 0
    if not budget:
        return most
    return f"{most} / {_usd(budget)} ({summary.get('probes_over_budget', 0)} not sent)"


def _table(header: list[str], rows: list[list[str]], left: tuple[int, ...] = (0,)) -> str:
    """Aligned columns: those in ``left`` (indices) to the left, the others right."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    left = tuple(i % len(header) for i in left)
    lines = [
        "  ".join(
            cell.ljust(w) if i in left else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_report(document: dict[str, Any]) -> str:
    """The human-readable report: a metrics table and a provider-share table, one
    column per strategy."""
    results: dict[str, Summary] = document["strategies"]
    names = list(results)
    head = (
        f"scenario {document['scenario']}  seed {document['seed']}  "
        f"requests {document['requests']}  simulated {document['simulated_minutes']:.0f} min"
    )
    window = document.get("window") or {}
    if window.get("from_minute") or window.get("to_minute") is not None:
        until = window.get("to_minute")
        head += (
            f"  counted: arrivals in minutes {window.get('from_minute') or 0:g}"
            f"-{'end' if until is None else format(until, 'g')}"
        )
    metrics = _table(
        ["metric", *names], [[label, *(fn(results[n]) for n in names)] for label, fn in ROWS]
    )
    providers = sorted({p for n in names for p in results[n]["provider_share"]})
    shares = _table(
        ["provider share", *names],
        [[p, *(_pct(results[n]["provider_share"].get(p, 0.0)) for n in names)] for p in providers],
    )
    return f"{head}\n\n{metrics}\n\n{shares}\n{_followup_table(results, names)}"


def _followup_table(results: dict[str, Summary], names: list[str]) -> str:
    """Each provider's share of the served follow-up turns (none: no table)."""
    if not any(results[n].get("followup_turns") for n in names):
        return ""
    providers = sorted({p for n in names for p in results[n]["followup_share"]})
    rows = [
        [p, *(_pct(results[n]["followup_share"].get(p, 0.0)) for n in names)] for p in providers
    ]
    return "\n" + _table(["follow-up turn share", *names], rows) + "\n"


def _hedge_legs(summary: dict) -> str:
    """Hedge legs split by whether the market drew a stall for the primary (issue 43)."""
    hedges = summary["hedges"]
    return f"{hedges['legs_primary_stalled']} / {hedges['legs_primary_not_stalled']}"
