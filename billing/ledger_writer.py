"""The gateway's ledger writes, off the request path: one bounded queue per process,
drained in batches by a background task (one thread hop per batch, not per call).

A call's pending row is queued when it is accepted and its outcome when it ends; the
writer applies them in order. While the database is unreachable the writer keeps the
rows and retries with back-off, so a paused PostgreSQL delays rows but loses none, and
the idempotent writes (``billing.ledger.ledger_write``) make a retried batch write each
row exactly once. Rows still queued when a process is killed are lost with it; rows
left pending by such a process are closed by the reconciler.
"""

from __future__ import annotations

from billing.ledger import CallResult, OpenRow, ledger_write
from uberllm.aio import BatchWriter, db_call

_write = db_call(ledger_write)


async def _flush(batch: list[tuple[OpenRow, CallResult | None]]) -> None:
    await _write(batch)


ledger_writer: BatchWriter[tuple[OpenRow, CallResult | None]] = BatchWriter(
    "ledger", _flush, max_items=1_000_000, batch_size=100, retry=True
)


def queue_open(row: OpenRow) -> None:
    ledger_writer.put((row, None))


def queue_finish(row: OpenRow, result: CallResult) -> None:
    ledger_writer.put((row, result))
