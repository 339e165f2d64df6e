"""R8's figures on the calibrated market (``simulate --r8``; product.md R8 and "Decisions").

Per seed, smart against ``cheapest-input`` (the seed's "before"):

- TTFT p50 at 32k-128k and >128k, and how many times lower smart's is (>= 5x, >= 10x);
- 1,000 long streams (streamed, >= 32k prompt tokens): what customers pay, and how many
  times cheaper smart is (>= 2.5x; R8's cost is customer cost);
- the platform spend those long streams cause (their cancelled hedge legs and their part
  of the probes of 32k+ sizes) as a share of that customer cost (<= 10%);
- smart's long-stream TTFT p90 (below the seed's 8.7 s).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

R8_SCENARIO = "deepseek-v4.1-flash"
R8_SEEDS = (1, 2, 3)
BEFORE = "cheapest-input"
R8_STRATEGIES = ("smart", BEFORE)


@dataclass(frozen=True)
class R8Figures:
    """R8's figures of one run (smart and cheapest-input on the same traffic)."""

    scenario: str
    seed: int
    requests: int
    p50_32k_128k: tuple[float | None, float | None]  # (smart, cheapest-input), seconds
    p50_over_128k: tuple[float | None, float | None]
    long_stream_cost_per_1k: tuple[float, float]  # customer cost of 1,000 long streams
    long_stream_platform_share: float | None  # smart's platform spend / customer cost
    long_stream_platform_split: tuple[float, float]  # (hedge legs, probes) per 1,000
    long_stream_p90: float | None  # smart, seconds

    @property
    def p50_32k_128k_lower(self) -> float | None:
        return _times(*reversed(self.p50_32k_128k))

    @property
    def p50_over_128k_lower(self) -> float | None:
        return _times(*reversed(self.p50_over_128k))

    @property
    def long_stream_cheaper(self) -> float | None:
        return _times(*reversed(self.long_stream_cost_per_1k))


def _times(before: float | None, after: float | None) -> float | None:
    """How many times ``after`` is below ``before``."""
    return None if before is None or not after else before / after


# (label, target text, the figure judged, whether it meets the target)
Target = tuple[str, str, Callable[[R8Figures], float | None], Callable[[float], bool]]
TARGETS: list[Target] = [
    ("TTFT p50 32k-128k, x lower", ">= 5x", lambda f: f.p50_32k_128k_lower, lambda x: x >= 5),
    ("TTFT p50 >128k, x lower", ">= 10x", lambda f: f.p50_over_128k_lower, lambda x: x >= 10),
    ("long streams, x cheaper", ">= 2.5x", lambda f: f.long_stream_cheaper, lambda x: x >= 2.5),
    (
        "platform / customer, long streams",
        "<= 10%",
        lambda f: f.long_stream_platform_share,
        lambda x: x <= 0.10,
    ),
    ("long-stream TTFT p90", "< 8.7 s", lambda f: f.long_stream_p90, lambda x: x < 8.7),
]


def r8_figures(document: dict[str, Any]) -> R8Figures:
    """R8's figures from a ``simulate()`` document with smart and cheapest-input."""
    smart, before = (document["strategies"][name] for name in R8_STRATEGIES)

    def p50(summary: dict[str, Any], bucket: str) -> float | None:
        return summary["ttft_s_by_bucket"][bucket]["p50"]

    return R8Figures(
        scenario=document["scenario"],
        seed=document["seed"],
        requests=document["requests"],
        p50_32k_128k=(p50(smart, "32k-128k"), p50(before, "32k-128k")),
        p50_over_128k=(p50(smart, ">128k"), p50(before, ">128k")),
        long_stream_cost_per_1k=(
            smart["long_streams"]["cost_usd_per_1k"],
            before["long_streams"]["cost_usd_per_1k"],
        ),
        long_stream_platform_share=smart["long_streams"]["platform_share_of_cost"],
        long_stream_platform_split=(
            smart["long_streams"].get("platform_hedge_usd_per_1k") or 0.0,
            smart["long_streams"].get("platform_probes_usd_per_1k") or 0.0,
        ),
        long_stream_p90=smart["long_streams"]["ttft_s"]["p90"],
    )


def met(figures: R8Figures) -> dict[str, bool]:
    """Each target's label -> whether this run meets it (a missing figure does not)."""
    out = {}
    for label, _, value_of, meets in TARGETS:
        value = value_of(figures)
        out[label] = value is not None and meets(value)
    return out


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _x(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}x"


def _pair(values: tuple[float | None, float | None]) -> str:
    return f"{_s(values[0])} / {_s(values[1])}"


def _share(f: R8Figures) -> str:
    """The long streams' platform spend as a share of their customer cost, split."""
    share, customer = f.long_stream_platform_share, f.long_stream_cost_per_1k[0]
    if share is None or not customer:
        return "-"
    hedge, probes = (100 * usd / customer for usd in f.long_stream_platform_split)
    return f"{100 * share:.1f}% (hedge legs {hedge:.1f}% + probes {probes:.1f}%)"


def _cells(f: R8Figures) -> list[str]:
    ok = met(f)
    flags = ["" if ok[label] else " NOT MET" for label, *_ in TARGETS]
    smart_cost, before_cost = f.long_stream_cost_per_1k
    return [
        f"{_pair(f.p50_32k_128k)} ({_x(f.p50_32k_128k_lower)}){flags[0]}",
        f"{_pair(f.p50_over_128k)} ({_x(f.p50_over_128k_lower)}){flags[1]}",
        f"${smart_cost:.3f} / ${before_cost:.3f} ({_x(f.long_stream_cheaper, 2)}){flags[2]}",
        _share(f) + flags[3],
        _s(f.long_stream_p90) + flags[4],
    ]


def format_r8(runs: Sequence[R8Figures]) -> str:
    """A Markdown table: a row of targets, then one row per seed."""
    header = [
        "seed",
        "TTFT p50 32k-128k (s), smart / cheapest-input (x lower)",
        "TTFT p50 >128k (s) (x lower)",
        "1,000 long streams, customer cost, smart / cheapest-input (x cheaper)",
        "platform spend of long streams, % of their customer cost",
        "long-stream TTFT p90 (s)",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines.append("| target | " + " | ".join(target for _, target, *_ in TARGETS) + " |")
    for figures in runs:
        lines.append("| " + " | ".join([str(figures.seed), *_cells(figures)]) + " |")
    missed = [f"seed {f.seed}: {label}" for f in runs for label, ok in met(f).items() if not ok]
    head = f"R8 on {runs[0].scenario}, {runs[0].requests} requests per seed" if runs else "R8"
    verdict = "all R8 targets met" if not missed else "not met: " + "; ".join(missed)
    return f"{head}\n\n" + "\n".join(lines) + f"\n\n{verdict}\n"


def r8_json(runs: Sequence[R8Figures]) -> dict[str, Any]:
    """The JSON document of ``--r8 --json``."""
    return {
        "r8": [
            {
                **asdict(f),
                "p50_32k_128k_lower": f.p50_32k_128k_lower,
                "p50_over_128k_lower": f.p50_over_128k_lower,
                "long_stream_cheaper": f.long_stream_cheaper,
                "met": met(f),
            }
            for f in runs
        ],
        "all_met": all(all(met(f).values()) for f in runs),
    }
