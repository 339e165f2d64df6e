"""Per-key monthly spend limits, checked on the chat hot path before any upstream call.

A key's spend this calendar month (UTC) is read from the ledger and kept in process
memory for ``SPEND_CACHE_TTL_S`` seconds, so a busy key costs one query every few
seconds, not one per request; from half that on it is re-read in the background, so a
key in steady use never waits for it. The limit is soft by that much: calls already in flight,
and calls in the cache window, can take a key slightly past its limit.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from decimal import Decimal

from django.conf import settings
from django.db import DatabaseError

from uberllm.aio import db_call, run_in_background

from .selectors import api_key_month_spend, month_start

SPEND_CACHE_TTL_S = 5.0
_MAX_CACHED_KEYS = 100_000

# api_key_id -> (expires at (monotonic), month the spend is for, spend this month)
_cache: dict[int, tuple[float, datetime, Decimal]] = {}
_refreshing: dict[int, asyncio.Task] = {}
_forgotten = 0  # bumped by forget_key_spend: a re-read started before must not store


def _ttl() -> float:
    return float(settings.UBERLLM.get("KEY_SPEND_CACHE_TTL_S", SPEND_CACHE_TTL_S))


def forget_key_spend(api_key_id: int | None = None) -> None:
    """Drop one key's cached spend (or every key's, with no argument)."""
    global _forgotten
    _forgotten += 1
    if api_key_id is None:
        _cache.clear()
    else:
        _cache.pop(api_key_id, None)


async def _read(organisation_id: int, api_key_id: int, month: datetime) -> Decimal:
    forgotten = _forgotten
    spend = await db_call(api_key_month_spend)(
        organisation_id=organisation_id, api_key_id=api_key_id, now=month
    )
    if forgotten == _forgotten:
        if len(_cache) >= _MAX_CACHED_KEYS:
            _cache.clear()
        _cache[api_key_id] = (time.monotonic() + _ttl(), month, spend)
    return spend


async def _reread(organisation_id: int, api_key_id: int, month: datetime) -> None:
    try:
        await _read(organisation_id, api_key_id, month)
    except DatabaseError:
        pass  # the cached spend keeps serving; the next request tries again
    finally:
        _refreshing.pop(api_key_id, None)


async def _month_spend(organisation_id: int, api_key_id: int, month: datetime) -> Decimal:
    now = time.monotonic()
    hit = _cache.get(api_key_id)
    if hit is not None and hit[0] > now and hit[1] == month:
        if now >= hit[0] - _ttl() / 2 and api_key_id not in _refreshing:
            _refreshing[api_key_id] = run_in_background(_reread(organisation_id, api_key_id, month))
        return hit[2]
    try:
        return await _read(organisation_id, api_key_id, month)
    except DatabaseError:
        if hit is not None and hit[1] == month:
            return hit[2]  # the database is away: the last known spend this month
        raise


async def key_over_monthly_limit(principal) -> str | None:
    """The error message to answer with (HTTP 402) when the calling key has spent its
    monthly limit this calendar month (UTC), else None. Keys without a limit cost nothing."""
    limit = principal.monthly_limit_usd
    if limit is None:
        return None
    month = month_start()
    spend = await _month_spend(principal.organisation_id, principal.api_key_id, month)
    if spend < Decimal(limit):
        return None
    return (
        f"This API key has reached its monthly spend limit of ${Decimal(limit):.2f} "
        f"(spent ${spend:.2f} since {month:%Y-%m-%d} UTC). An owner can raise the limit "
        "on the dashboard's API keys page."
    )
