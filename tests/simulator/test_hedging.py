"""The hedge budget (R3.4) on the virtual clock: never overspent in a UTC day."""

from __future__ import annotations

import dataclasses

from lab.simulator import load_scenario, run_strategy


def _scenario(budget: float, start_epoch_offset: float = 0.0):
    scenario = load_scenario("deepseek-v4.1-flash")
    gateway = {**scenario.gateway, "hedge_budget_usd_per_day": budget}
    return dataclasses.replace(
        scenario, gateway=gateway, start_epoch=scenario.start_epoch + start_epoch_offset
    )


def test_hedge_budget_is_never_overspent_in_a_day() -> None:
    # Starts at 23:00 UTC: the run spans two budget days.
    scenario = _scenario(0.5, start_epoch_offset=23 * 3600)
    metrics, engine = run_strategy(scenario, "smart", seed=3, requests=8000)
    spent = engine.strategy.budget.spent_by_day
    assert len(spent) == 2
    assert all(0 < value <= 0.5 + 1e-9 for value in spent.values())
    summary = metrics.summary()
    assert summary["hedged_share"] > 0
    assert summary["hedge_spend_usd"] > 0


def test_no_budget_no_hedge() -> None:
    metrics, _ = run_strategy(_scenario(0.0), "smart", seed=3, requests=2000)
    summary = metrics.summary()
    assert summary["hedged_share"] == 0
    assert summary["hedge_spend_usd"] == 0


def test_only_smart_hedges() -> None:
    for strategy in ("cheapest-input", "openrouter", "litellm-latency"):
        metrics, _ = run_strategy(_scenario(5.0), strategy, seed=3, requests=1500)
        assert metrics.summary()["hedged_share"] == 0
