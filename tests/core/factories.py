"""Builders of plain routing-core values for tests (no Django)."""

from __future__ import annotations

import random
from collections.abc import Mapping

from routing.core import (
    DEFAULT_TUNING,
    EndpointInfo,
    ModelInfo,
    RequestFeatures,
    RoutePlan,
    RoutingOptions,
    SmartTuning,
    SpeedSummary,
    plan_route,
)

# List prices far above every endpoint below, so R2.9 never interferes unless a test
# builds its own model.
MODEL = ModelInfo("deepseek/deepseek-v4.1-flash", list_price_input=10.0, list_price_output=40.0)
TOOLS = frozenset({"tools", "temperature", "max_tokens"})


def endpoint(
    endpoint_id: int,
    slug: str | None = None,
    *,
    price_input: float = 1.0,
    cache_read: float | None = None,
    cache_write: float = 0.0,
    output: float = 2.0,
    context: int = 200_000,
    params: frozenset[str] = TOOLS,
) -> EndpointInfo:
    return EndpointInfo(
        endpoint_id=endpoint_id,
        provider_slug=slug or f"p{endpoint_id}",
        price_input=price_input,
        price_cache_read=price_input / 10 if cache_read is None else cache_read,
        price_cache_write=cache_write,
        price_output=output,
        context_length=context,
        supported_parameters=params,
    )


def speed(
    typical_by_endpoint: Mapping[int, float],
    bucket: str = "<8k",
    count: int = 20,
    throughput: Mapping[int, float] | None = None,
) -> SpeedSummary:
    """A summary where each listed endpoint has ``count`` samples of that typical TTFT."""
    return SpeedSummary(
        {(eid, bucket): ttft for eid, ttft in typical_by_endpoint.items()},
        {(eid, bucket): count for eid in typical_by_endpoint},
        dict(throughput or {}),
    )


def summary_of(rows: Mapping[tuple[int, str], tuple[float, int]]) -> SpeedSummary:
    """A summary from ``{(endpoint_id, bucket): (typical TTFT, samples)}``."""
    return SpeedSummary({k: v[0] for k, v in rows.items()}, {k: v[1] for k, v in rows.items()})


def features(
    prompt: int = 1_000,
    output: int = 100,
    cached: Mapping[int, int] | None = None,
    params: frozenset[str] = frozenset(),
    stream: bool = True,
) -> RequestFeatures:
    return RequestFeatures(prompt, output, dict(cached or {}), params, stream)


def plan(
    endpoints: list[EndpointInfo],
    speed_summary: SpeedSummary | None = None,
    *,
    options: RoutingOptions | None = None,
    request: RequestFeatures | None = None,
    unusable: frozenset[int] = frozenset(),
    model: ModelInfo = MODEL,
    rng: random.Random | None = None,
    exploration_rate: float = 0.0,
    min_samples: int = 3,
    tuning: SmartTuning = DEFAULT_TUNING,
) -> RoutePlan:
    """plan_route with test defaults: no exploration unless asked."""
    return plan_route(
        model,
        endpoints,
        request or features(),
        options or RoutingOptions(),
        speed_summary or SpeedSummary(),
        unusable,
        rng or random.Random(0),
        exploration_rate=exploration_rate,
        min_samples=min_samples,
        tuning=tuning,
    )


def ids(route_plan: RoutePlan) -> list[int]:
    return list(route_plan.endpoint_ids)


def reasons(route_plan: RoutePlan) -> list[str]:
    return [choice.reason for choice in route_plan.choices]
