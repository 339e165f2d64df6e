"""A first turn priced with its customer's share of continued first turns (round 23,
``first_turn_followups``): on ``coding-agent`` nearly every long first prompt starts a
conversation, and priced alone it went to relaycloud (cheapest uncached input, cache
reads 50x hoardcache's), then moved to hoardcache one uncached, slow turn later."""

from __future__ import annotations

from lab.simulator import load_scenario, simulate
from lab.simulator.cli import with_gateway


def _run(seed: int, *overrides: str) -> dict:
    # Round 23's rule alone: the conversation horizon (issue 43), which also keeps first
    # turns off relaycloud, is off in both runs.
    overrides = ("conversation_horizon=false", *overrides)
    scenario = with_gateway(load_scenario("coding-agent"), list(overrides))
    document, _ = simulate(scenario, ["smart", "cheapest-effective"], seed=seed, requests=6000)
    return document["strategies"]


def test_agent_conversations_start_where_their_cache_reads_are_cheap() -> None:
    on, off = _run(1), _run(1, "first_turn_followups=false")
    relaycloud = {
        name: run["smart"]["provider_share_by_bucket"]["32k-128k"].get("relaycloud", 0.0)
        for name, run in (("on", on), ("off", off))
    }
    assert relaycloud["off"] > 0.05  # the agents' first turns, priced alone
    assert relaycloud["on"] < 0.02
    smart_on, smart_off = on["smart"], off["smart"]
    assert smart_on["total_cost_usd_per_1k_requests"] < smart_off["total_cost_usd_per_1k_requests"]
    assert smart_on["long_streams"]["ttft_s"]["p90"] < smart_off["long_streams"]["ttft_s"]["p90"]


def test_it_is_cheaper_on_every_seed_and_so_is_the_price_only_baseline() -> None:
    """Seeds 1-3: smart's headline cost falls; ``cheapest-effective``, which prices with
    the same knowledge (``Knowledge.features``), learns it too and falls as well."""
    for seed in (1, 2, 3):
        on, off = _run(seed), _run(seed, "first_turn_followups=false")
        for name in ("smart", "cheapest-effective"):
            cost_on = on[name]["total_cost_usd_per_1k_requests"]
            assert cost_on < 0.95 * off[name]["total_cost_usd_per_1k_requests"], (seed, name)
