"""Markdown tables of simulator runs, before/after (docs/simulator.md, issue 10).

    python -m lab.simulator --scenario S --json > after.json   (and before.json)
    python -m lab.simulator.compare before.json after.json

One row per strategy and side: headline cost per 1,000 requests (customer + platform),
the customer's and the platform's share, and TTFT p50/p90 per prompt-size bucket.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

BUCKETS = ("<8k", "8k-32k", "32k-128k", ">128k")


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:.3f}"


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _total(summary: dict[str, Any]) -> float:
    """Customer + platform per 1k requests (documents written before the headline key
    existed carry its two parts)."""
    if "total_cost_usd_per_1k_requests" in summary:
        return summary["total_cost_usd_per_1k_requests"]
    return summary["cost_usd_per_1k_requests"] + summary["platform_usd_per_1k_requests"]


def row(side: str, name: str, summary: dict[str, Any]) -> str:
    ttft = summary["ttft_s_by_bucket"]
    cells = [
        f"{name} ({side})" if side else name,
        _usd(_total(summary)),
        _usd(summary["cost_usd_per_1k_requests"]),
        _usd(summary["platform_usd_per_1k_requests"]),
        *(f"{_s(ttft[b]['p50'])} / {_s(ttft[b]['p90'])}" for b in BUCKETS),
    ]
    return "| " + " | ".join(cells) + " |"


def table(documents: list[tuple[str, dict[str, Any]]]) -> str:
    """One table; ``documents`` = [(side label, simulate() document), ...]."""
    head = (
        "| strategy | cost/1k incl. platform | customer | platform | "
        + " | ".join(f"TTFT {b} p50 / p90 (s)" for b in BUCKETS)
        + " |"
    )
    lines = [head, "|" + "---|" * (4 + len(BUCKETS))]
    names = list(documents[-1][1]["strategies"])
    for name in names:
        for side, document in documents:
            summary = document["strategies"].get(name)
            if summary is not None:
                lines.append(row(side, name, summary))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    docs = [json.loads(Path(p).read_text()) for p in argv]
    sides = ["before", "after"] if len(docs) == 2 else [""] * len(docs)
    first = docs[-1]
    print(f"{first['scenario']}, seed {first['seed']}, {first['requests']} requests\n")
    print(table(list(zip(sides, docs, strict=True))))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
