"""Probes (R5): every cycle, a max_tokens=1 streaming call to every enabled endpoint at
each probe size (about 20k, 60k and 150k tokens; sizes above the endpoint's context
are skipped), timing the first token into the same speed statistics as real calls.

A probe that disagrees with the bucket's typical TTFT by more than 2x is confirmed by
two more at once; a confirmed change restarts the bucket's window (routing.core.probe),
so a slowdown at one size moves long prompts away within one cycle while a lone stall
does not. Each probe's prompt starts with a fresh nonce, so no provider can answer it from its
prompt cache. Probes run with bounded concurrency and a timeout each; a cycle is
identified by ``floor(now / period)`` and (cycle, endpoint, size) is unique, so a cycle
run twice (beat restarted, task redelivered) probes nothing twice. A cycle is one Celery
task per endpoint (routing.tasks), so no task runs much longer than one probe. Their cost is
platform cost, recorded on ProbeResult and never billed to a customer.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import dataclass
from decimal import Decimal

import orjson
from django.conf import settings

from billing.pricing import call_cost
from providers.upstream import UpstreamCall, UpstreamError, close_client, open_stream
from uberllm import metrics
from uberllm.aio import db_call, drain_background

from .catalog import EndpointRoute, load_catalog
from .core.probe import CONFIRMATIONS, confirmed_shift, shift_direction
from .core.types import bucket_for
from .models import ProbeResult, SpeedSample
from .state import load_speed_summary, mark_unusable

FILLER = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "


@dataclass(frozen=True, slots=True)
class ProbeTarget:
    model_slug: str
    route: EndpointRoute
    prompt_tokens: int


def probe_prompt(prompt_tokens: int) -> list[dict]:
    """About ``prompt_tokens`` tokens (4 characters each) behind a unique nonce."""
    nonce = f"probe {secrets.token_hex(8)} {time.time_ns()}: "
    body = (FILLER * (prompt_tokens * 4 // len(FILLER) + 1))[: prompt_tokens * 4 - len(nonce)]
    return [{"role": "user", "content": nonce + body}]


def current_cycle(now: float | None = None) -> int:
    return int((now or time.time()) // settings.UBERLLM["PROBE_PERIOD_S"])


def probe_targets(cycle: int, endpoint_id: int | None = None) -> list[ProbeTarget]:
    """Every (endpoint, size) still to probe in this cycle (of one endpoint, if given)."""
    done = set(ProbeResult.objects.filter(cycle=cycle).values_list("endpoint_id", "prompt_tokens"))
    targets = []
    for slug, model in load_catalog().items():
        for route in model.endpoints:
            if endpoint_id is not None and route.endpoint_id != endpoint_id:
                continue
            for size in settings.UBERLLM["PROBE_SIZES"]:
                fits = size + 1 <= route.info.context_length
                if fits and (route.endpoint_id, size) not in done:
                    targets.append(ProbeTarget(slug, route, size))
    return targets


def probe_endpoint_ids(cycle: int) -> list[int]:
    """The endpoints with something left to probe in this cycle (one task each)."""
    return sorted({target.route.endpoint_id for target in probe_targets(cycle)})


async def _time_first_token(target: ProbeTarget) -> float:
    body = {"model": target.route.upstream_model, "messages": probe_prompt(target.prompt_tokens),
            "stream": True, "max_tokens": 1}  # fmt: skip
    call = UpstreamCall(target.route.url, orjson.dumps(body), target.route.authorization)
    started = time.perf_counter()
    stream = await open_stream(call)
    try:
        while (data := await stream.next_data()) is not None and data != "[DONE]":
            chunk = orjson.loads(data)
            if chunk.get("error"):
                raise UpstreamError("http", str(chunk["error"]), 502)
            if chunk.get("choices"):
                return time.perf_counter() - started
        raise UpstreamError("protocol", "stream ended before the first token")
    finally:
        await asyncio.shield(stream.aclose())


def _record(
    cycle: int, target: ProbeTarget, ttfts: list[float], status: str, error: str, restart: bool
) -> Decimal:
    """One ProbeResult (the median of the probe and its confirmations) and a speed sample
    per probe; with ``restart``, the oldest new sample restarts the bucket's window."""
    ttft_ms = int(sorted(ttfts)[len(ttfts) // 2] * 1000) if ttfts else None
    cost = call_cost(prices=target.route.prices, prompt_tokens=target.prompt_tokens * len(ttfts),
                     cached_tokens=0, completion_tokens=len(ttfts))  # fmt: skip
    ProbeResult.objects.bulk_create(
        [ProbeResult(cycle=cycle, endpoint_id=target.route.endpoint_id, status=status,
                     prompt_tokens=target.prompt_tokens, ttft_ms=ttft_ms, cost_usd=cost,
                     error_message=error[:2000])],
        ignore_conflicts=True,
    )  # fmt: skip
    SpeedSample.objects.bulk_create(
        SpeedSample(
            endpoint_id=target.route.endpoint_id,
            bucket=bucket_for(target.prompt_tokens),
            ttft_ms=int(ttft * 1000),
            prompt_tokens=target.prompt_tokens,
            is_probe=True,
            restarts_window=restart and index == 0,
        )
        for index, ttft in enumerate(ttfts)
    )
    return cost


def _typical_now(target: ProbeTarget) -> float | None:
    summary = load_speed_summary([target.route.endpoint_id])
    return summary.typical(target.route.endpoint_id, bucket_for(target.prompt_tokens))


async def _measure(target: ProbeTarget) -> tuple[list[float], bool]:
    """The probe's TTFT, plus confirmations if it disagrees with the typical value; and
    whether the change is confirmed (the window restarts)."""
    ttfts = [await _time_first_token(target)]
    typical = await db_call(_typical_now)(target)
    if shift_direction(typical, ttfts[0]) == 0:
        return ttfts, False
    for _ in range(CONFIRMATIONS):
        ttfts.append(await _time_first_token(target))
    return ttfts, confirmed_shift(typical, ttfts)


async def _probe(cycle: int, target: ProbeTarget, limit: asyncio.Semaphore) -> str:
    async with limit:
        ttfts, restart, status, error = [], False, "ok", ""
        try:
            async with asyncio.timeout(settings.UBERLLM["PROBE_TIMEOUT_S"]):
                ttfts, restart = await _measure(target)
        except (UpstreamError, TimeoutError) as exc:
            status = "failed"
            error = getattr(exc, "message", "") or "probe timed out"
            mark_unusable(target.model_slug, target.route.endpoint_id)
        cost = await db_call(_record)(cycle, target, ttfts, status, error, restart)
        metrics.observe_probe(target.route.provider_slug, status, float(cost))
        return status


async def probe_cycle(cycle: int | None = None, endpoint_id: int | None = None) -> dict[str, int]:
    """Run (the rest of) one probe cycle, of every endpoint or of one; returns counts by
    status. One endpoint's sizes run concurrently, so its run lasts about its slowest
    probe (with confirmations), at most ``PROBE_TIMEOUT_S``."""
    cycle = current_cycle() if cycle is None else cycle
    targets = await db_call(probe_targets)(cycle, endpoint_id)
    limit = asyncio.Semaphore(settings.UBERLLM["PROBE_CONCURRENCY"])
    statuses = await asyncio.gather(*(_probe(cycle, t, limit) for t in targets))
    return {status: statuses.count(status) for status in set(statuses)}


async def probe_cycle_once(
    cycle: int | None = None, endpoint_id: int | None = None
) -> dict[str, int]:
    """``probe_cycle`` on a loop of its own (a Celery task): cleans up before it ends."""
    try:
        return await probe_cycle(cycle, endpoint_id)
    finally:
        await drain_background()
        await close_client()
