"""Field names, defaults and validation shared by the scenario parser."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise
from typing import Any

ENDPOINT_DEFAULTS: dict[str, Any] = {
    "provider": None,
    "price_input": None,
    "price_cache_read": None,
    "price_cache_write": 0.0,
    "price_output": None,
    "context_length": 262_144,
    "ttft_base_s": 0.35,
    "prefill_tokens_per_s": 8000.0,
    "cached_prefill_speedup": 10.0,
    "slow_above_tokens": None,
    "slow_factor": 1.0,
    "jitter": {"kind": "none"},
    "stall": {"probability": 0.0, "extra_s": [3.0, 8.0]},
    "output_tokens_per_s": 80.0,
    "error_rate": 0.0,
    "error_delay_s": 0.2,
    "status_override": None,
    "down": False,
    "rate_limit_rate": 0.0,
    "rate_limit_delay_s": 0.15,
    "concurrency_cap": None,
    "cut_rate": 0.0,
    "tokens_per_minute": None,
    "cache_ttl_s": 300.0,
    "cache_hit_rate": 1.0,
    # issue 10 (all optional; the defaults keep the earlier meaning)
    "prefill_curve": None,
    "output_tokens_factor": 1.0,
    "no_cache": False,
}
REQUIRED_ENDPOINT = ("provider", "price_input", "price_output")
PRICE_FIELDS = frozenset({"price_input", "price_cache_read", "price_cache_write", "price_output"})
GATEWAY_DEFAULTS: dict[str, Any] = {  # the live gateway's settings (uberllm/settings.py)
    "hedge_budget_usd_per_day": 5.0,
    "hedge_budget_burst_s": 3_600.0,  # paced daily hedge budget; >= 86400: not paced
    "hedge_delay_s": 1.0,  # R3.1's floor (live HEDGE_DELAY_S)
    "hedge_trigger": "late",  # "late" or "flat" (live HEDGE_TRIGGER)
    "hedge_late_factor": 2.0,  # late = x the primary's typical TTFT (HEDGE_LATE_FACTOR)
    "hedge_partner_slack": 0.0,  # 0: next in plan order; else by expected TTFT (live same)
    "hedge_delayed_from_tokens": 32_000,
    "hedge_immediate_from_tokens": 128_000,
    "probe_period_s": 300.0,
    "probe_sizes": [20_000, 60_000, 150_000],
    "probe_timeout_s": 90.0,
    "first_token_timeout_s": 180.0,
    "first_token_floor_s": 20.0,  # live ROUTING_FIRST_TOKEN_FLOOR_S
    "first_token_factor": 4.0,  # live ROUTING_FIRST_TOKEN_FACTOR
    "exploration_rate": 0.05,
    "max_attempts": 4,
    "unusable_window_s": 900.0,
    "unusable_first_window_s": 30.0,
    "followup_turns": 2.0,
    "first_turn_followups": True,  # live ROUTING_FIRST_TURN_FOLLOWUPS
    "speed_window_size": 50,
    "speed_max_age_s": 6 * 3600.0,
    "speed_stale_after_s": 600.0,
    "tail_weight": 0.0,
    "fast_enough_ratio": 2.0,  # R2.4 (live ROUTING_FAST_ENOUGH_RATIO)
    "fast_enough_under_s": 1.0,  # R2.4 (live ROUTING_FAST_ENOUGH_UNDER_S)
    "fast_enough_under_s_long": None,  # 32k+ (live ROUTING_FAST_ENOUGH_UNDER_S_LONG)
    "probe_budget_usd_per_day": 25.0,
    "probe_spend_share": 0.25,  # probes by volume (live PROBE_SPEND_SHARE)
    "probe_by_need": True,  # skip probes that cannot change an uncached pick (probe_relevant)
    "concurrency_caps": True,
    "hedging": True,
    "conversation_horizon": True,  # live ROUTING_CONVERSATION_HORIZON (core.horizon)
    "move_min_saving": 0.2,  # live ROUTING_MOVE_MIN_SAVING
}


class ScenarioError(ValueError):
    """The scenario file is invalid; the message says where."""


def known(data: Mapping[str, Any], allowed: set[str] | Mapping[str, Any], where: str) -> dict:
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{where}: expected an object")
    unknown = sorted(k for k in data if not k.startswith("_") and k not in allowed)
    if unknown:
        raise ScenarioError(f"{where}: unknown field(s) {', '.join(unknown)}")
    return {k: v for k, v in data.items() if not k.startswith("_")}


def endpoint_fields(data: Mapping[str, Any], where: str, *, partial: bool) -> dict[str, Any]:
    """Validated endpoint fields, with ``jitter``/``stall`` flattened to
    ``jitter_sigma``, ``stall_probability``, ``stall_min_s``, ``stall_max_s``."""
    given = known(data, ENDPOINT_DEFAULTS, where)
    values = dict(given) if partial else {**ENDPOINT_DEFAULTS, **given}
    if not partial:
        missing = [k for k in REQUIRED_ENDPOINT if values.get(k) is None]
        if missing:
            raise ScenarioError(f"{where}: missing {', '.join(missing)}")
    if "jitter" in values:
        jitter = values.pop("jitter") or {"kind": "none"}
        if jitter.get("kind", "none") not in ("none", "lognormal"):
            raise ScenarioError(f"{where}: jitter.kind must be none or lognormal")
        sigma = float(jitter.get("sigma", 0.25))
        values["jitter_sigma"] = sigma if jitter.get("kind") == "lognormal" else 0.0
    if "stall" in values:
        stall = values.pop("stall") or {}
        low, high = stall.get("extra_s", [3.0, 8.0])
        values.update(
            stall_probability=float(stall.get("probability", 0.0)),
            stall_min_s=float(low),
            stall_max_s=float(high),
        )
    if not partial and values["price_cache_read"] is None:
        if not values["no_cache"]:
            raise ScenarioError(f"{where}: missing price_cache_read")
        values["price_cache_read"] = values["price_input"]  # never billed: no cache
    if values.get("prefill_curve") is not None:
        values["prefill_curve"] = prefill_curve(values["prefill_curve"], f"{where}.prefill_curve")
    if "output_tokens_factor" in values:
        factor = values["output_tokens_factor"]
        if not isinstance(factor, int | float) or isinstance(factor, bool) or factor <= 0:
            raise ScenarioError(f"{where}: output_tokens_factor must be a number > 0")
        values["output_tokens_factor"] = float(factor)
    if "no_cache" in values and not isinstance(values["no_cache"], bool):
        raise ScenarioError(f"{where}: no_cache must be true or false")
    for key, value in values.items():
        if key in PRICE_FIELDS and (not isinstance(value, int | float) or value < 0):
            raise ScenarioError(f"{where}: {key} must be a number >= 0")
    return values


def prefill_curve(raw: Any, where: str) -> tuple[tuple[float, float], ...]:
    """``[[prompt_tokens, prefill tokens/s], ...]``: at least one point, prompt sizes
    strictly increasing and >= 0, speeds > 0."""
    if not isinstance(raw, list | tuple) or not raw:
        raise ScenarioError(f"{where}: expected a list of [prompt_tokens, tokens_per_s]")
    points: list[tuple[float, float]] = []
    for point in raw:
        if (
            not isinstance(point, list | tuple)
            or len(point) != 2
            or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in point)
        ):
            raise ScenarioError(f"{where}: each point is [prompt_tokens, tokens_per_s]")
        size, speed = float(point[0]), float(point[1])
        if size < 0 or speed <= 0:
            raise ScenarioError(f"{where}: prompt_tokens must be >= 0 and tokens_per_s > 0")
        if points and size <= points[-1][0]:
            raise ScenarioError(f"{where}: prompt sizes must be strictly increasing")
        points.append((size, speed))
    return tuple(points)


def curve_speed(curve: tuple[tuple[float, float], ...], prompt_tokens: float) -> float:
    """The prefill speed (tokens/s) of ``curve`` at a prompt of ``prompt_tokens``: linear
    between points, the end points' speed before the first and after the last."""
    if prompt_tokens <= curve[0][0]:
        return curve[0][1]
    for (x0, y0), (x1, y1) in pairwise(curve):
        if prompt_tokens <= x1:
            return y0 + (y1 - y0) * (prompt_tokens - x0) / (x1 - x0)
    return curve[-1][1]
