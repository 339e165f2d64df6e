"""R2.4's band as gateway settings of a scenario (``fast_enough_ratio``,
``fast_enough_under_s``): in the re-calibrated market novacloud reads a cached 150k
prefix in ~3 s, three times swiftinfer's time; only a wider band lets it take the long
agent turns it sells cheapest."""

from __future__ import annotations

from routing.simulator import load_scenario, simulate
from routing.simulator.cli import with_gateway


def _smart(*overrides: str) -> dict:
    scenario = with_gateway(load_scenario("deepseek-v4.1-flash"), list(overrides))
    document, _ = simulate(scenario, ["smart"], seed=1, requests=10_000)
    return document["strategies"]["smart"]


def _novacloud_share(run: dict, bucket: str) -> float:
    return run["provider_share_by_bucket"][bucket].get("novacloud", 0.0)


def test_the_band_is_a_setting_of_the_scenario() -> None:
    default, wide = _smart(), _smart("fast_enough_under_s=4")
    for bucket in ("8k-32k", ">128k"):
        assert _novacloud_share(default, bucket) < 0.05  # R2.4: ~3 s against ~1 s: too slow
        assert _novacloud_share(wide, bucket) > 0.5  # under 4 s is fast enough
    assert wide["cost_usd_per_1k_requests"] < default["cost_usd_per_1k_requests"]
