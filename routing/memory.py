"""What routing knows, as an in-process snapshot the request path reads without I/O.

The shared truth lives in PostgreSQL (speed samples, the hedge budget row) and Redis
(unusable marks, remembered prompt prefixes). Each gateway process keeps a copy:

- a background refresher (one task per event loop) re-reads speed summaries, marks and
  the hedge budget every ``SPEED_CACHE_TTL_S`` seconds, and tails the shared log of
  remembered prefixes, so another process's lessons arrive within about a second;
- this process's own lessons apply to its copy at once (``routing.outbox`` writes them
  to the shared stores in the background).

The copy is the routing core's ``RoutingKnowledge`` (``memory.knowledge``, one per
process, without a speed book of its own: the refresher sets its ``shared_speed``,
merges the marks into ``marks`` and the prefix log into ``prefixes``); the core's
``SmartRouter`` reads and teaches it (routing/gateway/router.py, accept.py).

A chat request never awaits a shared store before its upstream call. When a store is
down the refresher logs, backs off and keeps the last snapshot: routing degrades to
slightly stale knowledge, calls keep being served, and the backlog is written once the
store is back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timedelta

from django.db.models import F, Q, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from common.aio import db_call, run_service

from . import budget
from .catalog import catalog_cache
from .config import gateway_config, live_config
from .core.knowledge import RoutingKnowledge
from .core.speed import SpeedBook, SpeedSummary, speed_bucket, summarise
from .core.speed import SpeedSample as CoreSample
from .core.speed import SpeedSample as TimedSample
from .models import SpeedSample
from .shared import key, shared_kv

logger = logging.getLogger(__name__)
KEEP_WARM_S = 10.0  # refresh while requests came within this long


# What the speed summary reads of a sample, in this order.
SAMPLE_FIELDS = (
    "endpoint_id",
    "bucket",
    "cached",
    "ttft_ms",
    "output_tokens_per_s",
    "restarts_window",
    "created_at",
    "prompt_tokens",
)


def _windowed_samples(config, endpoint_ids: list[int] | None = None):
    """The newest ``speed_window_size`` samples per (endpoint, bucket, cached or not) of
    the last ``speed_max_age_s`` (of ``endpoint_ids`` only, if given)."""
    since = timezone.now() - timedelta(seconds=config.speed_max_age_s)
    ranked = SpeedSample.objects.filter(created_at__gte=since)
    if endpoint_ids is not None:
        ranked = ranked.filter(endpoint_id__in=endpoint_ids)
    return ranked.annotate(
        rank=Window(
            RowNumber(), partition_by=[F("endpoint_id"), F("bucket"), F("cached")], order_by="-id"
        )
    ).filter(rank__lte=config.speed_window_size)


def load_speed_summary(endpoint_ids: list[int] | None = None) -> SpeedSummary:
    """The newest ``SPEED_WINDOW_SIZE`` samples per (endpoint, bucket, cached or not),
    summarised with each window's newest sample time (stale data is explored)."""
    config = gateway_config()
    ranked = _windowed_samples(config, endpoint_ids)
    samples: dict[tuple[int, str], list[TimedSample]] = defaultdict(list)
    restarted: set[tuple[int, str]] = set()
    throughput: dict[int, list[float]] = defaultdict(list)
    rows = ranked.order_by("-id").values_list(*SAMPLE_FIELDS)
    stale_after_s = config.speed_stale_after_s
    for row in rows:  # newest first
        endpoint_id, bucket, cached, ttft_ms, tps, restarts, created_at, size = row
        speed_key, t = (endpoint_id, speed_bucket(bucket, cached)), created_at.timestamp()
        window = samples[speed_key]
        if window and window[-1].t - t > stale_after_s:
            restarted.add(speed_key)  # a long silence restarts the window (as SpeedBook)
        if speed_key in restarted:
            continue  # older than the window's restart (a confirmed probe shift, a gap)
        window.append(TimedSample(t, ttft_ms / 1000, prompt_tokens=size or 0))
        if restarts:
            restarted.add(speed_key)
        if tps:
            throughput[endpoint_id].append(tps)
    medians = {eid: sorted(v)[len(v) // 2] for eid, v in throughput.items()}
    return summarise(samples, medians, now=time.time(), stale_after_s=stale_after_s)


class SpeedFeed:
    """The speed summary kept up to date incrementally: each refresh reads only the
    samples written since the previous one (all processes' and probes'), into a
    ``SpeedBook`` with the same window rules as ``load_speed_summary``; a full reload
    every ``FULL_RELOAD_S`` bounds any drift. Reading every sample of the last hours
    each second cost a gateway most of a core once traffic had written a few thousand.

    A row committed late, with a lower id than one already read, is still picked up:
    the ids skipped over just below a newer one (``gaps``: another process's batch not
    yet committed, or a rolled-back one) are asked for again by id for ``GAP_TTL_S``;
    after a full reload (which reads only each window's newest rows, so its gaps are
    unknown) the next read covers the whole ``OVERLAP_IDS`` once. Each id is applied
    once. A transaction committing later than that is picked up by the next full reload.
    (Before, every read re-read the last ``OVERLAP_IDS`` rows: up to 5,000 rows a second
    per process, ~4 % of a core, under load and for 10 s after it.)
    """

    FULL_RELOAD_S = 300.0
    OVERLAP_IDS = 5_000
    GAP_IDS = 500  # how far below a newer id a skipped id can be a batch in flight
    GAP_TTL_S = 30.0  # how long a skipped id is asked for again
    MAX_GAPS = 1_000  # more than this: one read of the whole overlap instead
    BATCH = 20_000

    def __init__(self) -> None:
        self.book: SpeedBook | None = None
        self.last_id = 0
        self.full_at = 0.0
        self._seen: set[int] = set()
        self._gaps: dict[int, float] = {}  # skipped id -> when (monotonic) it was seen skipped
        self._overlap_next = True  # the next incremental read covers the whole overlap
        self.rows_read = 0  # by the last load (for tests and benchmarks)

    def _note_gaps(self, row_id: int) -> None:
        """``row_id`` is beyond every id read so far: the ids just below it are gaps."""
        if self.last_id and row_id > self.last_id + 1:
            now = time.monotonic()
            for gap in range(max(self.last_id + 1, row_id - self.GAP_IDS), row_id):
                self._gaps[gap] = now

    def _apply(self, rows) -> None:
        assert self.book is not None
        for row in rows:
            row_id, endpoint_id, bucket, cached, ttft_ms, tps, restarts, created_at, size = row
            self.rows_read += 1
            if row_id in self._seen:
                continue
            self._seen.add(row_id)
            self._gaps.pop(row_id, None)
            self._note_gaps(row_id)
            if restarts:
                self.book.restart(endpoint_id, speed_bucket(bucket, cached))
            t = created_at.timestamp()
            sample = CoreSample(t, ttft_ms / 1000, cached=cached, prompt_tokens=size or 0)
            self.book.record(endpoint_id, bucket, sample)
            if tps:
                self.book.record_throughput(endpoint_id, tps)
            self.last_id = max(self.last_id, row_id)
        floor = self.last_id - self.OVERLAP_IDS
        if len(self._seen) > 4 * self.OVERLAP_IDS:
            self._seen = {i for i in self._seen if i > floor}
        if self._gaps:
            since = time.monotonic() - self.GAP_TTL_S
            self._gaps = {i: at for i, at in self._gaps.items() if i > floor and at >= since}

    def load(self) -> SpeedSummary:
        """The current summary (sync: runs in a database thread)."""
        config = gateway_config()
        now = time.time()
        fields = ("id", *SAMPLE_FIELDS)
        self.rows_read = 0
        if self.book is None or now - self.full_at > self.FULL_RELOAD_S:
            self.book = SpeedBook(
                config.speed_window_size,
                config.speed_max_age_s,
                stale_after_s=config.speed_stale_after_s,
            )
            self.last_id, self._seen, self.full_at = 0, set(), now
            self._overlap_next = True
            ranked = _windowed_samples(config)
            self._apply(ranked.order_by("id").values_list(*fields))
            self._gaps = {}  # unknown after a windowed read: the next read overlaps
        elif self._overlap_next or len(self._gaps) > self.MAX_GAPS:
            self._overlap_next = False
            overlap = SpeedSample.objects.filter(id__gt=self.last_id - self.OVERLAP_IDS)
            self._apply(overlap.order_by("id").values_list(*fields)[: self.BATCH])
            # Every row of the overlap that exists was read: the ids left near the top
            # may be batches in flight (lower ones are deleted or rolled-back rows).
            floor, at = max(0, self.last_id - self.GAP_IDS), time.monotonic()
            self._gaps = {i: at for i in range(floor + 1, self.last_id + 1) if i not in self._seen}
        else:
            newer = Q(id__gt=self.last_id)
            if self._gaps:
                newer |= Q(id__in=sorted(self._gaps))
            rows = SpeedSample.objects.filter(newer).order_by("id").values_list(*fields)
            self._apply(rows[: self.BATCH])
        return self.book.summary(now)


def _new_knowledge() -> RoutingKnowledge:
    """The process's knowledge: no speed book of its own (the refresher sets the shared
    summary), our calls in flight counted by the relay (``LiveAttempt.opening``)."""
    return RoutingKnowledge(gateway_config(), defaultdict(int), own_speed=False)


@dataclass(slots=True)
class RoutingMemory:
    """The process's snapshot: the routing core's knowledge (every read a dictionary
    lookup), kept fresh by the refresher, and the hedge budget left."""

    knowledge: RoutingKnowledge = field(default_factory=_new_knowledge)
    hedge_budget_remaining_usd: float = float("inf")  # unknown until the first refresh
    hedge_budget_day: int | None = None  # the UTC day (``budget_day``) that figure is for
    refreshed_at: float = 0.0  # monotonic time of the last complete refresh
    used_at: float = 0.0  # monotonic time of the last request that read the snapshot
    store_errors: int = 0  # consecutive failed refreshes

    def current(self) -> RoutingKnowledge:
        """The knowledge, under the current settings (one identity check a read)."""
        knowledge, config = self.knowledge, gateway_config()
        if knowledge.config is not config:
            knowledge.configure(config)
        return knowledge

    def hedge_budget_left(self, day: int) -> float:
        """The snapshot's budget left today (unknown, so not limiting, on a new day)."""
        if day != self.hedge_budget_day:
            return float("inf")
        return self.hedge_budget_remaining_usd

    def apply_marks(self, marks: dict[int, str]) -> None:
        """Other processes' marks from the shared store (``until|strikes``)."""
        merge = self.knowledge.marks.merge
        for endpoint_id, value in marks.items():
            until, _, strikes = value.partition("|")
            merge(endpoint_id, float(until), int(strikes or 0))


memory = RoutingMemory()


def expire_snapshot() -> None:
    """The next request waits (briefly) for a fresh refresh of the shared state: what
    every process learnt so far is then in the snapshot (tests use it instead of
    sleeping through the refresh period)."""
    memory.refreshed_at = 0.0
    refresher.reset()


def reset_memory() -> None:
    """Forget everything this process learnt (tests; the shared stores keep theirs)."""
    fresh = RoutingMemory()
    for name in RoutingMemory.__slots__:
        setattr(memory, name, getattr(fresh, name))
    refresher.reset()


# --- the background refresher -------------------------------------------------------------
class Refresher:
    """One task per event loop keeping ``memory`` fresh; started by the first request."""

    def __init__(self) -> None:
        self._tasks: dict[asyncio.AbstractEventLoop, asyncio.Task] = {}
        self._first: dict[asyncio.AbstractEventLoop, asyncio.Event] = {}
        self._wake: dict[asyncio.AbstractEventLoop, asyncio.Event] = {}
        self._prefix_log_id = "$"
        self.speed_feed = SpeedFeed()

    def reset(self) -> None:
        self._prefix_log_id = "$"
        self.speed_feed = SpeedFeed()
        for event in self._first.values():
            event.clear()

    async def ready(self, timeout_s: float = 2.0) -> None:
        """Start the refresher; on a cold start (nothing loaded yet) wait, at most
        ``timeout_s``, for its first refresh, so a new process does not route blind."""
        self.ensure_started()
        now = memory.used_at = time.monotonic()
        loop = asyncio.get_running_loop()
        if memory.refreshed_at:
            if now - memory.refreshed_at > KEEP_WARM_S:
                self._wake[loop].set()  # back from a quiet spell: refresh now, don't wait
            return
        first = self._first[loop]
        self._wake[loop].set()
        try:
            async with asyncio.timeout(timeout_s):
                await first.wait()
        except TimeoutError:
            pass

    def ensure_started(self) -> None:
        loop = asyncio.get_running_loop()
        task = self._tasks.get(loop)
        if task is None or task.done():
            self._first[loop], self._wake[loop] = asyncio.Event(), asyncio.Event()
            self._tasks[loop] = run_service(self._run(self._first[loop], self._wake[loop]))

    async def refresh_now(self) -> None:
        """One refresh (also what tests and a cold start await)."""
        await self._refresh_shared()

    async def _run(self, first: asyncio.Event, wake: asyncio.Event) -> None:
        backoff = 0.0
        while True:
            period = live_config().speed_cache_ttl_s
            try:
                await self._refresh_shared()
                backoff = 0.0
                memory.store_errors = 0
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                first.set()
                memory.store_errors += 1
                backoff = min(10.0, max(0.5, backoff * 2))
                if memory.store_errors in (1, 10, 100):
                    logger.warning("routing memory refresh failed (%r); keeping the snapshot", exc)
            first.set()
            wake.clear()
            # A quiet process sleeps until its next request: no idle CPU, no idle queries.
            quiet = time.monotonic() - memory.used_at > KEEP_WARM_S
            try:
                async with asyncio.timeout(None if quiet else period + backoff):
                    await wake.wait()
            except TimeoutError:
                pass

    async def _refresh_shared(self) -> None:

        ids = sorted(eid for model in catalog_cache.snapshot().values() for eid in model.by_id)
        memory.knowledge.shared_speed = await db_call(self.speed_feed.load)()
        day = budget.utc_today()  # looked up at each call: a test moves the day
        memory.hedge_budget_remaining_usd = float(await db_call(budget.hedge_budget_left_usd)(day))
        memory.hedge_budget_day = budget.day_number(day)
        memory.refreshed_at = time.monotonic()
        await self._refresh_redis(ids)

    async def _refresh_redis(self, ids: list[int]) -> None:
        kv = shared_kv()
        if ids:
            values = await kv.get_many([key("unusable", eid) for eid in ids])
            marks = {eid: values[k] for eid in ids if (k := key("unusable", eid)) in values}
            memory.apply_marks(marks)
        self._prefix_log_id, entries = await kv.read_log(key("prefix-log"), self._prefix_log_id)
        remember = memory.knowledge.prefixes.remember
        for prefix_hash, endpoint_id, expires_at in entries:
            remember(prefix_hash, endpoint_id, expires_at)


refresher = Refresher()
