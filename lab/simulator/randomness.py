"""Seeded randomness that does not depend on who asks first.

Every strategy must face the same market: the realisation of request ``r`` at endpoint
``e`` (its jitter, stall, error and 429 draws) is a pure function of (seed, r, e, n),
``n`` counting earlier tries of ``r`` at ``e``. ``uniforms(key, count)`` derives such
draws from one 64-bit key with SplitMix64, far cheaper than seeding a ``random.Random``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
_TO_UNIT32 = 1.0 / 4294967296.0
TWO_PI = 2.0 * math.pi


def mix(*parts: int) -> int:
    """One 64-bit key from several integers (order matters)."""
    key = 0x2545F4914F6CDD1D
    for part in parts:
        key = ((key ^ (part & MASK)) * 0xBF58476D1CE4E5B9 + GOLDEN) & MASK
        key ^= key >> 29
    return key


def uniforms(key: int, count: int) -> list[float]:
    """``count`` floats in [0, 1) (32-bit resolution), a pure function of ``key``: two per
    SplitMix64 output."""
    out = []
    state = key
    for _ in range((count + 1) // 2):
        state = (state + GOLDEN) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        z ^= z >> 31
        out.append((z >> 32) * _TO_UNIT32)
        out.append((z & 0xFFFFFFFF) * _TO_UNIT32)
    del out[count:]
    return out


def normal(u1: float, u2: float) -> float:
    """A standard normal draw from two uniforms (Box-Muller)."""
    return math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(TWO_PI * u2)


class Dist:
    """A distribution from a scenario file; ``sample(rng)`` returns a float.

    Forms: a number (fixed); ``{"kind": "fixed", "value"}``; ``{"kind": "uniform",
    "min", "max"}``; ``{"kind": "loguniform", "min", "max"}``; ``{"kind": "lognormal",
    "median", "sigma"}``; ``{"kind": "buckets", "buckets": [{"weight", "min", "max"}]}``
    (a bucket by weight, then log-uniform inside it). ``min``/``max`` clamp any kind.
    """

    def __init__(self, spec: Any, what: str) -> None:
        self.what = what
        if isinstance(spec, int | float) and not isinstance(spec, bool):
            spec = {"kind": "fixed", "value": spec}
        if not isinstance(spec, Mapping) or "kind" not in spec:
            raise ValueError(f"{what}: expected a number or an object with 'kind'")
        self.kind = spec["kind"]
        self.low = float(spec.get("min", -math.inf))
        self.high = float(spec.get("max", math.inf))
        if self.kind == "fixed":
            self.a = float(spec["value"])
        elif self.kind in ("uniform", "loguniform"):
            self.a, self.b = float(spec["min"]), float(spec["max"])
            if not 0 <= self.a <= self.b:
                raise ValueError(f"{what}: need 0 <= min <= max")
        elif self.kind == "lognormal":
            self.a, self.b = math.log(float(spec["median"])), float(spec["sigma"])
        elif self.kind == "buckets":
            buckets = spec["buckets"]
            total = sum(float(b["weight"]) for b in buckets)
            self.buckets = []
            cumulative = 0.0
            for bucket in buckets:
                cumulative += float(bucket["weight"]) / total
                self.buckets.append((cumulative, float(bucket["min"]), float(bucket["max"])))
        else:
            raise ValueError(f"{what}: unknown kind {self.kind!r}")

    def sample(self, rng: random.Random) -> float:
        kind = self.kind
        if kind == "fixed":
            value = self.a
        elif kind == "uniform":
            value = rng.uniform(self.a, self.b)
        elif kind == "loguniform":
            value = _log_uniform(rng, self.a, self.b)
        elif kind == "lognormal":
            value = math.exp(rng.gauss(self.a, self.b))
        else:
            u = rng.random()
            low, high = self.buckets[-1][1:]
            for cumulative, bucket_low, bucket_high in self.buckets:
                if u < cumulative:
                    low, high = bucket_low, bucket_high
                    break
            value = _log_uniform(rng, low, high)
        return min(max(value, self.low), self.high)

    def mean_estimate(self) -> float:
        """A rough mean (used only to size the generated traffic)."""
        rng = random.Random(12345)
        return sum(self.sample(rng) for _ in range(400)) / 400


def _log_uniform(rng: random.Random, low: float, high: float) -> float:
    if low <= 0:
        return rng.uniform(low, high)
    return math.exp(rng.uniform(math.log(low), math.log(high)))
