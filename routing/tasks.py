"""Celery tasks of routing: thin, they call services."""

from __future__ import annotations

import asyncio

from celery import shared_task
from celery.signals import worker_ready

from common.queues import queue_sizes_sample
from providers.config import providers_config

from .budget import hedge_budget_open_day
from .config import gateway_config
from .probes import current_cycle, probe_cycle_once, probe_endpoint_ids
from .services import history_prune

# A per-endpoint probe task ends within PROBE_TIMEOUT_S (the probes' own timeout) plus
# its database writes; its Celery limits sit this far above, so they never fire first.
PROBE_TASK_MARGIN_S = 30.0


@shared_task(name="routing.probe_endpoints")
def probe_endpoints_task(cycle: int | None = None) -> int:
    """R5, every PROBE_PERIOD_S (beat): one ``routing.probe_endpoint`` task per endpoint
    with probes left in this cycle. Returns how many were queued."""

    cycle = current_cycle() if cycle is None else cycle
    timeout = providers_config().probe_timeout_s
    endpoint_ids = probe_endpoint_ids(cycle)
    for endpoint_id in endpoint_ids:
        probe_endpoint_task.apply_async(
            kwargs={"cycle": cycle, "endpoint_id": endpoint_id},
            expires=gateway_config().probe_period_s,
            soft_time_limit=timeout + PROBE_TASK_MARGIN_S,
            time_limit=timeout + 2 * PROBE_TASK_MARGIN_S,
        )
    return len(endpoint_ids)


@shared_task(name="routing.probe_endpoint")
def probe_endpoint_task(cycle: int, endpoint_id: int) -> dict[str, int]:
    """Probe one endpoint at every probe size (idempotent per cycle); counts by status."""

    return asyncio.run(probe_cycle_once(cycle, endpoint_id))


@shared_task(name="routing.prune_history")
def prune_history_task() -> dict[str, int]:
    """Retention: speed samples past SPEED_MAX_AGE_S, probe results past their age."""

    return history_prune()


@shared_task(name="routing.probe_cold_endpoints")
def probe_cold_endpoints_task() -> dict[str, int]:
    """Cold start (issue 10): probe, at once, endpoints without any speed data (new,
    re-enabled, or all of them after ``make run``), below 8k too. Beat: every minute;
    also sent when a worker is ready."""

    return asyncio.run(probe_cycle_once(cold_only=True))


@worker_ready.connect
def _probe_cold_endpoints_at_start(**_: object) -> None:
    probe_cold_endpoints_task.delay()


@shared_task(name="routing.hedge_budget_open_day")
def hedge_budget_open_day_task() -> str:
    """R3.4: at 00:00 UTC, open the new day's hedge budget (a new row: a full budget)."""

    return str(hedge_budget_open_day())


@shared_task(name="routing.sample_queue_sizes")
def sample_queue_sizes_task() -> dict[str, int]:
    """Metrics: the Celery broker's queue lengths (uberllm_queue_size)."""

    return queue_sizes_sample()
