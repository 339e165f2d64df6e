"""The gateway's ledger writes, off the request path: one bounded queue per process,
drained in batches by a background task (one thread hop and one transaction per batch,
not per call; it lingers 50 ms for a small batch, so a short call's opening and ending
usually become one INSERT). Under load it writes at most once per
``LEDGER_FLUSH_INTERVAL_S`` (0.2 s): measured, one transaction per call cost the
gateway a fifth of its CPU per paced stream on SQLite (docs/benchmarks.md, round 7).

A stream's pending row is queued when it is accepted, and flushed within
``URGENT_LINGER_S`` (5 ms) when the writer is quiet, within the flush interval under
load (a process killed mid-stream after that leaves it for the reconciler, one killed
before loses it with the rest of its queue);
a non-streaming call's only once it has run ``OPEN_DEFER_S`` (1 s), so a short one is a
single INSERT of the finished row.
The outcome is queued when the call ends, and the writer applies all in order. While
the database is unreachable the writer keeps the rows and retries with back-off, so a
paused PostgreSQL delays rows but loses none, and the idempotent writes
(``billing.ledger.ledger_write``) make a retried batch write each row exactly once.
Rows still queued when a process is killed are lost with it; rows left pending by such
a process are closed by the reconciler.
"""

from __future__ import annotations

import asyncio
import time

from billing.config import billing_config
from billing.ledger import CallResult, Checkpoint, LedgerItem, OpenRow, ledger_write
from billing.live import activity_group
from billing.services import record_rejected_request
from common.aio import WRITER_THREAD, BatchWriter, db_call, run_service

_write = db_call(ledger_write, WRITER_THREAD)
NOTIFY_TIMEOUT_S = 1.0
# A stream's pending row is written this long after acceptance: its upstream request has
# left by then (the write does not delay it), the openings of that moment share one
# INSERT, and a call that ended within it is a single INSERT of the finished row.
URGENT_LINGER_S = 0.005


class JustFinished:
    """Outcomes this process has queued and not written yet, by request id.

    ``GET /generation`` (billing.generations.generation_record) answers from them, so a record
    read right after a reply carries the call's final figures, not the pending row (or
    no row) the database holds until the next batch. The event loop adds and forgets;
    request threads only ``get`` (a dict's get and set are atomic under the GIL)."""

    MAX_ITEMS = 100_000  # beyond the writer's backlog bound: only a dropped batch's rows

    def __init__(self) -> None:
        self._items: dict[str, tuple[OpenRow, CallResult]] = {}

    def add(self, row: OpenRow, result: CallResult) -> None:
        if len(self._items) >= self.MAX_ITEMS:
            self._items.pop(next(iter(self._items)), None)
        self._items[row.request_id] = (row, result)

    def forget(self, batch: list[LedgerItem]) -> None:
        for row, result in batch:
            if isinstance(result, CallResult):
                self._items.pop(row.request_id, None)

    def get(self, request_id: str) -> tuple[OpenRow, CallResult] | None:
        return self._items.get(request_id)


just_finished = JustFinished()


async def _flush(batch: list[LedgerItem]) -> None:
    await _write(batch)
    just_finished.forget(batch)
    await _notify_dashboards(batch)


async def _notify_dashboards(batch: list[LedgerItem]) -> None:
    """Tell live Activity pages of the finished rows: one channel-layer message per
    organisation and batch; best effort (the page falls back to refreshing)."""
    from channels.layers import get_channel_layer

    by_organisation: dict[int, list[dict]] = {}
    finished = {row.request_id for row, result in batch if result is not None}
    for row, result in batch:
        if isinstance(result, Checkpoint):
            continue
        if result is None and row.request_id in finished:
            continue  # opened and finished in this batch: one event
        status, provider = (result.status, result.provider_slug) if result else ("pending", "")
        by_organisation.setdefault(row.organisation_id, []).append(
            {
                "event": "activity",
                "request_id": row.request_id,
                "status": status,
                "model": row.model_slug,
                "provider": provider,
            }
        )
    layer = get_channel_layer()
    if layer is None or not by_organisation:
        return
    try:
        async with asyncio.timeout(NOTIFY_TIMEOUT_S):
            for organisation_id, payloads in by_organisation.items():
                message = {"type": "activity.update", "payloads": payloads}
                await layer.group_send(activity_group(organisation_id), message)
    except Exception:  # noqa: S110 - a dashboard missing an update refreshes itself
        pass


ledger_writer: BatchWriter[LedgerItem] = BatchWriter(
    "ledger",
    _flush,
    max_items=1_000_000,
    batch_size=200,
    retry=True,
    linger_s=0.05,
    urgent_linger_s=URGENT_LINGER_S,
    # At most one transaction per interval under load, however many calls start.
    min_interval_s=billing_config().ledger_flush_interval_s,
)


class DeferredOpens:
    """Pending rows waiting ``OPEN_DEFER_S`` before they are queued for writing."""

    def __init__(self) -> None:
        self.rows: dict[str, tuple[float, OpenRow]] = {}
        self._task: asyncio.Task | None = None

    def add(self, row: OpenRow) -> None:
        self.rows[row.request_id] = (time.monotonic() + OPEN_DEFER_S, row)
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done() or self._task.get_loop() is not loop:
            self._task = run_service(self._release_due())

    def drop(self, request_id: str) -> bool:
        return self.rows.pop(request_id, None) is not None

    async def _release_due(self) -> None:
        while self.rows:
            await asyncio.sleep(min(0.25, OPEN_DEFER_S))
            now = time.monotonic()
            for request_id, (due, row) in list(self.rows.items()):
                if due <= now and self.rows.pop(request_id, None) is not None:
                    ledger_writer.put((row, None))


OPEN_DEFER_S = 1.0
deferred_opens = DeferredOpens()
ledger_writer.pending_elsewhere = lambda: len(deferred_opens.rows)


def queue_open(row: OpenRow) -> None:
    if row.stream:
        ledger_writer.put((row, None), urgent=True)  # on disk before the first token
    else:
        deferred_opens.add(row)


def queue_finish(row: OpenRow, result: CallResult) -> None:
    deferred_opens.drop(row.request_id)  # ended within the deferral: one INSERT
    just_finished.add(row, result)
    ledger_writer.put((row, result))


def queue_checkpoints(checkpoints: list[tuple[OpenRow, Checkpoint]]) -> None:
    """Heartbeats of the calls in flight (routing.gateway.heartbeat): best effort, a
    full queue drops them (the next beat carries newer numbers)."""
    for item in checkpoints:
        ledger_writer.put(item)


def _record_rejected_batch(batch: list[dict]) -> None:

    for fields in batch:
        record_rejected_request(**fields)


_record_rejected = db_call(_record_rejected_batch)


async def _flush_rejected(batch: list[dict]) -> None:
    await _record_rejected(batch)


rejected_writer: BatchWriter[dict] = BatchWriter(
    "rejected-requests", _flush_rejected, max_items=100_000, batch_size=100, retry=False
)


def queue_rejected(**fields) -> None:
    """A 4xx the chat endpoint answered to an identified key (shown on Activity)."""
    rejected_writer.put(fields)
