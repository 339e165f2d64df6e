"""Heartbeats of the calls in flight: every ``LEDGER_HEARTBEAT_S`` one background task
per process checkpoints each live call's ledger row (alive, and once served the tokens
delivered so far and their cost), through the ledger writer, so the request path awaits
nothing. A process that dies stops beating: the reconciler (``billing.ledger.
activity_reconcile``, beat every ``RECONCILE_EVERY_S``) closes its rows once their last
beat is ``RECONCILE_AFTER_S`` old, billing what was delivered (docs/security.md).
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from billing.ledger import Checkpoint, OpenRow
from billing.ledger_writer import queue_checkpoints
from common.aio import run_service

_live: set[Any] = set()  # routing.gateway.call.LiveCall objects of this process
_task: asyncio.Task | None = None


def register(call: Any) -> None:
    """A call started: beat for it until ``unregister``."""
    global _task
    _live.add(call)
    loop = asyncio.get_running_loop()
    if _task is None or _task.done() or _task.get_loop() is not loop:
        _task = run_service(_beat())


def unregister(call: Any) -> None:
    _live.discard(call)


def checkpoint(call: Any, now: datetime) -> tuple[OpenRow, Checkpoint]:
    """One live call's checkpoint: alive, plus what its serving leg delivered so far."""
    from .finish import open_row

    accepted, served = call.accepted, call.served
    if served is None:
        return open_row(accepted), Checkpoint(accepted.request_id, now)
    cost, prompt, cached, completion, _ = served.cost(accepted)
    return open_row(accepted), Checkpoint(
        accepted.request_id, now, endpoint_id=served.route.endpoint_id,
        provider_slug=served.route.provider_slug, prompt_tokens=prompt, cached_tokens=cached,
        completion_tokens=completion, cost_usd=cost,
        prices={k: str(v) for k, v in served.route.prices.items()},
    )  # fmt: skip


async def _beat() -> None:
    while _live:
        await asyncio.sleep(float(settings.UBERLLM["LEDGER_HEARTBEAT_S"]))
        now = timezone.now()
        queue_checkpoints([checkpoint(call, now) for call in list(_live)])
