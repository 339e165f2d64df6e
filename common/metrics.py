"""Prometheus metrics of the gateway and the Celery worker (prometheus-client).

Every metric is defined here, once; the hot path and the tasks call the plain
``observe_*`` / ``set_*`` functions below, never the metric objects, so labels stay
consistent and cardinality bounded (labels come from the catalog and fixed sets).

Multiprocess mode: when ``PROMETHEUS_MULTIPROC_DIR`` is set (before this module is
imported: prometheus-client picks its value class at import), every process (uvicorn
workers, Celery prefork children) writes its samples to files in that folder and a
scrape aggregates them all. ``run_demo`` and ``deploy/fleet.sh`` set it per run under
``var/`` and empty it at start. Without it, one process serves its own registry.
"""

from __future__ import annotations

import atexit
import os
import time

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
    multiprocess,
)

# No ``*_created`` series: multiprocess mode cannot have them, so neither does one process.
disable_created_metrics()

MULTIPROC_DIR = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
if MULTIPROC_DIR:  # unlabelled metrics open their file as they are defined, below
    os.makedirs(MULTIPROC_DIR, exist_ok=True)
CONTENT_TYPE = CONTENT_TYPE_LATEST

# Seconds: TTFT spans a 5 ms emulator to a 3 min long-prompt prefill.
TTFT_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 180)
TOTAL_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 40, 80, 160, 320, 600)
LAG_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
TASK_BUCKETS = (0.05, 0.1, 0.5, 1, 2.5, 5, 10, 20, 30, 45, 60, 120)

REQUESTS = Counter(
    "uberllm_requests",
    "Chat requests finished, by model, serving provider, status and protocol.",
    ["model", "provider", "status", "protocol"],
)
TTFT = Histogram(
    "uberllm_ttft_seconds",
    "Time to first token seen by the client, by serving provider and prompt-size bucket.",
    ["provider", "bucket"],
    buckets=TTFT_BUCKETS,
)
TOTAL_TIME = Histogram(
    "uberllm_request_duration_seconds",
    "Total time of a chat request, by serving provider and prompt-size bucket.",
    ["provider", "bucket"],
    buckets=TOTAL_BUCKETS,
)
UPSTREAM_ATTEMPTS = Counter(
    "uberllm_upstream_attempts",
    "Upstream calls started (first tries, retries and hedge legs), by provider and outcome.",
    ["provider", "outcome"],
)
RETRIES = Counter("uberllm_retries", "Retries after a failed attempt, by model.", ["model"])
HEDGES = Counter(
    "uberllm_hedges", "Hedged calls, by serving provider and result.", ["provider", "result"]
)
CANCELLATIONS = Counter(
    "uberllm_cancellations", "Calls the client cancelled (disconnected), by provider.", ["provider"]
)
COST = Counter(
    "uberllm_cost_usd", "Upstream cost of served calls billed to customers (USD).", ["provider"]
)
PLATFORM_COST = Counter(
    "uberllm_platform_cost_usd",
    "Upstream cost the platform pays (cancelled hedge legs, probes), USD.",
    ["provider", "kind"],
)
HEDGE_BUDGET_REMAINING = Gauge(
    "uberllm_hedge_budget_remaining_usd",
    "Today's hedge budget left (USD), as last read by any process.",
    multiprocess_mode="mostrecent",
)
UNUSABLE_MARKS = Counter(
    "uberllm_unusable_marks", "Endpoints marked unusable (R2.7), by provider.", ["provider"]
)
INFLIGHT = Gauge(
    "uberllm_inflight_requests",
    "Chat requests in flight, summed over live processes.",
    multiprocess_mode="livesum",
)
POOL_CONNECTIONS = Gauge(
    "uberllm_upstream_pool_connections",
    "Upstream HTTP connections open, summed over live processes.",
    multiprocess_mode="livesum",
)
QUEUE_SIZE = Gauge(
    "uberllm_queue_size",
    "Messages waiting in a queue (Celery broker queues), as last sampled.",
    ["queue"],
    multiprocess_mode="mostrecent",
)
LEDGER_LAG = Histogram(
    "uberllm_ledger_write_lag_seconds",
    "From a call's end to its Activity row being final.",
    buckets=LAG_BUCKETS,
)
PROBES = Counter("uberllm_probes", "Probes (R5), by provider and status.", ["provider", "status"])
PRUNED_ROWS = Counter("uberllm_pruned_rows", "Rows deleted by retention, by table.", ["table"])
LEDGER_ORPHANS = Counter(
    "uberllm_ledger_orphans",
    "Ledger rows whose parent was deleted while the call was in flight: organisation gone "
    "(dropped) or key / endpoint gone (written without the link).",
    ["action"],
)
TASKS = Counter("uberllm_celery_tasks", "Celery task runs, by task and state.", ["task", "state"])
TASK_DURATION = Histogram(
    "uberllm_celery_task_duration_seconds",
    "Celery task run time, by task.",
    ["task"],
    buckets=TASK_BUCKETS,
)


def _provider(provider: str | None) -> str:
    return provider or "none"


def observe_call(
    *,
    model: str,
    provider: str | None,
    status: str,
    protocol: str,
    bucket: str,
    ttft_s: float | None,
    total_s: float,
    attempts: int = 1,
    retries: int = 0,
    hedged: bool = False,
    hedge_won: bool = False,
    cancelled: bool = False,
    cost_usd: float = 0.0,
    platform_cost_usd: float = 0.0,
) -> None:
    """Record one finished chat call. Called once per request, where the call ends.

    ``model`` must be a catalog slug (or ``"unknown"``: never an unchecked client
    string, which would make one time series per typo); ``provider`` the provider that
    served (None when none did); ``status`` the Activity status (``success``,
    ``error``, ``cancelled``); ``protocol`` ``stream`` or ``json``; ``bucket`` the prompt-size
    bucket. ``attempts`` counts upstream calls of the request including hedge legs
    (for information: attempts are counted by ``observe_upstream_attempt``).
    ``platform_cost_usd`` is the cost of cancelled hedge legs, paid by the platform.
    """
    served_by = _provider(provider)
    REQUESTS.labels(model, served_by, status, protocol).inc()
    if ttft_s is not None:
        TTFT.labels(served_by, bucket).observe(ttft_s)
    TOTAL_TIME.labels(served_by, bucket).observe(total_s)
    if retries:
        RETRIES.labels(model).inc(retries)
    if hedged:
        HEDGES.labels(served_by, "won" if hedge_won else "lost").inc()
    if cancelled:
        CANCELLATIONS.labels(served_by).inc()
    if cost_usd:
        COST.labels(served_by).inc(float(cost_usd))
    if platform_cost_usd:
        PLATFORM_COST.labels(served_by, "hedge").inc(float(platform_cost_usd))


def observe_upstream_attempt(provider: str, outcome: str) -> None:
    """One upstream call ended: ``outcome`` is ``ok``, ``http``, ``timeout``,
    ``connect``, ``protocol`` or ``cancelled`` (the UpstreamError kinds)."""
    UPSTREAM_ATTEMPTS.labels(_provider(provider), outcome).inc()


def observe_probe(provider: str, status: str, cost_usd: float) -> None:
    PROBES.labels(_provider(provider), status).inc()
    if cost_usd:
        PLATFORM_COST.labels(_provider(provider), "probe").inc(float(cost_usd))


def set_hedge_budget_remaining(usd: float) -> None:
    HEDGE_BUDGET_REMAINING.set(float(usd))


def observe_unusable_mark(provider: str) -> None:
    UNUSABLE_MARKS.labels(_provider(provider)).inc()


def set_inflight(n: int) -> None:
    """This process's chat requests in flight (the scrape sums live processes)."""
    INFLIGHT.set(n)


def set_pool_connections(n: int) -> None:
    POOL_CONNECTIONS.set(n)


def observe_ledger_lag(seconds: float) -> None:
    LEDGER_LAG.observe(max(0.0, seconds))


def set_queue_size(name: str, n: int) -> None:
    QUEUE_SIZE.labels(name).set(n)


def observe_ledger_orphan(action: str) -> None:
    LEDGER_ORPHANS.labels(action).inc()


def observe_pruned(table: str, rows: int) -> None:
    if rows:
        PRUNED_ROWS.labels(table).inc(rows)


def render(path: str | None = None) -> bytes:
    """The exposition text: every live process's samples in multiprocess mode (or those
    under ``path``), else this process's registry."""
    path = path or MULTIPROC_DIR
    if not path:
        from prometheus_client import REGISTRY

        return generate_latest(REGISTRY)
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=path)
    return generate_latest(registry)


def _mark_dead() -> None:
    # livesum/liveall gauges of this process stop counting once it exits.
    multiprocess.mark_process_dead(os.getpid())


if MULTIPROC_DIR:
    atexit.register(_mark_dead)


# --- Celery task metrics (connected by uberllm.celery) --------------------------------
_task_started: dict[str, float] = {}


def _on_task_prerun(task_id=None, task=None, **_kwargs) -> None:
    if task_id:
        _task_started[task_id] = time.perf_counter()


def _on_task_postrun(task_id=None, task=None, state=None, **_kwargs) -> None:
    name = getattr(task, "name", "unknown")
    started = _task_started.pop(task_id, None)
    if started is not None:
        TASK_DURATION.labels(name).observe(time.perf_counter() - started)
    TASKS.labels(name, (state or "unknown").lower()).inc()


def connect_celery_signals() -> None:
    """Count task runs by final state (success, failure, retry) and time them."""
    from celery import signals

    signals.task_prerun.connect(_on_task_prerun, weak=False)
    signals.task_postrun.connect(_on_task_postrun, weak=False)
