"""Async helpers shared by the hot path.

Database calls from async code run in the default thread pool (``thread_sensitive``
off): a request's thread-sensitive executor is gone once the request ends, and the
ledger and learning writes outlive the request (a client disconnect must not lose them).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Coroutine
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, Generic, ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import close_old_connections

logger = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")
_background: set[asyncio.Task] = set()


# The background writers' own thread (the ledger, speed samples): one thread, so one
# database connection, whose SQLite page cache stays valid from one batch to the next
# (in the default pool the batches rotated over several threads, each connection finding
# its cache stale after another one's write), and no reads of the request path queued
# behind a batch.
WRITER_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="uberllm-writer")


def db_call(
    func: Callable[P, R], executor: Executor | None = None
) -> Callable[P, Coroutine[Any, Any, R]]:
    """``await db_call(fn)(...)``: run a sync ORM function in the thread pool (or in
    ``executor``)."""

    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        close_old_connections()  # drop a connection the database has closed
        return func(*args, **kwargs)

    return sync_to_async(run, thread_sensitive=False, executor=executor)


def run_in_background(coro: Coroutine[Any, Any, R]) -> asyncio.Task[R]:
    """Start ``coro`` detached from the current request: a fresh context, so it is not
    tied to the request's executor, and a kept reference, so it is not collected."""
    task = asyncio.get_running_loop().create_task(coro, context=contextvars.Context())
    _background.add(task)
    task.add_done_callback(_background.discard)
    return task


async def drain_background() -> None:
    """Wait for this loop's background tasks and writers (before a loop ends, or at a
    process's shutdown): a writer whose store is down keeps this waiting, so callers
    bound it with a timeout."""
    loop = asyncio.get_running_loop()
    pending = [task for task in _background if task.get_loop() is loop]
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
    while any(w.pending() and w.runs_on(loop) for w in WRITERS):  # noqa: ASYNC110 - polled
        await asyncio.sleep(0.02)


_services: set[asyncio.Task] = set()


def run_service(coro: Coroutine[Any, Any, R]) -> asyncio.Task[R]:
    """Start a long-lived background loop (a refresher, a writer): like
    ``run_in_background`` but not counted as pending work by ``background_idle``."""
    task = asyncio.get_running_loop().create_task(coro, context=contextvars.Context())
    _services.add(task)
    task.add_done_callback(_services.discard)
    return task


class BatchWriter(Generic[T]):
    """A bounded queue drained by one background task per event loop, in batches.

    ``put`` never waits (the request path calls it); ``flush(batch)`` runs in the
    background. ``min_interval_s`` bounds how often it runs: an item queued within that
    time of the last flush waits for the next, with every item queued meanwhile (so
    under load a store sees a few transactions a second, not one per call, while a
    quiet writer still flushes at once). A failed flush (a store down) is retried with
    back-off when ``retry`` is set, so nothing is lost while the process lives; otherwise
    the batch is dropped after ``max_tries``. A full queue drops the new item and counts
    it in ``dropped``.
    """

    def __init__(
        self,
        name: str,
        flush: Callable[[list[T]], Coroutine[Any, Any, None]],
        *,
        max_items: int = 100_000,
        batch_size: int = 200,
        retry: bool = True,
        max_tries: int = 5,
        linger_s: float = 0.0,
        urgent_linger_s: float = 0.0,
        min_interval_s: float = 0.0,
    ) -> None:
        self.name = name
        self._flush = flush
        self.max_items = max_items
        self.batch_size = batch_size
        self.retry = retry
        self.max_tries = max_tries
        self.linger_s = linger_s  # wait this long for more items before a small batch
        self.urgent_linger_s = urgent_linger_s  # ... or this long after an urgent one
        self.min_interval_s = min_interval_s  # from one flush's start to the next
        self._last_flush = -math.inf  # time.monotonic() at the last flush's start
        self._items: deque[T] = deque()
        self._wakeup: asyncio.Event | None = None
        self._urgent = asyncio.Event()
        self._full = asyncio.Event()  # a whole batch is queued: no interval to wait
        self._task: asyncio.Task | None = None
        self.in_flight = 0
        self.dropped = 0
        self.failures = 0  # consecutive failed flushes
        WRITERS.append(self)

    def pending(self) -> int:
        return len(self._items) + self.in_flight + self.pending_elsewhere()

    @staticmethod
    def pending_elsewhere() -> int:
        """Items held back before they reach the queue (a writer may override it)."""
        return 0

    def loop_running(self) -> bool:
        task = self._task
        return task is not None and not task.done() and task.get_loop().is_running()

    def runs_on(self, loop: asyncio.AbstractEventLoop) -> bool:
        return self._task is not None and self._task.get_loop() is loop

    def put(self, item: T, *, urgent: bool = False) -> bool:
        """Queue ``item`` (never waits); ``urgent`` cuts the linger short."""
        if len(self._items) >= self.max_items:
            self.dropped += 1
            return False
        self._items.append(item)
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done() or self._task.get_loop() is not loop:
            self._wakeup, self._urgent, self._full = (
                asyncio.Event(),
                asyncio.Event(),
                asyncio.Event(),
            )
            self._task = run_service(self._run())
        self._wakeup.set()
        if len(self._items) >= self.batch_size:
            self._full.set()
        if urgent:
            self._urgent.set()
        return True

    async def _run(self) -> None:
        assert self._wakeup is not None
        while True:
            if not self._items:
                self._wakeup.clear()
                await self._wakeup.wait()
            if self.linger_s and len(self._items) < self.batch_size and not self._urgent.is_set():
                try:
                    async with asyncio.timeout(self.linger_s):
                        await self._urgent.wait()
                except TimeoutError:
                    pass
            if self._urgent.is_set():
                # An urgent item waits ``urgent_linger_s`` only: its request's upstream call
                # leaves before this write competes with it, urgent items of that moment
                # share the write, and a call ended by then is one row write.
                await asyncio.sleep(self.urgent_linger_s)
            self._urgent.clear()
            await self._keep_interval()
            batch = [self._items.popleft() for _ in range(min(self.batch_size, len(self._items)))]
            self.in_flight = len(batch)
            try:
                await self._flush_with_retries(batch)
            finally:
                self.in_flight = 0

    async def _keep_interval(self) -> None:
        """Wait out ``min_interval_s`` since the last flush, unless a full batch is queued:
        the interval is there to gather items into batches, and a full one is gathered
        already (waiting anyway capped the writer at ``batch_size`` per interval, and a
        backlog above that rate grew without bound)."""
        wait = self._last_flush + self.min_interval_s - time.monotonic()
        if wait > 0 and len(self._items) < self.batch_size:
            self._full.clear()
            try:
                async with asyncio.timeout(wait):
                    await self._full.wait()  # set by ``put`` when a batch is full
            except TimeoutError:
                pass
        self._last_flush = time.monotonic()

    async def _flush_with_retries(self, batch: list[T]) -> None:
        tries = 0
        while True:
            try:
                await self._flush(batch)
                self.failures = 0
                return
            except asyncio.CancelledError:
                self._items.extendleft(reversed(batch))
                raise
            except Exception as exc:
                tries += 1
                self.failures += 1
                if self.failures in (1, 10, 100) or self.failures % 1000 == 0:
                    logger.warning("%s: write failed (%s), retrying", self.name, exc)
                if not self.retry and tries >= self.max_tries:
                    self.dropped += len(batch)
                    return
                await asyncio.sleep(min(5.0, 0.05 * 2 ** min(tries, 7)))


def background_idle() -> bool:
    """No detached task and no writer with pending items on a running event loop (tests
    wait for this; a writer whose loop is not running, e.g. a test's own loop between
    tests, cannot make progress now and is not waited for)."""
    tasks_busy = any(not t.done() and t.get_loop().is_running() for t in _background)
    return not tasks_busy and all(w.pending() == 0 or not w.loop_running() for w in WRITERS)


WRITERS: list[BatchWriter] = []
