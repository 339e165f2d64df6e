"""R2.4's band as gateway settings of a scenario (``fast_enough_ratio``,
``fast_enough_under_s``): in the re-calibrated market novacloud reads a cached 150k
prefix in ~3 s, three times swiftinfer's time; only a wider band lets it take the long
agent turns it sells cheapest."""

from __future__ import annotations

from lab.simulator import load_scenario, simulate
from lab.simulator.cli import with_gateway


def _smart(*overrides: str) -> dict:
    scenario = with_gateway(load_scenario("deepseek-v4.1-flash"), list(overrides))
    document, _ = simulate(scenario, ["smart"], seed=1, requests=10_000)
    return document["strategies"]["smart"]


def _novacloud_share(run: dict, bucket: str) -> float:
    return run["provider_share_by_bucket"][bucket].get("novacloud", 0.0)


def test_the_band_is_a_setting_of_the_scenario() -> None:
    default, wide = _smart(), _smart("fast_enough_under_s=4")
    # R2.4: ~3 s against ~1 s: too slow for an uncached prompt
    assert _novacloud_share(default, "8k-32k") < 0.1
    # a conversation is judged by its warm turns (issue 43): novacloud's cached >128k
    # reads measure ~1.8 s, within 2x of swiftinfer's ~1 s, so the >128k turns of the
    # conversations it is cheapest for live there by default (48 % on this seed)
    assert _novacloud_share(wide, ">128k") >= _novacloud_share(default, ">128k")
    for bucket in ("8k-32k", ">128k"):
        assert _novacloud_share(wide, bucket) > 0.5  # under 4 s is fast enough
    assert wide["cost_usd_per_1k_requests"] < default["cost_usd_per_1k_requests"]


def test_a_floor_for_long_prompts_moves_the_long_turns_only() -> None:
    """``fast_enough_under_s_long``: novacloud's ~3 s cached 150k turns are fast enough
    under a 4 s floor from 32k up; the 8k-32k prompts (~3 s there too) stay with R2.4."""
    default, long_floor = _smart(), _smart("fast_enough_under_s_long=4")
    assert _novacloud_share(long_floor, ">128k") >= _novacloud_share(default, ">128k")
    assert _novacloud_share(long_floor, ">128k") > 0.5
    assert _novacloud_share(long_floor, "8k-32k") < 0.05
    assert long_floor["cost_usd_per_1k_requests"] < default["cost_usd_per_1k_requests"]
