"""Probes (R5): every cycle, a max_tokens=1 streaming call to every enabled endpoint at
each probe size (about 20k, 60k and 150k tokens; sizes above the endpoint's context
are skipped), timing the first token into the same speed statistics as real calls.

A probe that disagrees with the bucket's typical TTFT by more than 2x is confirmed by
two more at once; a confirmed change restarts the bucket's window (routing.core.probe),
so a slowdown at one size moves long prompts away within one cycle while a lone stall
does not. Each probe's prompt starts with a fresh nonce, so no provider can answer it from its
prompt cache. Probes run with bounded concurrency and a timeout each; a cycle is
identified by ``floor(now / period)`` and (cycle, endpoint, size) is unique, so a cycle
run twice (beat restarted, task redelivered) probes nothing twice. A daily budget
(``PROBE_DAILY_BUDGET_USD``) stops probes for the rest of the UTC day once spent. A
cycle is one Celery task per endpoint (routing.tasks), so no task runs much longer than
one probe. Their cost is platform cost, recorded on ProbeResult and never billed to a
customer.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

import orjson
from django.utils import timezone

from billing.pricing import call_cost
from billing.selectors import unscoped_spend_by_model_bucket
from common import metrics
from common.aio import db_call, drain_background
from providers import protocols
from providers.config import providers_config
from providers.redact import redact
from providers.upstream import UpstreamCall, UpstreamError, close_client, open_stream

from .catalog import EndpointRoute, load_catalog
from .config import gateway_config, live_config
from .core.probe import COLD_PROBE_TOKENS as COLD_PROBE_TOKENS  # re-exported
from .core.probe import (
    CONFIRMATIONS,
    confirmed_shift,
    probe_sizes,
    probe_worst_cost,
    shift_direction,
    within_probe_budget,
    within_volume_share,
)
from .core.types import bucket_for
from .health import probe_spend_by_model_bucket, probe_spend_today
from .memory import load_speed_summary
from .models import ProbeResult, SpeedSample
from .outbox import mark_unusable_now

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
    return int((now or time.time()) // gateway_config().probe_period_s)


def _measured_since(seconds: float, *, real: bool) -> set[tuple[int, str]]:
    """(endpoint, bucket) pairs with an uncached sample in the last ``seconds`` (only
    from real calls with ``real``)."""
    since = timezone.now() - timedelta(seconds=seconds)
    rows = SpeedSample.objects.filter(created_at__gte=since, cached=False)
    if real:
        rows = rows.filter(is_probe=False)
    return set(rows.values_list("endpoint_id", "bucket").distinct())


def probe_targets(
    cycle: int, endpoint_id: int | None = None, *, cold_only: bool = False
) -> list[ProbeTarget]:
    """Every (endpoint, size) still to probe in this cycle (of one endpoint, if given).

    Which sizes is the core's rule (``routing.core.probe.probe_sizes``, as in the
    simulator): an endpoint that can never be picked for speed for an uncached prompt
    (R2.9, ``worth_probing``) is not probed; a size whose bucket real traffic measured
    (uncached) during the last period is skipped, and so is one that could not change
    where an uncached prompt of that size goes (``probe_relevant``, ``PROBE_BY_NEED``).
    A cold endpoint (no sample at all within the speed window: new, re-enabled, or a
    gateway with empty routing data) is probed at every size and below 8k too (last);
    ``cold_only`` probes just those (the cold-start task, every minute). Here: sizes
    above the endpoint's context and those this cycle already probed are left out.
    """
    config = gateway_config()
    done = set(ProbeResult.objects.filter(cycle=cycle).values_list("endpoint_id", "prompt_tokens"))
    measured: dict[int, set[str]] = defaultdict(set)
    for eid, bucket in _measured_since(config.probe_period_s, real=True):
        measured[eid].add(bucket)
    known = {eid for eid, _ in _measured_since(config.speed_max_age_s, real=False)}
    by_volume = live_config().probe_spend_share > 0 and not cold_only
    summary = None
    if (config.probe_by_need or by_volume) and not cold_only:
        summary = load_speed_summary()
    speed = summary if config.probe_by_need else None
    sizes = sorted(config.probe_sizes)
    targets = []
    for slug, model in load_catalog().items():
        infos = [route.info for route in model.endpoints]
        for route in model.endpoints:
            eid, info = route.endpoint_id, route.info
            cold = eid not in known
            if (endpoint_id is not None and eid != endpoint_id) or (cold_only and not cold):
                continue
            known_buckets = measured.get(eid, ())
            wanted = probe_sizes(
                info,
                model.info,
                infos,
                sizes,
                measured=known_buckets,
                cold=cold,
                speed=speed,
                tuning=config.tuning,
            )
            for size in wanted:
                if size + 1 <= info.context_length and (eid, size) not in done:
                    targets.append(ProbeTarget(slug, route, size))
    if by_volume:
        targets = within_volume(targets, summary)
    return within_budget(targets)


def probe_cost(target: ProbeTarget) -> Decimal:
    """What one probe costs: its uncached prompt and one output token."""
    return call_cost(
        prices=target.route.prices,
        prompt_tokens=target.prompt_tokens,
        cached_tokens=0,
        completion_tokens=1,
    )


def within_volume(targets: list[ProbeTarget], summary) -> list[ProbeTarget]:
    """Probes by volume (``PROBE_SPEND_SHARE`` s > 0, issue 10): a target is kept only
    if the probes of its model's size bucket over the last ``PROBE_SPEND_WINDOW_S``
    (an hour), it included, cost at most s x what customers paid for that model's
    requests of that bucket in the same time (``routing.core.probe.within_volume_share``).
    A target whose endpoint has no data in the bucket is kept (cold start)."""
    conf = live_config()
    share = conf.probe_spend_share
    since = timezone.now() - timedelta(seconds=conf.probe_spend_window_s)
    customer = unscoped_spend_by_model_bucket(since=since)
    probes = probe_spend_by_model_bucket(since=since)
    kept = []
    for target in targets:
        key = (target.model_slug, bucket_for(target.prompt_tokens))
        cost = probe_cost(target)
        spent = probes.get(key, Decimal(0))
        no_data = summary.typical(target.route.endpoint_id, key[1]) is None
        if no_data or within_volume_share(
            float(customer.get(key, 0)), float(spent), float(cost), share
        ):
            kept.append(target)
            probes[key] = spent + cost
    return kept


def within_budget(targets: list[ProbeTarget]) -> list[ProbeTarget]:
    """The targets today's probe budget still pays for (``PROBE_DAILY_BUDGET_USD``, UTC
    day, all models; 0 = no limit), in order: once the day's spend is reached, probes
    stop until 00:00 UTC (cold-start probes included; real traffic still measures). Each
    probe reserves its worst cost (with confirmations). Endpoint tasks of one cycle run
    concurrently and each checks its own probes, so one cycle may go over by at most the
    other endpoints' probes of that cycle."""
    budget = live_config().probe_daily_budget_usd
    if budget <= 0 or not targets:
        return targets
    spent = float(probe_spend_today())
    kept = []
    for target in targets:
        cost = float(probe_cost(target))
        if within_probe_budget(spent, cost, budget):
            kept.append(target)
            spent += probe_worst_cost(cost)
    return kept


def probe_endpoint_ids(cycle: int) -> list[int]:
    """The endpoints with something left to probe in this cycle (one task each)."""
    return sorted({target.route.endpoint_id for target in probe_targets(cycle)})


def _has_token(chunk: dict) -> bool:
    """A chunk carrying the first token (or the end): not a bare role chunk, which an
    Anthropic upstream's ``message_start`` becomes before any token was produced."""
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta") or {}
        if choice.get("finish_reason") or any(
            delta.get(k) for k in ("content", "reasoning_content", "reasoning", "tool_calls")
        ):
            return True
    return False


async def _time_first_token(target: ProbeTarget) -> float:
    body = {
        "model": target.route.upstream_model,
        "messages": probe_prompt(target.prompt_tokens),
        "stream": True,
        "max_tokens": 1,
    }
    route = target.route
    call = UpstreamCall(
        route.url,
        protocols.upstream_body(route.protocol, body, None),
        route.authorization,
        route.protocol,
    )
    started = time.perf_counter()
    stream = await open_stream(call)
    try:
        while (data := await stream.next_data()) is not None and data != "[DONE]":
            chunk = orjson.loads(data)
            if chunk.get("error"):
                raise UpstreamError("http", redact(str(chunk["error"]), route.authorization), 502)
            if _has_token(chunk):
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
    cost = call_cost(
        prices=target.route.prices,
        prompt_tokens=target.prompt_tokens * len(ttfts),
        cached_tokens=0,
        completion_tokens=len(ttfts),
    )
    ProbeResult.objects.bulk_create(
        [
            ProbeResult(
                cycle=cycle,
                endpoint_id=target.route.endpoint_id,
                status=status,
                prompt_tokens=target.prompt_tokens,
                ttft_ms=ttft_ms,
                cost_usd=cost,
                error_message=error[:2000],
            )
        ],
        ignore_conflicts=True,
    )
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
            async with asyncio.timeout(providers_config().probe_timeout_s):
                ttfts, restart = await _measure(target)
        except (UpstreamError, TimeoutError) as exc:
            status = "failed"
            error = getattr(exc, "message", "") or "probe timed out"
            await mark_unusable_now(target.route.endpoint_id, target.prompt_tokens)
            metrics.observe_unusable_mark(target.route.provider_slug)
        cost = await db_call(_record)(cycle, target, ttfts, status, error, restart)
        metrics.observe_probe(target.route.provider_slug, status, float(cost))
        return status


async def probe_cycle(
    cycle: int | None = None, endpoint_id: int | None = None, *, cold_only: bool = False
) -> dict[str, int]:
    """Run (the rest of) one probe cycle, of every endpoint or of one (only its cold
    endpoints with ``cold_only``); returns counts by status. One endpoint's sizes run
    concurrently, so its run lasts about its slowest probe (with confirmations), at most
    ``PROBE_TIMEOUT_S``."""
    cycle = current_cycle() if cycle is None else cycle
    targets = await db_call(probe_targets)(cycle, endpoint_id, cold_only=cold_only)
    limit = asyncio.Semaphore(live_config().probe_concurrency)
    statuses = await asyncio.gather(*(_probe(cycle, t, limit) for t in targets))
    return {status: statuses.count(status) for status in set(statuses)}


async def probe_cycle_once(
    cycle: int | None = None, endpoint_id: int | None = None, *, cold_only: bool = False
) -> dict[str, int]:
    """``probe_cycle`` on a loop of its own (a Celery task): cleans up before it ends."""
    try:
        return await probe_cycle(cycle, endpoint_id, cold_only=cold_only)
    finally:
        await drain_background()
        await close_client()
