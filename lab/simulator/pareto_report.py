"""Text tables and JSON of the Pareto check (``simulate --pareto``; rule in pareto.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .metrics import BUCKET_NAMES
from .pareto import CHEAPER_BY, SMART, Figures, RunCheck, Verdict
from .report import _table


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}x"


def _p90_cell(verdict: Verdict, bucket: str) -> str:
    value = _s(verdict.figures.p90_by_bucket.get(bucket))
    flag = verdict.no_slower.get(bucket)
    return value if flag is None else f"{value} {'<=' if flag else '> '}"


def verdict_text(verdict: Verdict) -> str:
    """ "DOMINATES smart" or why not."""
    if verdict.dominates:
        return f"DOMINATES smart ({_ratio(verdict.cost_ratio)} the cost, no bucket slower)"
    reasons = []
    if not verdict.cheaper:
        reasons.append(f"not >{100 * CHEAPER_BY:g}% cheaper")
    if verdict.slower_buckets:
        reasons.append(f"slower at {', '.join(verdict.slower_buckets)}")
    return "does not: " + "; ".join(reasons)


def _row(name: str, figures: Figures, cells: list[str], ratio: str, verdict: str) -> list[str]:
    return [name, f"${figures.cost_usd_per_1k:.3f}", ratio, *cells, _pct(figures), verdict]


def _pct(figures: Figures) -> str:
    return f"{100 * figures.failed_share:.1f}%"


def format_run(check: RunCheck) -> str:
    """One (scenario, seed): smart's figures, then each strategy against them."""
    header = [
        "strategy",
        "cost/1k incl. platform",
        "vs smart",
        *(f"p90 {bucket} (s)" for bucket in BUCKET_NAMES),
        "failed",
        "verdict",
    ]
    smart_cells = [_s(check.smart.p90_by_bucket.get(b)) for b in BUCKET_NAMES]
    rows = [_row(SMART, check.smart, smart_cells, "1.000x", "-")]
    for verdict in check.verdicts:
        cells = [_p90_cell(verdict, b) for b in BUCKET_NAMES]
        rows.append(
            _row(
                verdict.strategy,
                verdict.figures,
                cells,
                _ratio(verdict.cost_ratio),
                verdict_text(verdict),
            )
        )
    head = f"{check.scenario}  seed {check.seed}  requests {check.requests}"
    return f"{head}\n{_table(header, rows, left=(0, -1))}\n"


def _summary_cell(verdict: Verdict) -> str:
    slower = len(verdict.slower_buckets)
    cell = f"{_ratio(verdict.cost_ratio)}, slower in {slower}/{len(verdict.no_slower)}"
    return f"**{cell}: dominates**" if verdict.dominates else cell


def format_summary(checks: Sequence[RunCheck]) -> str:
    """A Markdown table, one row per run: each strategy's cost ratio vs smart and in how
    many buckets its p90 is slower, and who (if anyone) dominates smart."""
    names = [verdict.strategy for verdict in checks[0].verdicts] if checks else []
    lines = [
        "| scenario | seed | " + " | ".join(names) + " | smart dominated by |",
        "|" + "---|" * (len(names) + 3),
    ]
    for check in checks:
        cells = {verdict.strategy: _summary_cell(verdict) for verdict in check.verdicts}
        row = [check.scenario, str(check.seed), *(cells.get(n, "-") for n in names)]
        row.append(", ".join(check.dominated_by) or "none")
        lines.append("| " + " | ".join(row) + " |")
    dominated = sum(bool(check.dominated_by) for check in checks)
    lines.append("")
    lines.append(f"smart dominated in {dominated} of {len(checks)} runs")
    return "\n".join(lines) + "\n"


def format_pareto(checks: Sequence[RunCheck]) -> str:
    """The whole text report: a table per run, then the summary."""
    rule = (
        f"Pareto check: a strategy dominates smart when it is more than {100 * CHEAPER_BY:g}% "
        "cheaper (cost/1k incl. platform spend) and its TTFT p90 is <= smart's in every "
        "prompt-size bucket ('<=' no slower, '>' slower)."
    )
    runs = "\n".join(format_run(check) for check in checks)
    return f"{rule}\n\n{runs}\n{format_summary(checks)}"


def _figures_json(figures: Figures) -> dict[str, Any]:
    return {
        "total_cost_usd_per_1k_requests": figures.cost_usd_per_1k,
        "ttft_p90_s_by_bucket": figures.p90_by_bucket,
        "failed_share": figures.failed_share,
    }


def _verdict_json(verdict: Verdict) -> dict[str, Any]:
    return {
        **_figures_json(verdict.figures),
        "cost_ratio_vs_smart": None if verdict.cost_ratio is None else round(verdict.cost_ratio, 5),
        "cheaper": verdict.cheaper,
        "no_slower_by_bucket": verdict.no_slower,
        "dominates_smart": verdict.dominates,
    }


def pareto_json(checks: Sequence[RunCheck]) -> dict[str, Any]:
    """The JSON document of ``--pareto --json``."""
    runs = [
        {
            "scenario": check.scenario,
            "seed": check.seed,
            "requests": check.requests,
            "smart": _figures_json(check.smart),
            "strategies": {v.strategy: _verdict_json(v) for v in check.verdicts},
            "dominated_by": check.dominated_by,
        }
        for check in checks
    ]
    return {
        "rule": {"cheaper_by": CHEAPER_BY, "buckets": list(BUCKET_NAMES), "p90": "<= smart's"},
        "runs": runs,
        "smart_dominated": any(check.dominated_by for check in checks),
    }
