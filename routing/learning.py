"""What routing learns from each finished call: speed samples (R2.1), token-estimate
calibration (R2.3), and which prompt prefixes the serving endpoint now has cached."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from billing.ledger import CallResult
from uberllm.aio import db_call

from .core.types import bucket_for
from .models import SpeedSample
from .shared import key, shared_kv
from .state import record_served

if TYPE_CHECKING:
    from .proxy.state import CallState


def _speed_samples(state: CallState, result: CallResult) -> list[SpeedSample]:
    bucket = bucket_for(result.prompt_tokens or state.prompt_tokens_estimate)
    samples = []
    for attempt in result.attempts:
        if attempt.ttft_ms is None or attempt.endpoint_id is None:
            continue
        tps = None
        if attempt.endpoint_id == result.endpoint_id and result.completion_tokens > 1:
            streaming_ms = (attempt.duration_ms or 0) - attempt.ttft_ms
            if streaming_ms > 0:
                tps = result.completion_tokens / (streaming_ms / 1000)
        samples.append(
            SpeedSample(
                endpoint_id=attempt.endpoint_id,
                bucket=bucket,
                ttft_ms=attempt.ttft_ms,
                prompt_tokens=result.prompt_tokens,
                output_tokens_per_s=tps,
            )
        )
    return samples


async def _remember_prefixes(state: CallState) -> None:
    route = state.served
    if route is None or not state.prefix_hashes:
        return
    expires_at = time.time() + route.cache_ttl_s
    last = state.prefix_hashes[-1][0]
    for prefix_hash in {state.prefix_hashes[0][0], last}:
        await shared_kv().hset(
            key("prefix", prefix_hash), str(route.endpoint_id), repr(expires_at), route.cache_ttl_s
        )


async def learn_from_call(state: CallState, result: CallResult) -> None:
    from .decide import output_estimator, token_estimator

    samples = _speed_samples(state, result)
    if samples:
        await db_call(SpeedSample.objects.bulk_create)(samples)
    if result.status != "success":
        return
    model = state.model.info.slug
    if result.endpoint_id is not None:
        record_served(model, result.endpoint_id)
    if not result.usage_estimated:
        token_estimator.observe(model, state.raw_prompt_tokens, result.prompt_tokens)
        output_estimator.observe(model, state.plan.bucket, result.completion_tokens)
    await _remember_prefixes(state)
