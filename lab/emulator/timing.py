"""The simulated latency model: time to first token, stalls, errors, pacing.

All durations here are *simulated* seconds; the server multiplies them by the
effective ``time_scale`` before sleeping. Every request draws the same four
numbers from its provider's ``random.Random`` (error, jitter, stall, stall length),
so with the same seed and request order the plans repeat exactly.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Plan:
    """What will happen to one request before its first token."""

    ttft_s: float  # simulated seconds from request to first token
    fail: bool  # the error_rate draw hit: answer HTTP 500 instead
    stalled: bool  # a stall was added to ttft_s


def prefill_s(profile: dict[str, Any], prompt_tokens: int, cached_tokens: int) -> float:
    """Noise-free prefill time: uncached at the prefill rate, cached ``speedup`` x faster.

    Prompts above ``slow_above_tokens`` have the whole prefill multiplied by
    ``slow_factor``.
    """
    rate = profile["prefill_tokens_per_s"]
    uncached = max(prompt_tokens - cached_tokens, 0)
    seconds = uncached / rate + cached_tokens / (rate * profile["cached_prefill_speedup"])
    slow_above = profile["slow_above_tokens"]
    if slow_above is not None and prompt_tokens > slow_above:
        seconds *= profile["slow_factor"]
    return seconds


def plan_request(
    profile: dict[str, Any], rng: random.Random, prompt_tokens: int, cached_tokens: int
) -> Plan:
    """Draw this request's TTFT (base + prefill, jittered, maybe stalled) and error fate."""
    u_error, z, u_stall, u_extra = rng.random(), rng.gauss(0.0, 1.0), rng.random(), rng.random()
    ttft = profile["ttft_base_s"] + prefill_s(profile, prompt_tokens, cached_tokens)
    jitter = profile["jitter"]
    if jitter.get("kind") == "lognormal":
        ttft *= math.exp(jitter.get("sigma", 0.0) * z)
    stall = profile["stall"]
    stalled = u_stall < stall.get("probability", 0.0)
    if stalled:
        lo, hi = stall.get("extra_s", [0.0, 0.0])
        ttft += lo + (hi - lo) * u_extra
    return Plan(ttft_s=ttft, fail=u_error < profile["error_rate"], stalled=stalled)


def effective_scale(profile: dict[str, Any], global_scale: float) -> float:
    """The provider's ``time_scale`` if set, else the global one."""
    scale = profile.get("time_scale")
    return global_scale if scale is None else float(scale)


def cache_ttl_real_s(profile: dict[str, Any], scale: float) -> float:
    """Real seconds a cached prefix lives: ``cache_ttl_s * scale`` (unscaled if scale 0)."""
    ttl = float(profile["cache_ttl_s"])
    return ttl * scale if scale > 0 else ttl


def token_interval_s(profile: dict[str, Any]) -> float:
    """Simulated seconds between streamed tokens after the first."""
    return 1.0 / profile["output_tokens_per_s"]
