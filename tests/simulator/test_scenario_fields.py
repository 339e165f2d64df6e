"""The optional scenario fields of issue 10 (docs/scenarios.md): each one does what it
says, and leaving it out keeps the earlier meaning."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest

from lab.simulator import simulate
from lab.simulator.cli import run as cli_run
from lab.simulator.cli import with_gateway
from lab.simulator.engine import Engine
from lab.simulator.market import Market
from lab.simulator.run import run_strategy
from lab.simulator.scenario import ScenarioError, load_scenario, parse_scenario
from lab.simulator.traffic import generate_traffic, utc_hour


def endpoint(**fields: Any) -> dict[str, Any]:
    base = {"provider": "solo", "price_input": 1.0, "price_cache_read": 0.1, "price_output": 2.0}
    return {**base, **fields}


def scenario(
    endpoints: list[dict[str, Any]] | None = None,
    classes: list[dict[str, Any]] | None = None,
    **top: Any,
) -> dict[str, Any]:
    return {
        "name": "fields",
        "models": [
            {
                "slug": "m",
                "list_price_input": 2.0,
                "list_price_output": 4.0,
                "endpoints": endpoints or [endpoint()],
            }
        ],
        "traffic": {
            "classes": classes
            or [{"requests_per_s": 2, "prompt_tokens": 4000, "output_tokens": 100}]
        },
        **top,
    }


CONVERSATIONS = [
    {
        "kind": "conversation",
        "conversations_per_min": 6,
        "first_prompt_tokens": 20_000,
        "growth_tokens": 2_000,
        "turns": 8,
        "turn_gap_s": 5,
        "output_tokens": 200,
    }
]


# --- prefill_curve -------------------------------------------------------------------
def _ttft(market: Market, prompt: int) -> float:
    return market.ttft(market.endpoints[1], prompt, 0, 0.5, 0.5, 1.0, 0.0)


def test_a_prefill_curve_sets_the_prefill_speed_per_prompt_size():
    curve = [[0, 12_000], [32_000, 9_000], [128_000, 5_000]]
    spec = parse_scenario(
        scenario(
            [endpoint(ttft_base_s=0.5, prefill_curve=curve, slow_above_tokens=1, slow_factor=9)]
        )
    )
    market = Market(spec, seed=1)
    expected = {
        1_000: 12_000 - 3_000 * 1_000 / 32_000,
        32_000: 9_000,
        80_000: 7_000,  # halfway between 9k and 5k tokens/s
        128_000: 5_000,
        200_000: 5_000,  # flat past the last point
    }
    for prompt, speed in expected.items():
        assert _ttft(market, prompt) == pytest.approx(0.5 + prompt / speed)
    # cached tokens still prefill cached_prefill_speedup (10) times faster
    state = market.endpoints[1]
    cached = market.ttft(state, 80_000, 60_000, 0.5, 0.5, 1.0, 0.0)
    assert cached == pytest.approx(0.5 + 20_000 / 7_000 + 60_000 / 70_000)


def test_without_a_prefill_curve_the_flat_speed_and_slowdown_apply():
    spec = parse_scenario(
        scenario([endpoint(ttft_base_s=0.5, slow_above_tokens=100_000, slow_factor=3)])
    )
    market = Market(spec, seed=1)
    assert _ttft(market, 80_000) == pytest.approx(0.5 + 80_000 / 8_000)
    assert _ttft(market, 120_000) == pytest.approx(0.5 + 3 * 120_000 / 8_000)


@pytest.mark.parametrize(
    "curve",
    [[], [[0, 100], [0, 200]], [[10, 100], [5, 200]], [[0, 0]], [[0, 100, 3]], "fast"],
)
def test_a_bad_prefill_curve_is_refused(curve):
    with pytest.raises(ScenarioError, match="prefill_curve"):
        parse_scenario(scenario([endpoint(prefill_curve=curve)]))


def test_an_event_can_set_a_prefill_curve():
    data = scenario(
        [endpoint(ttft_base_s=0.0)],
        events=[
            {"at_min": 1, "until_min": 2, "provider": "solo", "set": {"prefill_curve": [[0, 4000]]}}
        ],
    )
    spec = parse_scenario(data)
    market = Market(spec, seed=1)
    market.apply_event(0, spec.events[0], True)
    assert _ttft(market, 8_000) == pytest.approx(2.0)
    market.apply_event(0, spec.events[0], False)
    assert _ttft(market, 8_000) == pytest.approx(1.0)


# --- several timed events per endpoint -------------------------------------------------
def test_overlapping_and_sequential_events_restore_the_value_that_applies():
    events = [
        {"at_min": 10, "until_min": 30, "provider": "solo", "set": {"prefill_tokens_per_s": 2000}},
        {"at_min": 20, "until_min": 40, "provider": "solo", "set": {"prefill_tokens_per_s": 3000}},
        {"at_min": 50, "provider": "solo", "set": {"prefill_tokens_per_s": 4000}},
        {"at_min": 60, "until_min": 70, "provider": "solo", "set": {"prefill_tokens_per_s": 5000}},
        {"at_min": 80, "until_min": 90, "provider": "solo", "set": {"status_override": 503}},
        {"at_min": 85, "until_min": 95, "provider": "solo", "set": {"status_override": 429}},
    ]
    spec = parse_scenario(scenario([endpoint()], events=events))
    market = Market(spec, seed=1)
    state = market.endpoints[1]
    timeline = sorted(
        [(e.at_s, n, True) for n, e in enumerate(spec.events)]
        + [(e.until_s, n, False) for n, e in enumerate(spec.events) if e.until_s is not None],
        key=lambda item: item[0],
    )
    seen = []
    for _, number, starting in timeline:
        market.apply_event(number, spec.events[number], starting)
        seen.append((state.prefill_tokens_per_s, state.status_override))
    assert seen == [
        (2000, None),  # 10: first slowdown
        (3000, None),  # 20: the second, overlapping
        (3000, None),  # 30: the first ends; the second still runs
        (8000.0, None),  # 40: both over: the endpoint's own speed
        (4000, None),  # 50: for good
        (5000, None),  # 60: on top of it
        (4000, None),  # 70: back to the permanent one
        (4000, 503),  # 80
        (4000, 429),  # 85: overlapping outage kinds
        (4000, 429),  # 90: the 503 ends, the 429 runs on
        (4000, None),  # 95
    ]


def test_events_in_a_run_follow_the_same_rule():
    """Through the engine: two overlapping outages of one provider; requests arriving
    while either runs find it refusing, after both it serves again."""
    data = scenario(
        [endpoint(), endpoint(provider="backup", price_input=5.0)],
        events=[
            {"at_min": 2, "until_min": 6, "provider": "solo", "set": {"status_override": 503}},
            {"at_min": 4, "until_min": 8, "provider": "solo", "set": {"down": True}},
        ],
    )
    metrics, engine = run_strategy(parse_scenario(data), "cheapest-input", seed=1, requests=1500)
    served_by = {}
    for row in metrics.records:
        served_by.setdefault(int(row[14] // 60), set()).add(
            engine.market.endpoints[row[12]].provider
        )
    for minute in range(2, 8):
        assert served_by[minute] == {"backup"}, minute
    assert "solo" in served_by[9]


# --- traffic.daily_pattern -------------------------------------------------------------
def _pattern_scenario(pattern: list[float] | None, rate: float = 0.05) -> Any:
    data = scenario(
        classes=[{"requests_per_s": rate, "prompt_tokens": 1000, "output_tokens": 10}],
        start_utc="2026-10-28T00:00:00+00:00",
    )
    if pattern is not None:
        data["traffic"]["daily_pattern"] = pattern
    return parse_scenario(data)


def test_a_daily_pattern_with_zero_hours_has_no_arrivals_in_them():
    spec = _pattern_scenario([1.0] * 12 + [0.0] * 12)
    traffic = generate_traffic(spec, seed=3, count=6000)
    hours = [utc_hour(spec, r.t) for r in traffic.requests]
    assert traffic.duration_s > 2 * 86_400  # several virtual days
    assert max(hours) < 12
    assert set(hours) == set(range(12))
    again = generate_traffic(spec, seed=3, count=6000)
    assert [r.t for r in again.requests] == [r.t for r in traffic.requests]  # per seed
    other = generate_traffic(spec, seed=4, count=6000)
    assert [r.t for r in other.requests] != [r.t for r in traffic.requests]


def test_a_daily_pattern_scales_the_rate_by_hour():
    spec = _pattern_scenario([3.0] * 6 + [1.0] * 18, rate=0.1)
    traffic = generate_traffic(spec, seed=1, count=40_000)
    days = int(traffic.duration_s // 86_400)  # whole virtual days only
    assert days >= 2
    arrivals = [r for r in traffic.requests if r.t < days * 86_400]
    peak = sum(1 for r in arrivals if utc_hour(spec, r.t) < 6)
    rest = len(arrivals) - peak
    per_hour_peak, per_hour_rest = peak / (6 * days), rest / (18 * days)
    assert per_hour_peak / per_hour_rest == pytest.approx(3.0, rel=0.1)
    assert per_hour_rest == pytest.approx(0.1 * 3600, rel=0.1)


def test_a_flat_daily_pattern_of_ones_is_the_same_traffic():
    plain = generate_traffic(_pattern_scenario(None), seed=2, count=2000)
    flat = generate_traffic(_pattern_scenario([1.0] * 24), seed=2, count=2000)
    assert [(r.t, r.prompt_tokens) for r in flat.requests] == [
        (r.t, r.prompt_tokens) for r in plain.requests
    ]


@pytest.mark.parametrize("pattern", [[1.0] * 23, [0.0] * 24, [1.0] * 23 + [-1.0], "day"])
def test_a_bad_daily_pattern_is_refused(pattern):
    with pytest.raises(ScenarioError, match="daily_pattern"):
        _pattern_scenario(pattern)


# --- output_tokens_factor --------------------------------------------------------------
def test_output_tokens_factor_scales_what_is_streamed_and_billed():
    prices = {"price_input": 0.0, "price_cache_read": 0.0, "price_output": 1.0}
    plain = parse_scenario(scenario([endpoint(**prices)]))
    rambling = parse_scenario(scenario([endpoint(**prices, output_tokens_factor=2.0)]))
    short = parse_scenario(scenario([endpoint(**prices, output_tokens_factor=0.5)]))
    results = {}
    for name, spec in (("plain", plain), ("rambling", rambling), ("short", short)):
        metrics, _ = run_strategy(spec, "cheapest-input", seed=1, requests=500)
        rows = metrics.records
        results[name] = (
            sum(r[7] for r in rows),  # billed USD: output tokens x $1/1M
            sum(r[3] for r in rows),  # output tokens served
            sorted(r[6] for r in rows)[250],  # whole request p50
        )
    assert results["plain"][0] == pytest.approx(500 * 100 / 1e6)
    assert results["rambling"][0] == pytest.approx(2 * results["plain"][0])
    assert results["short"][0] == pytest.approx(0.5 * results["plain"][0])
    assert results["rambling"][1] == 2 * results["plain"][1]
    assert results["rambling"][2] > results["plain"][2] > results["short"][2]


def test_output_tokens_factor_must_be_positive():
    with pytest.raises(ScenarioError, match="output_tokens_factor"):
        parse_scenario(scenario([endpoint(output_tokens_factor=0)]))


# --- no_cache --------------------------------------------------------------------------
def _conversation_cost(**fields: Any) -> tuple[float, int, Engine]:
    prices = {"price_input": 1.0, "price_cache_read": 0.1, "price_output": 0.0}
    spec = parse_scenario(scenario([endpoint(**{**prices, **fields})], classes=CONVERSATIONS))
    metrics, engine = run_strategy(spec, "cheapest-input", seed=1, requests=400)
    prompt = sum(r[2] for r in metrics.records if not r[4])
    return sum(r[7] for r in metrics.records), prompt, engine


def test_no_cache_reads_nothing_from_a_cache():
    cached_cost, prompt, _ = _conversation_cost()
    assert cached_cost < 0.5 * prompt / 1e6  # most of each turn is a cache read
    cost, prompt, engine = _conversation_cost(no_cache=True, price_cache_write=3.0)
    assert cost == pytest.approx(prompt / 1e6)  # every prompt token at the input price
    info = engine.market.infos[0][0]
    assert info.price_cache_read == info.price_input and info.price_cache_write == 0.0
    assert engine.market.endpoints[1].catalog_cache_ttl_s == 0.0


def test_no_cache_needs_no_cache_read_price_but_others_do():
    spec = parse_scenario(
        scenario([{"provider": "x", "price_input": 1, "price_output": 2, "no_cache": True}])
    )
    assert spec.models[0].endpoints[0]["no_cache"] is True
    with pytest.raises(ScenarioError, match="price_cache_read"):
        parse_scenario(scenario([{"provider": "x", "price_input": 1, "price_output": 2}]))


# --- gateway.hedging -------------------------------------------------------------------
def test_hedging_false_sends_no_hedge_leg():
    spec = load_scenario("deepseek-v4.1-flash")
    on = simulate(spec, ["smart"], seed=1, requests=2000)[0]["strategies"]["smart"]
    off_spec = with_gateway(spec, ["hedging=false"])
    off = simulate(off_spec, ["smart"], seed=1, requests=2000)[0]["strategies"]["smart"]
    assert on["hedged_share"] > 0 and on["hedge_spend_usd"] > 0
    assert off["hedged_share"] == 0 and off["hedge_spend_usd"] == 0
    data = json.loads(json.dumps({**scenario(), "gateway": {"hedging": False}}))  # the file field
    assert parse_scenario(data).gateway["hedging"] is False


def test_a_zero_hedge_budget_still_disables_hedging():
    spec = with_gateway(load_scenario("deepseek-v4.1-flash"), ["hedge_budget_usd_per_day=0"])
    off = simulate(spec, ["smart"], seed=1, requests=2000)[0]["strategies"]["smart"]
    assert off["hedged_share"] == 0


# --- optional list prices ---------------------------------------------------------------
def test_list_prices_default_to_the_dearest_endpoint_prices():
    data = scenario(
        [
            endpoint(price_input=1.0, price_cache_read=0.5, price_output=3.0),
            endpoint(provider="b", price_input=2.0, price_cache_read=0.2, price_output=2.0),
            endpoint(
                provider="c", price_input=0.5, price_cache_read=9.0, price_output=1.0, no_cache=True
            ),
        ]
    )
    model = copy.deepcopy(data["models"][0])
    del model["list_price_input"], model["list_price_output"]
    spec = parse_scenario({**data, "models": [model]})
    m = spec.models[0]
    assert (m.list_price_input, m.list_price_output, m.list_price_cache_read) == (2.0, 3.0, 0.5)
    # a given list price keeps its earlier meaning: no cache read price -> None
    given = parse_scenario(data).models[0]
    assert (given.list_price_input, given.list_price_output) == (2.0, 4.0)
    assert given.list_price_cache_read is None
    document, _ = simulate(spec, ["smart", "openrouter"], seed=1, requests=300)
    assert document["strategies"]["smart"]["failed_share"] == 0


# --- --from-minute / --to-minute --------------------------------------------------------
def test_a_window_counts_only_requests_arriving_in_it():
    spec = load_scenario("outage")
    traffic = generate_traffic(spec, 1, 3000)
    inside = sum(1 for r in traffic.requests if 10 * 60 <= r.t < 20 * 60)
    whole, _ = simulate(spec, ["smart"], seed=1, requests=3000)
    window, _ = simulate(spec, ["smart"], seed=1, requests=3000, from_minute=10, to_minute=20)
    same, _ = simulate(spec, ["smart"], seed=1, requests=3000, from_minute=0)
    assert window["window"] == {"from_minute": 10, "to_minute": 20}
    assert whole["window"] == {"from_minute": 0.0, "to_minute": None}
    assert window["requests"] == whole["requests"] == 3000  # the run itself is whole
    w, a = window["strategies"]["smart"], whole["strategies"]["smart"]
    assert w["requests"] == inside and 0 < inside < 3000
    assert w["ttft_s"]["n"] <= inside
    assert 0 < w["probes"] < a["probes"]  # probes sent within minutes 10-20 only
    assert w["probe_spend_usd"] < a["probe_spend_usd"]
    assert same["strategies"]["smart"] == a


def test_the_window_applies_on_the_command_line():
    text = cli_run(
        {
            "scenario": "outage",
            "strategies": ["cheapest-input"],
            "requests": 800,
            "from_minute": 5,
            "to_minute": 8.5,
            "json": True,
            "no_progress": True,
        },
        err=open("/dev/null", "w"),  # noqa: SIM115
    )
    document = json.loads(text)
    assert document["window"] == {"from_minute": 5, "to_minute": 8.5}
    table = cli_run(
        {
            "scenario": "outage",
            "strategies": ["cheapest-input"],
            "requests": 800,
            "from_minute": 5,
            "no_progress": True,
        },
        err=open("/dev/null", "w"),  # noqa: SIM115
    )
    assert "counted: arrivals in minutes 5-end" in table
    with pytest.raises(ValueError, match="to-minute"):
        simulate(load_scenario("outage"), ["smart"], seed=1, requests=100, to_minute=0)


def test_window_sums_platform_spend_incurred_in_it():
    """Probes in two halves of a run add up to the whole run's."""
    spec = load_scenario("outage")
    whole = simulate(spec, ["smart"], seed=1, requests=2000)[0]["strategies"]["smart"]
    first = simulate(spec, ["smart"], seed=1, requests=2000, to_minute=12)[0]
    rest = simulate(spec, ["smart"], seed=1, requests=2000, from_minute=12)[0]
    first, rest = first["strategies"]["smart"], rest["strategies"]["smart"]
    assert first["probes"] + rest["probes"] == whole["probes"]
    assert first["requests"] + rest["requests"] == whole["requests"]
    assert math.isclose(
        first["probe_spend_usd"] + rest["probe_spend_usd"], whole["probe_spend_usd"], abs_tol=2e-5
    )
