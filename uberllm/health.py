"""Readiness checks for ``/readyz``: each returns (ok, detail) and never raises.

Liveness (``/healthz``) does no I/O at all: it says the process answers, nothing more,
so a database outage never gets healthy processes restarted by an orchestrator.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor

from common import events
from common.squashed_migrations import partly_applied_squashes
from routing.catalog import load_catalog

REDIS_TIMEOUT_S = 1.0
_migrations_applied = False  # once true, stays true for the life of the process


def check_database() -> tuple[bool, str]:
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return True, connections[DEFAULT_DB_ALIAS].vendor


def check_redis() -> tuple[bool, str]:
    if not settings.REDIS_URL:
        return True, "not configured (in-process stores)"
    import redis

    client = redis.Redis.from_url(
        settings.REDIS_URL, socket_timeout=REDIS_TIMEOUT_S, socket_connect_timeout=REDIS_TIMEOUT_S
    )
    try:
        client.ping()
    finally:
        client.close()
    return True, "ping ok"


def check_events() -> tuple[bool, str]:
    """The change listener is subscribed (started here if it was not). Never fails
    readiness: without it, changes still arrive within the cache TTLs."""

    if not events.start_listener():
        return True, "in-process (no Redis)"
    if events.wait_listening(0.5):
        return True, "subscribed"
    return True, "not subscribed yet (changes arrive within the cache TTLs)"


def check_migrations() -> tuple[bool, str]:
    global _migrations_applied
    if _migrations_applied:
        return True, "all applied"

    partly = partly_applied_squashes(connections[DEFAULT_DB_ALIAS])
    if partly:
        return False, "; ".join(partly)
    executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if plan:
        names = ", ".join(f"{m.app_label}.{m.name}" for m, _ in plan[:5])
        return False, f"{len(plan)} unapplied: {names}"
    _migrations_applied = True
    return True, "all applied"


def check_catalog() -> tuple[bool, str]:

    catalog = load_catalog()
    endpoints = sum(len(model.endpoints) for model in catalog.values())
    return True, f"{len(catalog)} models, {endpoints} enabled endpoints"


CHECKS: dict[str, Callable[[], tuple[bool, str]]] = {
    "database": check_database,
    "redis": check_redis,
    "events": check_events,
    "migrations": check_migrations,
    "catalog": check_catalog,
}


def readiness() -> tuple[bool, dict[str, dict]]:
    """Run every check (the catalog and migrations only if the database answers)."""
    results: dict[str, dict] = {}
    for name, check in CHECKS.items():
        if name in ("migrations", "catalog") and not results["database"]["ok"]:
            results[name] = {"ok": False, "detail": "skipped: database unreachable"}
            continue
        started = time.perf_counter()
        try:
            ok, detail = check()
        except Exception as exc:  # a check reports; it never fails the probe itself
            ok, detail = False, f"{type(exc).__name__}: {str(exc)[:200]}"
            if name == "database":
                connections[DEFAULT_DB_ALIAS].close()  # reconnect on the next check
        elapsed_ms = round((time.perf_counter() - started) * 1000, 1)
        results[name] = {"ok": ok, "detail": detail, "ms": elapsed_ms}
    return all(r["ok"] for r in results.values()), results
