"""Celery tasks of routing: thin, they call services."""

from __future__ import annotations

import asyncio

from celery import shared_task


@shared_task(name="routing.probe_endpoints")
def probe_endpoints_task(cycle: int | None = None) -> dict[str, int]:
    """R5: probe every enabled endpoint at each probe size (idempotent per cycle)."""
    from .probes import probe_cycle_once

    return asyncio.run(probe_cycle_once(cycle))


@shared_task(name="routing.hedge_budget_open_day")
def hedge_budget_open_day_task() -> str:
    """R3.4: at 00:00 UTC, open the new day's hedge budget (a new row: a full budget)."""
    from .budget import hedge_budget_open_day

    return str(hedge_budget_open_day())
