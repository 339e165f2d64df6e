"""Pieces: scenario validation, the market's TTFT formula, draws, LiteLLM's list quirk."""

from __future__ import annotations

import json
import random

import pytest

from lab.simulator.market import Market
from lab.simulator.randomness import Dist, mix, uniforms
from lab.simulator.scenario import SCENARIO_DIR, ScenarioError, load_scenario, parse_scenario
from lab.simulator.strategies.litellm import _append
from lab.simulator.traffic import generate_traffic


def _raw() -> dict:
    return json.loads((SCENARIO_DIR / "deepseek-v4.1-flash.json").read_text())


def test_unknown_fields_fail_loudly() -> None:
    raw = _raw()
    raw["models"][0]["endpoints"][0]["prefill_tokens_per_sec"] = 1
    with pytest.raises(ScenarioError, match="prefill_tokens_per_sec"):
        parse_scenario(raw)
    raw = _raw()
    raw["events"] = [{"at_min": 1, "provider": "nobody", "set": {"down": True}}]
    with pytest.raises(ScenarioError, match="no endpoint matches"):
        parse_scenario(raw)
    raw = _raw()
    raw["traffic"]["classes"][0]["options"] = [{"sort": "fastest"}]
    with pytest.raises(ScenarioError, match="sort"):
        parse_scenario(raw)


def test_noise_free_ttft_matches_the_emulator_formula() -> None:
    scenario = load_scenario("deepseek-v4.1-flash")
    market = Market(scenario, seed=1)
    cachemart = market.by_model[0][0]
    # base 0.8 + 64,000 / 4,500 = 15.02 s (product.md: "15 s at 32k-128k"); u3=1: no stall
    assert market.ttft(cachemart, 64_000, 0, 0.5, 0.25, 1.0, 0.0) == pytest.approx(15.0, abs=0.05)
    steadyai = market.by_model[0][3]
    cached = market.ttft(steadyai, 90_000, 81_000, 0.5, 0.25, 1.0, 0.0)
    # cached tokens are read 10x faster than uncached ones are prefilled (round 6)
    assert cached == pytest.approx(0.6 + 9_000 / 45_000 + 81_000 / 450_000, 1e-3)


def test_draws_are_a_pure_function_of_the_key() -> None:
    assert uniforms(mix(1, 2, 3), 5) == uniforms(mix(1, 2, 3), 5)
    assert uniforms(mix(1, 2, 3), 5) != uniforms(mix(1, 2, 4), 5)
    assert all(0 <= u < 1 for u in uniforms(mix(9), 1000))


def test_distributions_respect_bounds() -> None:
    rng = random.Random(1)
    dist = Dist({"kind": "lognormal", "median": 300, "sigma": 2, "min": 1, "max": 500}, "x")
    assert all(1 <= dist.sample(rng) <= 500 for _ in range(1000))
    buckets = Dist({"kind": "buckets", "buckets": [{"weight": 1, "min": 10, "max": 20}]}, "y")
    assert all(10 <= buckets.sample(rng) <= 20 for _ in range(100))
    with pytest.raises(ValueError):
        Dist({"kind": "zipf"}, "z")


def test_traffic_prefix_is_stable_across_request_counts() -> None:
    scenario = load_scenario("deepseek-v4.1-flash")
    short = generate_traffic(scenario, 5, 300).requests
    long = generate_traffic(scenario, 5, 3000).requests[:300]
    assert [(r.t, r.prompt_tokens, r.rseed) for r in short] == [
        (r.t, r.prompt_tokens, r.rseed) for r in long
    ]


def test_conversations_grow_and_reuse_their_prefix() -> None:
    scenario = load_scenario("deepseek-v4.1-flash")
    requests = generate_traffic(scenario, 1, 2000).requests
    turns: dict[int, list] = {}
    for request in requests:
        if request.cache_key >= 0:
            turns.setdefault(request.cache_key, []).append(request)
    longest = max(turns.values(), key=len)
    prompts = [r.prompt_tokens for r in longest]
    assert prompts == sorted(prompts) and len(prompts) > 3
    assert longest[2].lookup_prefixes()[-2][1] == longest[1].prompt_tokens


def test_litellm_keeps_its_oldest_samples() -> None:
    values: list = [0]
    for sample in range(1, 15):
        values = _append(values, float(sample))
    assert values == [0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 14.0]
