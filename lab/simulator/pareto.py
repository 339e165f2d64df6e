"""The Pareto check (issue 43, ``simulate --pareto``): is smart dominated by a strategy
that cannot see the future?

A strategy *dominates* smart on one run (scenario, seed) when it is both more than 1%
cheaper per 1,000 requests, platform spend included (probes, cancelled hedge legs,
retried cut replies), and no slower at TTFT p90 in every prompt-size bucket. A bucket
neither served is skipped; one only smart served counts as slower for the other, one
only the other served as no slower. Strategies that see the future (``oracle``) are
bounds, not routers, and are left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .metrics import BUCKET_NAMES
from .strategies import STRATEGIES

CHEAPER_BY = 0.01  # "more than 1% cheaper"
SMART = "smart"

Summary = dict[str, Any]


@dataclass(frozen=True)
class Figures:
    """What the rule compares of one strategy's run."""

    cost_usd_per_1k: float  # customer + platform, per 1,000 requests
    p90_by_bucket: dict[str, float | None]  # TTFT p90 (s); None: nothing served there
    failed_share: float = 0.0  # shown, not judged


@dataclass(frozen=True)
class Verdict:
    """One strategy against smart on one run."""

    strategy: str
    figures: Figures
    cost_ratio: float | None  # the strategy's cost / smart's
    cheaper: bool  # more than CHEAPER_BY cheaper
    no_slower: dict[str, bool]  # per bucket compared: p90 <= smart's
    dominates: bool

    @property
    def slower_buckets(self) -> list[str]:
        return [bucket for bucket, ok in self.no_slower.items() if not ok]


@dataclass(frozen=True)
class RunCheck:
    """The verdicts of one (scenario, seed)."""

    scenario: str
    seed: int
    requests: int
    smart: Figures
    verdicts: list[Verdict]

    @property
    def dominated_by(self) -> list[str]:
        return [verdict.strategy for verdict in self.verdicts if verdict.dominates]


def figures_of(summary: Summary) -> Figures:
    """The compared figures from a strategy's ``simulate()`` summary."""
    by_bucket = summary["ttft_s_by_bucket"]
    return Figures(
        cost_usd_per_1k=summary["total_cost_usd_per_1k_requests"],
        p90_by_bucket={bucket: by_bucket[bucket]["p90"] for bucket in BUCKET_NAMES},
        failed_share=summary.get("failed_share") or 0.0,
    )


def no_slower(other_p90: float | None, smart_p90: float | None) -> bool | None:
    """Whether the other strategy's p90 in a bucket is no slower than smart's (None: the
    bucket is empty for both and is not compared)."""
    if other_p90 is None and smart_p90 is None:
        return None
    if smart_p90 is None:
        return True
    if other_p90 is None:
        return False
    return other_p90 <= smart_p90


def judge(strategy: str, other: Figures, smart: Figures, cheaper_by: float = CHEAPER_BY) -> Verdict:
    """The dominance rule: ``other`` dominates ``smart`` when it is more than
    ``cheaper_by`` cheaper and no slower at TTFT p90 in every bucket."""
    ratio = other.cost_usd_per_1k / smart.cost_usd_per_1k if smart.cost_usd_per_1k else None
    cheaper = other.cost_usd_per_1k < (1 - cheaper_by) * smart.cost_usd_per_1k
    compared = {
        bucket: no_slower(other.p90_by_bucket.get(bucket), smart.p90_by_bucket.get(bucket))
        for bucket in BUCKET_NAMES
    }
    flags = {bucket: ok for bucket, ok in compared.items() if ok is not None}
    return Verdict(strategy, other, ratio, cheaper, flags, cheaper and all(flags.values()))


def pareto_strategies() -> list[str]:
    """Smart first, then every strategy that cannot see the future."""
    others = [n for n, cls in STRATEGIES.items() if n != SMART and not cls.sees_the_future]
    return [SMART, *others]


def check_document(document: dict[str, Any]) -> RunCheck:
    """The verdicts of one ``simulate()`` document (which must include smart)."""
    summaries: dict[str, Summary] = document["strategies"]
    smart = figures_of(summaries[SMART])
    verdicts = [
        judge(name, figures_of(summary), smart)
        for name, summary in summaries.items()
        if name != SMART and not STRATEGIES[name].sees_the_future
    ]
    return RunCheck(document["scenario"], document["seed"], document["requests"], smart, verdicts)
