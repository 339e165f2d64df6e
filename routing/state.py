"""What routing knows right now, per model, cached briefly in each process.

Speed samples live in the database and unusable marks in the shared KV, so every
gateway process sees the same numbers; each process's copy is never older than
``SPEED_CACHE_TTL_S`` seconds, and its own new marks apply at once. The copy is
refreshed ahead, from half its TTL on, in the background, and kept warm that way for
``KEEP_WARM_S`` after a model's last request: a request waits for the refresh query
only after a longer pause.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db.models import F, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from uberllm.aio import db_call, run_in_background

from .catalog import CatalogModel
from .core.marks import unusable_window
from .core.speed import SpeedSummary, summarise
from .models import SpeedSample
from .shared import key, shared_kv


def load_speed_summary(endpoint_ids: list[int]) -> SpeedSummary:
    """The newest ``SPEED_WINDOW_SIZE`` samples per (endpoint, bucket), summarised."""
    conf = settings.UBERLLM
    since = timezone.now() - timedelta(seconds=conf["SPEED_MAX_AGE_S"])
    ranked = SpeedSample.objects.filter(endpoint_id__in=endpoint_ids, created_at__gte=since)
    ranked = ranked.annotate(
        rank=Window(RowNumber(), partition_by=[F("endpoint_id"), F("bucket")], order_by="-id")
    ).filter(rank__lte=conf["SPEED_WINDOW_SIZE"])
    samples: dict[tuple[int, str], list[float]] = defaultdict(list)
    restarted: set[tuple[int, str]] = set()
    throughput: dict[int, list[float]] = defaultdict(list)
    rows = ranked.order_by("-id").values_list(
        "endpoint_id", "bucket", "ttft_ms", "output_tokens_per_s", "restarts_window"
    )
    for endpoint_id, bucket, ttft_ms, tps, restarts in rows:  # newest first
        key = (endpoint_id, bucket)
        if key in restarted:
            continue  # older than the window's restart (a confirmed probe shift)
        samples[key].append(ttft_ms / 1000)
        if restarts:
            restarted.add(key)
        if tps:
            throughput[endpoint_id].append(tps)
    medians = {eid: sorted(v)[len(v) // 2] for eid, v in throughput.items()}
    return summarise(samples, medians)


@dataclass(slots=True)
class ModelRoutingState:
    speed: SpeedSummary = field(default_factory=SpeedSummary)
    unusable_until: dict[int, float] = field(default_factory=dict)
    strikes: dict[int, int] = field(default_factory=dict)  # consecutive refusals
    expires: float = 0.0  # past this, a request waits for the refresh
    refresh_at: float = 0.0  # past this, a request starts a refresh in the background
    refreshing: asyncio.Task | None = None
    model: CatalogModel | None = None  # as last requested (the catalog may reload)
    used_at: float = 0.0  # last request (monotonic)

    def unusable(self, now: float) -> frozenset[int]:
        return frozenset(eid for eid, until in self.unusable_until.items() if until > now)


KEEP_WARM_S = 10.0


class RoutingStateCache:
    def __init__(self) -> None:
        self._states: dict[str, ModelRoutingState] = {}

    def _state(self, slug: str) -> ModelRoutingState:
        return self._states.setdefault(slug, ModelRoutingState())

    async def get(self, model: CatalogModel) -> ModelRoutingState:
        """State no older than SPEED_CACHE_TTL_S. One refresh (a query of about a
        millisecond) runs at a time, started from half the TTL on; only a request that
        finds the state past its TTL waits for it (concurrent ones wait for the same)."""
        state = self._state(model.info.slug)
        now = state.used_at = time.monotonic()
        state.model = model
        if now >= state.refresh_at:
            task = self._start_refresh(state)
            if now >= state.expires:
                await asyncio.shield(task)
        return state

    def _start_refresh(self, state: ModelRoutingState) -> asyncio.Task:
        task = state.refreshing
        if task is None or task.done() or task.get_loop() is not asyncio.get_running_loop():
            task = state.refreshing = run_in_background(self._refresh(state.model, state))
        return task

    def _keep_warm(self, state: ModelRoutingState) -> None:
        """The next refresh ahead, while the model is in use (a timer callback)."""
        current = state.model is not None and self._states.get(state.model.info.slug) is state
        now = time.monotonic()
        if current and now >= state.refresh_at and now - state.used_at < KEEP_WARM_S:
            self._start_refresh(state)

    async def _refresh(self, model: CatalogModel, state: ModelRoutingState) -> None:
        ids = list(model.by_id)
        state.speed = await db_call(load_speed_summary)(ids)
        marks = await shared_kv().get_many([key("unusable", eid) for eid in ids])
        for eid in ids:
            mark = marks.get(key("unusable", eid))
            if mark is None:
                state.strikes.pop(eid, None)
                continue
            until, _, strikes = mark.partition("|")
            state.unusable_until[eid] = max(float(until), state.unusable_until.get(eid, 0))
            state.strikes[eid] = int(strikes or 0)
        ttl = settings.UBERLLM["SPEED_CACHE_TTL_S"]
        now = time.monotonic()
        state.expires, state.refresh_at = now + ttl, now + ttl / 2
        if now - state.used_at < KEEP_WARM_S:
            asyncio.get_running_loop().call_later(ttl / 2, self._keep_warm, state)

    def strikes(self, model_slug: str, endpoint_id: int) -> int:
        return self._state(model_slug).strikes.get(endpoint_id, 0)

    def mark_unusable(self, model_slug: str, endpoint_id: int, until: float, strikes: int):
        state = self._state(model_slug)
        state.unusable_until[endpoint_id] = until
        if strikes:
            state.strikes[endpoint_id] = strikes
        else:
            state.strikes.pop(endpoint_id, None)

    def invalidate(self) -> None:
        self._states.clear()


routing_state = RoutingStateCache()


def mark_unusable(model_slug: str, endpoint_id: int) -> None:
    """R2.7: this endpoint refused a call; skip it, everywhere, for a window that doubles
    with each consecutive refusal (UNUSABLE_FIRST_WINDOW_S up to UNUSABLE_WINDOW_S)."""
    conf = settings.UBERLLM
    strikes = routing_state.strikes(model_slug, endpoint_id) + 1
    window = unusable_window(strikes, conf["UNUSABLE_FIRST_WINDOW_S"], conf["UNUSABLE_WINDOW_S"])
    until = time.time() + window
    routing_state.mark_unusable(model_slug, endpoint_id, until, strikes)
    # The streak outlives the mark, so the next refusal waits longer.
    value, keep = f"{until!r}|{strikes}", window + conf["UNUSABLE_WINDOW_S"]
    run_in_background(shared_kv().set(key("unusable", endpoint_id), value, keep))


def record_served(model_slug: str, endpoint_id: int) -> None:
    """The endpoint served a call: its streak of refusals ends (shared)."""
    if routing_state.strikes(model_slug, endpoint_id):
        routing_state.mark_unusable(model_slug, endpoint_id, 0.0, 0)
        run_in_background(shared_kv().set(key("unusable", endpoint_id), "0.0|0", 1.0))
