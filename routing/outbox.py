"""What a call teaches, shared with every gateway process in the background.

``routing.memory`` applies a lesson to this process at once; the outbox writes it to
the shared stores (speed samples to the database, marks and remembered prefixes to
Redis) through bounded queues drained by background tasks. A store that is down
delays the writes (retried with back-off); a queue that overflows drops the newest
lesson rather than grow without bound: routing then learns a little later, calls are
never affected.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from common.aio import WRITER_THREAD, BatchWriter, db_call
from common.lean_sql import Row, insert_rows

from .config import live_config
from .core.lessons import Marked, Probed
from .memory import memory
from .models import SpeedSample
from .shared import LogEntry, key, shared_kv

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class MarkLesson:
    endpoint_id: int
    until: float  # Unix time
    strikes: int  # 0: the streak ended (the endpoint served a call)
    keep_s: float  # how long the shared store keeps the streak


def _bulk_create(samples: list[SpeedSample | Row]) -> None:
    """Insert ``samples``; those of an endpoint deleted since they were queued are
    dropped (the writer would otherwise retry the batch for ever, and every later sample
    of the process would wait behind it)."""
    try:
        with transaction.atomic():
            insert_rows(SpeedSample, samples, returning=False)
        return
    except IntegrityError:
        pass
    endpoint_model = SpeedSample._meta.get_field("endpoint").related_model
    named = {sample.endpoint_id for sample in samples}
    alive = set(endpoint_model.objects.filter(id__in=named).values_list("id", flat=True))
    kept = [sample for sample in samples if sample.endpoint_id in alive]
    logger.info("speed samples: %d of a deleted endpoint dropped", len(samples) - len(kept))
    insert_rows(SpeedSample, kept, returning=False)


_bulk_create_async = db_call(_bulk_create, WRITER_THREAD)


async def _flush_samples(samples: list[SpeedSample | Row]) -> None:
    await _bulk_create_async(samples)


async def _flush_marks(marks: list[MarkLesson]) -> None:
    kv = shared_kv()
    for mark in marks:
        await kv.set(
            key("unusable", mark.endpoint_id), f"{mark.until!r}|{mark.strikes}", mark.keep_s
        )


async def _flush_prefixes(entries: list[LogEntry]) -> None:
    await shared_kv().append_log(key("prefix-log"), entries)


# A lesson waits this long for company before a quiet writer flushes it. A call's lessons
# are queued as it ends, which is when its client (a closed loop: an agent, an SDK in a
# loop) sends the next request; flushed at once, the write (a database thread, a Redis
# round trip) ran beside that request's path to its upstream: aiohttp's post took
# 1.2-1.4 ms instead of ~0.9, ~0.2 ms of added TTFT at one stream in paired runs
# (docs/benchmarks.md, round 21). Other processes read the shared store every few
# seconds anyway.
LESSON_LINGER_S = 0.05

# Speed samples reach this process's routing at once (routing.memory); the database is
# for the other processes, which re-read it every SPEED_CACHE_TTL_S anyway: one write
# per SPEED_SAMPLE_FLUSH_INTERVAL_S under load, not one per call.
sample_writer: BatchWriter[SpeedSample | Row] = BatchWriter(
    "speed-samples",
    _flush_samples,
    max_items=50_000,
    batch_size=500,
    retry=True,
    linger_s=LESSON_LINGER_S,
    min_interval_s=live_config().speed_sample_flush_interval_s,
)
mark_writer: BatchWriter[MarkLesson] = BatchWriter(
    "unusable-marks", _flush_marks, max_items=10_000, batch_size=100, retry=True
)
prefix_writer: BatchWriter[LogEntry] = BatchWriter(
    "prompt-prefixes",
    _flush_prefixes,
    max_items=100_000,
    batch_size=500,
    retry=False,
    linger_s=LESSON_LINGER_S,
)


@dataclass(frozen=True, slots=True)
class Outbox:
    """Where the live stores queue what a call taught (``put``: never waits)."""

    samples: BatchWriter[SpeedSample | Row] | Any
    marks: BatchWriter[MarkLesson] | Any
    prefixes: BatchWriter[LogEntry] | Any


OUTBOX = Outbox(sample_writer, mark_writer, prefix_writer)


async def mark_unusable_now(endpoint_id: int, prompt_tokens: int) -> None:
    """R2.7 from outside a chat call (a failed probe at ``prompt_tokens``): the process's
    knowledge learns it (``Probed`` without answers marks the endpoint), and the mark is
    written to the shared store at once (a probe task's loop ends right after, so nothing
    is left queued)."""
    import time

    now = time.time()
    knowledge = memory.current()
    marks = knowledge.learn(Probed(endpoint_id, prompt_tokens, None, False), now)
    window_s = knowledge.config.unusable_window_s
    await _flush_marks([shared_mark(mark, now, window_s) for mark in marks])


def shared_mark(mark: Marked, now: float, window_s: float) -> MarkLesson:
    """A mark for the shared store: kept a window past its deadline (the streak's
    memory); an ended streak (strikes 0) for a second."""
    if not mark.strikes:
        return MarkLesson(mark.endpoint_id, 0.0, 0, 1.0)
    return MarkLesson(mark.endpoint_id, mark.until, mark.strikes, mark.until - now + window_s)
