"""What hedging buys (issue 43, "hedge value"): smart with hedging on and off, and on a
no-stall twin of the market, per seed, as a markdown table.

    python -m lab.simulator.hedge_value --scenario stalls --twin stalls-none --seeds 1 2 3
    python -m lab.simulator.hedge_value --scenario deepseek-v4.1-flash --seeds 1 2 3 \\
        --gateway hedge_trigger='"flat"'

Columns: streams >32k TTFT p90 with hedging, without, and on the twin (and the ratio
to the twin); hedge spend (cancelled legs) and the largest day's share of the daily
budget; hedge legs whose primary was stalled / not (the market's draw); the share of
the 32k-128k hedge spend on primaries that were not stalled; hedge spend per second of
p90 saved (spend / (p90 off - p90 on)); long streams' customer cost per 1k and the
platform's hedge spend as a share of what customers paid for long streams.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from .cli import with_gateway
from .run import simulate
from .scenario import Scenario, load_scenario

HEADER = (
    "| seed | >32k p90 on / off (s) | twin p90 (s) | on / twin | hedge spend | max day / budget "
    "| legs stalled / not | 32k-128k spend not stalled | $ per s of p90 saved "
    "| long cost / 1k | hedge / long cost |\n" + "|---" * 11 + "|"
)


def smart_summary(scenario: Scenario, seed: int, requests: int | None) -> dict[str, Any]:
    document, _ = simulate(scenario, ["smart"], seed=seed, requests=requests)
    return document["strategies"]["smart"]


def long_p90(summary: dict[str, Any]) -> float:
    return summary["long_streams"]["ttft_s"]["p90"]


def row(seed: int, on: dict, off: dict, twin: dict | None, scenario: Scenario) -> str:
    """One seed's figures (see the module doc)."""
    hedges, spend = on["hedges"], on["hedge_spend_usd"]
    p90_on, p90_off = long_p90(on), long_p90(off)
    saved = p90_off - p90_on
    per_s = f"${spend / saved:.3f}" if saved > 0 else "- (none saved)"
    twin_p90 = "-" if twin is None else f"{long_p90(twin):.2f}"
    ratio = "-" if twin is None else f"{p90_on / long_p90(twin):.2f}x"
    daily = float(scenario.gateway["hedge_budget_usd_per_day"])
    by_day = on.get("hedge_budget_spent_by_day") or {"-": 0.0}
    day_share = max(by_day.values()) / daily if daily else 0.0
    long = on["long_streams"]
    long_cost = long["cost_usd_per_1k"] * long["n"] / 1000
    cells = [
        str(seed),
        f"{p90_on:.2f} / {p90_off:.2f}",
        twin_p90,
        ratio,
        f"${spend:.3f}",
        f"{100 * day_share:.0f}%",
        f"{hedges['legs_primary_stalled']} / {hedges['legs_primary_not_stalled']}",
        f"{100 * hedges['spend_32k_128k_not_stalled_share']:.0f}%",
        per_s,
        f"${long['cost_usd_per_1k']:.3f}",
        f"{100 * spend / (long_cost or 1):.1f}%",
    ]
    return "| " + " | ".join(cells) + " |"


def table(
    name: str,
    twin_name: str | None,
    seeds: Sequence[int],
    gateway: Sequence[str] = (),
    requests: int | None = None,
) -> str:
    """The markdown table of ``name`` (and its no-stall twin) over ``seeds``."""
    scenario = with_gateway(load_scenario(name), gateway)
    unhedged = with_gateway(scenario, ["hedging=false"])
    twin = None if twin_name is None else with_gateway(load_scenario(twin_name), gateway)
    lines = [HEADER]
    for seed in seeds:
        on = smart_summary(scenario, seed, requests)
        off = smart_summary(unhedged, seed, requests)
        twin_summary = None if twin is None else smart_summary(twin, seed, requests)
        lines.append(row(seed, on, off, twin_summary, scenario))
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hedge_value", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--twin", default=None, help="the same market without stalls")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--requests", type=int, default=None)
    parser.add_argument("--gateway", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    sys.stdout.write(table(args.scenario, args.twin, args.seeds, args.gateway, args.requests))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
