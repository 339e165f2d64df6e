"""Checkpoints of the calls in flight: every ``LEDGER_CHECKPOINT_S`` (1 s) one background
task per process looks at each live call and queues, through the ledger writer (one
batch, one transaction for all of them: no database work per call or per chunk), a
checkpoint of those whose billable numbers changed (a stream delivering tokens: once
per interval) and a bare heartbeat of the others every ``LEDGER_HEARTBEAT_S`` (30 s).

A stream's checkpoint bills what it delivered, plus, while the provider's usage has not
come, the tokens it will deliver in the next ``LEDGER_CHECKPOINT_LEAD_S`` at its rate so
far (capped by its max_tokens): the row of a process killed before its next checkpoint
is durable still covers every token its clients received. A process that dies stops
checkpointing: the reconciler (``billing.ledger.activity_reconcile``, beat every
``RECONCILE_EVERY_S``) closes its rows once their last beat is ``RECONCILE_AFTER_S``
old, billing the checkpoint (docs/security.md, "Money: partial calls, one rule").
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from billing.ledger import Checkpoint, OpenRow
from billing.ledger_writer import queue_checkpoints
from common.aio import run_service

from ..config import live_config
from .finish import open_row

# A stream's rate is measured over at least this long: a burst of first tokens does not
# make a rate of thousands per second (and it is capped by max_tokens anyway); short, so
# that a stream checkpointed just after its first token is not projected too slow.
MIN_RATE_WINDOW_S = 0.05


@dataclass(slots=True)
class _Mark:
    """What this process last checkpointed of one call."""

    beat_at: float  # monotonic: the last checkpoint's, or the call's start
    billed: tuple = ()  # (endpoint id, completion tokens billed, estimated): () none yet


_live: dict[Any, _Mark] = {}  # routing.gateway.call.LiveCall -> its mark
_task: asyncio.Task | None = None


def register(call: Any) -> None:
    """A call started: checkpoint it until ``unregister``."""
    global _task
    _live[call] = _Mark(time.monotonic())
    loop = asyncio.get_running_loop()
    if _task is None or _task.done() or _task.get_loop() is not loop:
        _task = run_service(_beat())


def unregister(call: Any) -> None:
    _live.pop(call, None)


def output_cap(call: Any) -> int | None:
    """The most output tokens the call's serving provider may send (None: unbounded)."""
    accepted = call.accepted
    caps = (
        accepted.max_tokens_cap,
        accepted.chat.max_tokens,
        call.served.route.info.max_output_tokens,
    )
    caps = [cap for cap in caps if cap]
    return min(caps) if caps else None


def billed_completion(call: Any, at: float) -> tuple[int, bool]:
    """(completion tokens a checkpoint of the served ``call`` bills, estimated) at
    ``at`` (perf_counter): the provider's count once it reported usage, else the tokens
    delivered plus those due within ``LEDGER_CHECKPOINT_LEAD_S`` at the stream's rate."""
    attempt = call.served
    _, _, completion, estimated = attempt.usage_numbers(call.accepted)
    if not estimated or attempt.rewriter.finished:
        return completion, estimated
    first_token = attempt.started + (attempt.ttft_ms or 0) / 1000
    rate = completion / max(at - first_token, MIN_RATE_WINDOW_S)
    billed = completion + math.ceil(rate * live_config().ledger_checkpoint_lead_s)
    cap = output_cap(call)
    return (billed if cap is None else max(completion, min(billed, cap))), True


def checkpoint(call: Any, now: datetime, billed: tuple = ()) -> tuple[OpenRow, Checkpoint]:
    """One live call's checkpoint: alive, plus (``billed``, once served: endpoint,
    completion tokens, estimated) what its serving leg is billed for so far."""

    accepted, served = call.accepted, call.served
    if served is None or not billed:
        return open_row(accepted), Checkpoint(accepted.request_id, now)
    prompt, cached, _, _ = served.usage_numbers(accepted)
    _, completion, estimated = billed
    cost = served.cost_of(prompt, cached, completion)
    return open_row(accepted), Checkpoint(
        accepted.request_id,
        now,
        endpoint_id=served.route.endpoint_id,
        provider_slug=served.route.provider_slug,
        prompt_tokens=prompt,
        cached_tokens=cached,
        completion_tokens=completion,
        cost_usd=cost,
        usage_estimated=estimated,
        prices={k: str(v) for k, v in served.route.prices.items()},
    )


def due_checkpoints(now: datetime) -> list[tuple[OpenRow, Checkpoint]]:
    """The checkpoints to write now: every call whose billed numbers changed since its
    last one, and a heartbeat of every other call last beaten ``LEDGER_HEARTBEAT_S`` ago."""
    clock, at = time.monotonic(), time.perf_counter()
    conf = live_config()
    heartbeat_s, young = conf.ledger_heartbeat_s, clock - conf.ledger_checkpoint_after_s
    due = []
    for call, mark in list(_live.items()):
        if not mark.billed and mark.beat_at > young:
            continue  # not checkpointed yet and younger than LEDGER_CHECKPOINT_AFTER_S
        billed = (
            ()
            if call.served is None
            else (call.served.route.endpoint_id, *billed_completion(call, at))
        )
        if billed != mark.billed or clock - mark.beat_at >= heartbeat_s:
            due.append(checkpoint(call, now, billed))
            mark.beat_at, mark.billed = clock, billed
    return due


async def _beat() -> None:
    while _live:
        await asyncio.sleep(live_config().ledger_checkpoint_s)
        due = due_checkpoints(timezone.now())
        if due:
            queue_checkpoints(due)
