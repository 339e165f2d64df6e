"""Loading, validating and overriding provider profiles.

A profile file is JSON: ``{"seed", "time_scale", "providers": {slug: profile}}``.
Every profile field is optional and falls back to ``PROVIDER_DEFAULTS``; keys that
start with ``_`` (e.g. ``"_comment"``) are ignored. See the package docstring and
``README.md`` for what each field does.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .dialects import USAGE_DIALECTS

PROVIDER_DEFAULTS: dict[str, Any] = {
    "api_key": None,
    "models": [],
    "ttft_base_s": 0.35,
    "prefill_tokens_per_s": 8000.0,
    "cached_prefill_speedup": 10.0,
    "slow_above_tokens": None,
    "slow_factor": 1.0,
    "jitter": {"kind": "none", "sigma": 0.25},
    "stall": {"probability": 0.0, "extra_s": [3.0, 8.0]},
    "output_tokens_per_s": 80.0,
    "default_output_tokens": 24,
    "reasoning_tokens": 6,
    "error_rate": 0.0,
    "error_delay_s": 0.0,
    "status_override": None,
    "concurrency_cap": None,
    "fail_after_tokens": None,
    "fail_mode": "error_event",
    "context_length": None,
    "cache_ttl_s": 300.0,
    "time_scale": None,
    "usage_override": None,
    "usage_dialect": "openai",
    "malformed_tool_calls": 0.0,
}

_SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class ProfileError(ValueError):
    """A profile file or a ``/_control`` override is malformed."""


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _num(lo: float = 0.0, hi: float | None = None, positive: bool = False) -> Callable:
    def check(v: Any) -> bool:
        ok = _is_num(v) and v >= lo and (hi is None or v <= hi)
        return ok and (v > 0 if positive else True)

    return check


def _opt(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v is None or check(v)


def _int(lo: int = 0) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= lo


def _jitter(v: Any) -> bool:
    kind_ok = isinstance(v, dict) and v.get("kind") in ("none", "lognormal")
    return kind_ok and _num()(v.get("sigma", 0.0))


def _stall(v: Any) -> bool:
    if not isinstance(v, dict) or not _num(0.0, 1.0)(v.get("probability", 0.0)):
        return False
    rng = v.get("extra_s", [0.0, 0.0])
    return isinstance(rng, list) and len(rng) == 2 and all(_num()(x) for x in rng)


_CHECKS: dict[str, Callable[[Any], bool]] = {
    "api_key": _opt(lambda v: isinstance(v, str) and v != ""),
    "models": lambda v: isinstance(v, list) and all(isinstance(m, str) for m in v),
    "ttft_base_s": _num(),
    "prefill_tokens_per_s": _num(positive=True),
    "cached_prefill_speedup": _num(positive=True),
    "slow_above_tokens": _opt(_int()),
    "slow_factor": _num(positive=True),
    "jitter": _jitter,
    "stall": _stall,
    "output_tokens_per_s": _num(positive=True),
    "default_output_tokens": _int(),
    "reasoning_tokens": _int(),
    "error_rate": _num(0.0, 1.0),
    "error_delay_s": _num(),
    "status_override": _opt(lambda v: _int(100)(v) and v <= 599),
    "concurrency_cap": _opt(_int()),
    "fail_after_tokens": _opt(_int()),
    "fail_mode": lambda v: v in ("error_event", "abort"),
    "context_length": _opt(_int(1)),
    "cache_ttl_s": _num(),
    "time_scale": _opt(_num()),
    # A provider misreporting usage: these keys replace the usage object's (any JSON).
    "usage_override": _opt(lambda v: isinstance(v, dict)),
    # How usage is reported (lab/emulator/dialects.py): openai, deepseek, anthropic, none.
    "usage_dialect": lambda v: v in USAGE_DIALECTS,
    # The share of tool calls sent malformed (scripted.spoiled): bad JSON, an unknown
    # function, or arguments that break the tool's schema, in turn.
    "malformed_tool_calls": _num(0.0, 1.0),
}
_NESTED = ("jitter", "stall")


@dataclass
class EmulatorConfig:
    """A loaded profile file: global seed and time scale, and one profile per slug."""

    seed: int = 0
    time_scale: float = 1.0
    providers: dict[str, dict[str, Any]] = field(default_factory=dict)


def merge_profile(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``base`` with ``overrides`` applied and validated.

    ``jitter`` and ``stall`` are merged one level deep, other keys replaced. Keys
    starting with ``_`` are ignored; unknown keys or bad values raise ProfileError.
    """
    merged = copy.deepcopy(dict(base))
    for key, value in overrides.items():
        if key.startswith("_"):
            continue
        if key not in _CHECKS:
            raise ProfileError(f"unknown profile field {key!r}")
        if key in _NESTED and isinstance(value, dict):
            value = {**merged.get(key, {}), **value}
        if not _CHECKS[key](value):
            raise ProfileError(f"invalid value for {key!r}: {value!r}")
        merged[key] = copy.deepcopy(value)
    return merged


def parse_config(data: Mapping[str, Any]) -> EmulatorConfig:
    """Validate a profile-file object and fill every provider's defaults."""
    if not isinstance(data, Mapping) or not isinstance(data.get("providers"), Mapping):
        raise ProfileError('profile file must be an object with a "providers" object')
    seed = data.get("seed", 0)
    scale = data.get("time_scale", 1.0)
    if not _int(0)(seed) or not _num()(scale):
        raise ProfileError("seed must be an int >= 0 and time_scale a number >= 0")
    providers: dict[str, dict[str, Any]] = {}
    for slug, profile in data["providers"].items():
        if not _SLUG.match(slug) or not isinstance(profile, Mapping):
            raise ProfileError(f"bad provider entry {slug!r}")
        try:
            providers[slug] = merge_profile(PROVIDER_DEFAULTS, profile)
        except ProfileError as exc:
            raise ProfileError(f"provider {slug!r}: {exc}") from None
    return EmulatorConfig(seed=seed, time_scale=float(scale), providers=providers)


def load_config(
    source: Mapping[str, Any] | str | Path,
    *,
    seed: int | None = None,
    time_scale: float | None = None,
) -> EmulatorConfig:
    """Load a profile file (path) or object (dict); ``seed``/``time_scale`` override it."""
    is_path = isinstance(source, str | Path)
    data = orjson.loads(Path(source).read_bytes()) if is_path else source
    config = parse_config(data)
    if seed is not None:
        config.seed = seed
    if time_scale is not None:
        config.time_scale = float(time_scale)
    return config
