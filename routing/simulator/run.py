"""Run several strategies on one scenario and one traffic; build the JSON document."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .engine import Engine
from .metrics import Metrics
from .scenario import Scenario
from .traffic import generate_traffic

ProgressFactory = Callable[[str], Callable[[int, int], None]]


def run_strategy(
    scenario: Scenario,
    strategy: str,
    *,
    seed: int,
    requests: int | None = None,
    progress: ProgressFactory | None = None,
) -> tuple[Metrics, Engine]:
    """One strategy on the scenario's traffic (for tests and notebooks)."""
    traffic = generate_traffic(scenario, seed, requests or scenario.default_requests)
    engine = Engine(
        scenario, traffic, strategy, seed, progress=progress(strategy) if progress else None
    )
    return engine.run(), engine


def simulate(
    scenario: Scenario,
    strategies: Sequence[str],
    *,
    seed: int,
    requests: int | None = None,
    progress: ProgressFactory | None = None,
    timeline: bool = False,
) -> tuple[dict[str, Any], dict[str, tuple[float, float]]]:
    """(JSON-ready document, {strategy: (wall seconds, simulated requests per second)}).

    Every strategy runs on the same generated traffic and the same market draws; the
    document depends only on (scenario, strategies, seed, requests).
    """
    count = requests or scenario.default_requests
    traffic = generate_traffic(scenario, seed, count)
    results: dict[str, Any] = {}
    speeds: dict[str, tuple[float, float]] = {}
    for name in strategies:
        engine = Engine(
            scenario, traffic, name, seed, progress=progress(name) if progress else None
        )
        metrics = engine.run()
        summary = metrics.summary()
        summary.update(engine.strategy.extra_summary())
        if timeline:
            summary["timeline"] = metrics.timeline()
        results[name] = summary
        speeds[name] = (engine.wall_s, len(traffic.requests) / max(engine.wall_s, 1e-9))
    document = {
        "scenario": scenario.name,
        "seed": seed,
        "requests": len(traffic.requests),
        "simulated_minutes": round(traffic.duration_s / 60, 2),
        "strategies": results,
    }
    return document, speeds
