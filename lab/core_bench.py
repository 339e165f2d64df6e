"""Micro-benchmark: microseconds per plan_route() decision for a 20-endpoint model
with speed stats already in memory. Run: ``python -m lab.core_bench``."""

from __future__ import annotations

import random
import time
from statistics import quantiles

from routing.core.options import RoutingOptions
from routing.core.plan import plan_route
from routing.core.speed import SpeedSummary, summarise
from routing.core.types import BUCKETS, EndpointInfo, ModelInfo, RequestFeatures

PARAMETERS = frozenset({"tools", "temperature", "max_tokens", "response_format"})


def build_model(
    endpoint_count: int = 20, seed: int = 7
) -> tuple[ModelInfo, list[EndpointInfo], SpeedSummary]:
    """A model sold by ``endpoint_count`` providers, 30 TTFT samples per bucket each."""
    rng = random.Random(seed)
    model = ModelInfo("deepseek/deepseek-v4.1-flash", 0.30, 1.20, 0.03)
    endpoints = [
        EndpointInfo(
            endpoint_id=index,
            provider_slug=f"provider-{index}",
            price_input=round(rng.uniform(0.08, 0.40), 3),
            price_cache_read=round(rng.uniform(0.0013, 0.07), 4),
            price_cache_write=0.0,
            price_output=round(rng.uniform(0.3, 1.5), 3),
            context_length=rng.choice((131_072, 163_840, 262_144)),
            supported_parameters=PARAMETERS,
        )
        for index in range(endpoint_count)
    ]
    samples = {
        (endpoint.endpoint_id, bucket): [
            rng.lognormvariate(0.0, 0.6) * (1 + 4 * BUCKETS.index(bucket) * rng.random())
            for _ in range(30)
        ]
        for endpoint in endpoints
        for bucket in BUCKETS
    }
    throughput = {endpoint.endpoint_id: rng.uniform(20, 120) for endpoint in endpoints}
    return model, endpoints, summarise(samples, throughput)


def time_decisions(decisions: int = 20_000, options: RoutingOptions | None = None) -> list[float]:
    """Microseconds per decision over ``decisions`` calls."""
    model, endpoints, speed = build_model()
    features = RequestFeatures(
        prompt_tokens=96_000,
        expected_output_tokens=800,
        cached_tokens={endpoint.endpoint_id: 90_000 for endpoint in endpoints[::3]},
        required_parameters=frozenset({"tools"}),
        stream=True,
    )
    options = options or RoutingOptions()
    unusable = frozenset({3, 11})
    rng = random.Random(1)
    timings: list[float] = []
    for _ in range(decisions):
        start = time.perf_counter_ns()
        plan_route(model, endpoints, features, options, speed, unusable, rng)
        timings.append((time.perf_counter_ns() - start) / 1_000)
    return timings


def _report(label: str, timings: list[float]) -> None:
    percentiles = quantiles(timings, n=100)
    print(f"{label}: p50 {percentiles[49]:.1f} us, p99 {percentiles[98]:.1f} us per decision")


def main() -> None:
    _report("smart routing, 20 endpoints", time_decisions())
    _report(
        "customer sort=latency, 20 endpoints",
        time_decisions(options=RoutingOptions(sort="latency")),
    )


if __name__ == "__main__":
    main()
