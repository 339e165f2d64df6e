"""Async helpers shared by the hot path.

Database calls from async code run in the default thread pool (``thread_sensitive``
off): a request's thread-sensitive executor is gone once the request ends, and the
ledger and learning writes outlive the request (a client disconnect must not lose them).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import close_old_connections

P = ParamSpec("P")
R = TypeVar("R")
_background: set[asyncio.Task] = set()


def db_call(func: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
    """``await db_call(fn)(...)``: run a sync ORM function in the thread pool."""

    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        close_old_connections()  # drop a connection the database has closed
        return func(*args, **kwargs)

    return sync_to_async(run, thread_sensitive=False)


def run_in_background(coro: Coroutine[Any, Any, R]) -> asyncio.Task[R]:
    """Start ``coro`` detached from the current request: a fresh context, so it is not
    tied to the request's executor, and a kept reference, so it is not collected."""
    task = asyncio.get_running_loop().create_task(coro, context=contextvars.Context())
    _background.add(task)
    task.add_done_callback(_background.discard)
    return task


async def drain_background() -> None:
    """Wait for this loop's background tasks (before a short-lived loop ends)."""
    loop = asyncio.get_running_loop()
    pending = [task for task in _background if task.get_loop() is loop]
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
