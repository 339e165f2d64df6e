"""The issue-43 conversation table (docs/simulator.md, docs/routing.md), one command:

    python -m lab.simulator.horizon_table [--seeds 1 2 3] [--requests N] SCENARIO ...

Per scenario and seed: smart with the conversation-horizon rule off (before) and on
(after), and the baselines ``cheapest-input`` and ``litellm-latency``: cost per 1,000
requests (customer + platform), TTFT p90, each provider's share of the follow-up turns
(those with at least 0.5%), and how many times cheaper smart is than each baseline.
"""

from __future__ import annotations

import argparse
from typing import Any

from .cli import with_gateway
from .run import simulate
from .scenario import load_scenario

BASELINES = ("cheapest-input", "litellm-latency")


def _cost(summary: dict[str, Any]) -> float:
    return summary["total_cost_usd_per_1k_requests"]


def _runs(name: str, seed: int, requests: int | None) -> tuple[dict, dict, dict]:
    """(smart before, smart after, baselines) of one scenario and seed."""
    off = with_gateway(load_scenario(name), ["conversation_horizon=false"])
    before = simulate(off, ["smart"], seed=seed, requests=requests)[0]["strategies"]["smart"]
    after_doc = simulate(load_scenario(name), ["smart", *BASELINES], seed=seed, requests=requests)
    strategies = after_doc[0]["strategies"]
    return before, strategies["smart"], strategies


def table_rows(name: str, seed: int, requests: int | None) -> list[str]:
    before, after, strategies = _runs(name, seed, requests)
    rows = []
    for side, smart in (("before", before), ("after", after)):
        ratios = " / ".join(f"{_cost(strategies[b]) / _cost(smart):.2f}x" for b in BASELINES)
        rows.append(
            f"| {name} | {seed} | smart ({side}) | ${_cost(smart):.3f} | "
            f"{smart['ttft_s']['p90']:.2f} | {_shares(smart['followup_share'])} | {ratios} |"
        )
    return rows


def _shares(shares: dict[str, float]) -> str:
    ordered = sorted(shares.items(), key=lambda item: -item[1])
    return ", ".join(f"{slug} {100 * share:.1f}%" for slug, share in ordered if share >= 0.005)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="+")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--requests", type=int, default=None)
    args = parser.parse_args(argv)
    print(
        "| scenario | seed | strategy | cost/1k incl. platform | TTFT p90 (s) | "
        "follow-up turns per provider | cheaper than cheapest-input / litellm-latency |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in args.scenarios:
        for seed in args.seeds:
            print("\n".join(table_rows(name, seed, args.requests)), flush=True)


if __name__ == "__main__":
    main()
