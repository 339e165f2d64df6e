"""Celery tasks of routing: thin, they call services."""

from __future__ import annotations

import asyncio

from celery import shared_task
from celery.signals import worker_ready


@shared_task(name="routing.probe_endpoints")
def probe_endpoints_task(cycle: int | None = None) -> dict[str, int]:
    """R5: probe every enabled endpoint at each probe size (idempotent per cycle)."""
    from .probes import probe_cycle_once

    return asyncio.run(probe_cycle_once(cycle))


@shared_task(name="routing.probe_cold_endpoints")
def probe_cold_endpoints_task() -> dict[str, int]:
    """Cold start (issue 10): probe, at once, endpoints without any speed data (new,
    re-enabled, or all of them after ``make run``), below 8k too. Beat: every minute;
    also sent when a worker is ready."""
    from .probes import probe_cycle_once

    return asyncio.run(probe_cycle_once(cold_only=True))


@worker_ready.connect
def _probe_cold_endpoints_at_start(**_: object) -> None:
    probe_cold_endpoints_task.delay()


@shared_task(name="routing.hedge_budget_open_day")
def hedge_budget_open_day_task() -> str:
    """R3.4: at 00:00 UTC, open the new day's hedge budget (a new row: a full budget)."""
    from .budget import hedge_budget_open_day

    return str(hedge_budget_open_day())
