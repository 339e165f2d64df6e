"""The three-endpoint test market shared by the core router's tests
(tests/core/test_smart_router.py) and the one-router test (tests/routing/test_one_router.py)."""

from __future__ import annotations

from collections.abc import Hashable

from routing.core import ModelInfo
from routing.core.router import ServedCall
from routing.core.types import EndpointInfo, bucket_for

MODEL = ModelInfo("m", 1.0, 2.0, 0.1)
ENDPOINTS = (
    EndpointInfo(1, "alpha", 0.20, 0.02, 0.0, 0.4, 200_000),
    EndpointInfo(2, "bravo", 0.30, 0.03, 0.0, 0.5, 200_000),
    EndpointInfo(3, "charlie", 0.40, 0.04, 0.0, 0.6, 200_000),
)
PEERS = (1, 2, 3)


def served(
    endpoint_id: int,
    ttft_s: float,
    prompt: int,
    *,
    completion: int = 300,
    prefixes: tuple[Hashable, ...] = (),
) -> ServedCall:
    """A call of ``MODEL`` served at ``endpoint_id`` with exact usage (nothing cached,
    2 s of streaming); ``prefixes``: the prompt prefixes it leaves cached (300 s)."""
    return ServedCall(
        endpoint_id=endpoint_id,
        model=MODEL.slug,
        bucket=bucket_for(prompt),
        ttft_s=ttft_s,
        streaming_s=2.0,
        raw_prompt_tokens=prompt,
        prompt_estimate=prompt,
        prompt=prompt,
        cached=0,
        completion=completion,
        estimated=False,
        max_tokens=None,
        prefixes=prefixes,
        cache_ttl_s=300.0,
    )
