"""A request whose body is large does its per-message work off the event loop.

Validating a conversation, estimating its tokens and hashing its prefixes cost ~20 us a
message: nothing for an agent's 40-message prompt, but a 10 MiB body of tiny messages
(hundreds of thousands of them) would hold the loop for seconds, and every other stream of
the process with it. Bodies over ``OFF_LOOP_BODY_BYTES`` do that work in one worker
thread instead: the loop keeps relaying meanwhile (the GIL is handed back every few
milliseconds), and with a single thread big requests queue behind each other rather than
starve the loop together. Smaller bodies stay inline (a thread hop would cost more than it
saves). The work is pure (no routing memory, no database): safe in a thread, and a client
who leaves meanwhile only discards its result.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from ..config import live_config

P = ParamSpec("P")
R = TypeVar("R")

_lane = ThreadPoolExecutor(max_workers=1, thread_name_prefix="big-request")


def is_big(body_bytes: int) -> bool:
    return body_bytes > live_config().off_loop_body_bytes


async def per_message_work(body_bytes: int, fn: Callable[P, R], *args: P.args) -> R:
    """``fn(*args)``: inline for a body up to ``OFF_LOOP_BODY_BYTES``, else in the lane's
    thread (its exceptions raised here as they would be inline)."""
    if not is_big(body_bytes):
        return fn(*args)
    return await asyncio.get_running_loop().run_in_executor(_lane, fn, *args)
