"""The ASGI lifespan of a gateway process: start the change listener at startup; at
shutdown (SIGTERM, after uvicorn has let the requests in flight finish), wait for the
background work they left (ledger and learning writes) so no ledger row is left pending.

``uberllm.asgi``'s ProtocolTypeRouter routes the ``lifespan`` scope here, so
``uvicorn uberllm.asgi:application`` (``make run``, the fleet, the Dockerfile) runs it.
"""

from __future__ import annotations

import asyncio
import gc
import logging

from common import events
from common.aio import drain_background
from common.config import process_config
from common.tracing import configure_tracing

logger = logging.getLogger(__name__)


async def _startup() -> None:

    events.start_listener()
    configure_tracing()
    freeze_startup_objects()


def freeze_startup_objects() -> None:
    """Move every object alive after startup (Django, the apps, their modules: a few
    hundred thousand) out of the garbage collector's reach (``gc.freeze``). They live as
    long as the process, and a full collection would otherwise walk them all, stalling
    the event loop for tens of milliseconds every few hundred requests.

    Then set the collector's thresholds (``GC_THRESHOLDS``). The calls in flight hold
    many young objects (a stream's are alive for its whole length) that reference
    counting frees when the call ends (cyclic garbage is rare here: 6 objects in 5 s of
    32 streams); with Python's 700 allocations a young collection walks them again and
    again and promotes them, so middle and full collections come often and walk tens of
    thousands (docs/benchmarks.md, round 20)."""
    gc.collect()
    gc.freeze()
    thresholds = process_config().gc_thresholds
    if thresholds:
        gc.set_threshold(*thresholds)


async def _shutdown() -> None:

    timeout = process_config().drain_background_timeout_s
    try:
        async with asyncio.timeout(timeout):
            # Shielded: at the timeout the writes are left running, not cancelled (they
            # may still land while the process winds down).
            await asyncio.shield(drain_background())
    except TimeoutError:
        logger.warning(
            "background writes still running after %.0f s at shutdown; the "
            "reconciler will close their ledger rows",
            timeout,
        )


async def lifespan(scope, receive, send) -> None:
    """The ASGI lifespan protocol: startup and shutdown hooks, each acknowledged."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await _startup()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await _shutdown()
            await send({"type": "lifespan.shutdown.complete"})
            return
