"""Shared runs (cached per session: several tests read the same simulation)."""

from __future__ import annotations

from functools import cache
from typing import Any

from lab.simulator import load_scenario, simulate


@cache
def document(scenario: str, strategies: tuple[str, ...], requests: int, seed: int = 1) -> Any:
    """The JSON document of a run (with timeline), computed once per arguments."""
    result, _ = simulate(
        load_scenario(scenario), list(strategies), seed=seed, requests=requests, timeline=True
    )
    return result


def summary(scenario: str, strategy: str, requests: int, seed: int = 1) -> dict[str, Any]:
    return document(scenario, (strategy,), requests, seed)["strategies"][strategy]
