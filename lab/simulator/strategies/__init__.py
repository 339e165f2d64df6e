"""Routing strategies compared by the simulator (see docs/simulator.md)."""

from __future__ import annotations

from .base import SimContext, Strategy
from .baselines import CheapestEffective, CheapestInput, Fastest
from .litellm import LiteLLMLatency
from .openrouter import OpenRouterLike
from .oracle import Oracle
from .smart import Smart

STRATEGIES: dict[str, type[Strategy]] = {
    cls.name: cls
    for cls in (
        Smart,
        CheapestInput,
        CheapestEffective,
        Fastest,
        LiteLLMLatency,
        OpenRouterLike,
        Oracle,
    )
}


def make_strategy(name: str, sim: SimContext) -> Strategy:
    """A fresh strategy by name; ValueError for an unknown one."""
    try:
        return STRATEGIES[name](sim)
    except KeyError:
        raise ValueError(
            f"unknown strategy {name!r}; choose from {', '.join(STRATEGIES)}"
        ) from None


__all__ = ["STRATEGIES", "SimContext", "Strategy", "make_strategy"]
