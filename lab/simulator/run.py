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
    from_minute: float | None = None,
    to_minute: float | None = None,
) -> tuple[dict[str, Any], dict[str, tuple[float, float]]]:
    """(JSON-ready document, {strategy: (wall seconds, simulated requests per second)}).

    Every strategy runs on the same generated traffic and the same market draws; the
    document depends only on (scenario, strategies, seed, requests, window). With
    ``from_minute``/``to_minute`` the figures are those of the requests arriving in
    [from, to) (and platform spend incurred then); the simulation still runs whole.
    """
    if from_minute is not None and from_minute < 0:
        raise ValueError("--from-minute must be >= 0")
    if to_minute is not None and to_minute <= (from_minute or 0.0):
        raise ValueError("--to-minute must be after --from-minute")
    window = None
    if from_minute is not None or to_minute is not None:
        window = (60.0 * (from_minute or 0.0), None if to_minute is None else 60.0 * to_minute)
    count = requests or scenario.default_requests
    traffic = generate_traffic(scenario, seed, count)
    results: dict[str, Any] = {}
    speeds: dict[str, tuple[float, float]] = {}
    for name in strategies:
        engine = Engine(
            scenario, traffic, name, seed, progress=progress(name) if progress else None
        )
        metrics = engine.run()
        summary = metrics.summary(window)
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
        "window": {"from_minute": from_minute or 0.0, "to_minute": to_minute},
    }
    return document, speeds
