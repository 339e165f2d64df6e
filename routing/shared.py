"""A small key-value interface over the shared store: Redis when ``REDIS_URL`` is set,
else process memory (the embedded default runs one gateway process).

Only background tasks use it (``routing.memory``'s refresher, ``routing.outbox``'s
writer, probes): the request path reads the in-process snapshot instead. That matters
beyond speed: redis-py's asyncio client can swallow a task's cancellation, and a
pool that is full fails instead of waiting; neither may touch a client's request.
The Redis client here waits for a pooled connection (bounded) and times out its
socket operations, so an outage surfaces as an exception the caller logs and retries.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

from django.conf import settings

from common.redis_clients import loop_client

from .config import live_config

PREFIX_LOG_MAXLEN = 100_000
LogEntry = tuple[str, int, float]  # (prefix hash, endpoint id, expires at)


class SharedKV(Protocol):
    async def get_many(self, keys: list[str]) -> dict[str, str]: ...
    async def set(self, key: str, value: str, ttl_s: float) -> None: ...
    async def append_log(self, log: str, entries: list[LogEntry]) -> None: ...
    async def read_log(self, log: str, after: str) -> tuple[str, list[LogEntry]]: ...


class LocalKV:
    """Process memory with expiry (the same contract as RedisKV)."""

    def __init__(self, clock=time.time) -> None:
        self._values: dict[str, tuple[float, str]] = {}
        self._clock = clock

    def _get(self, key: str) -> str | None:
        hit = self._values.get(key)
        if hit is None or hit[0] < self._clock():
            self._values.pop(key, None)
            return None
        return hit[1]

    async def get_many(self, keys: list[str]) -> dict[str, str]:
        return {k: v for k in keys if (v := self._get(k)) is not None}

    async def set(self, key: str, value: str, ttl_s: float) -> None:
        self._values[key] = (self._clock() + ttl_s, value)

    async def append_log(self, log: str, entries: list[LogEntry]) -> None:
        return None  # one process: its own memory already holds what it learnt

    async def read_log(self, log: str, after: str) -> tuple[str, list[LogEntry]]:
        return after, []


class RedisKV:
    """Redis through redis.asyncio, one client per event loop."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._clients: dict[asyncio.AbstractEventLoop, object] = {}

    def _client(self):
        return loop_client(self._clients, self._url, max_connections=16)

    async def get_many(self, keys: list[str]) -> dict[str, str]:
        if not keys:
            return {}
        values = await self._client().mget(keys)
        return {k: v for k, v in zip(keys, values, strict=True) if v is not None}

    async def set(self, key: str, value: str, ttl_s: float) -> None:
        await self._client().set(key, value, px=max(1, int(ttl_s * 1000)))

    async def append_log(self, log: str, entries: list[LogEntry]) -> None:
        if not entries:
            return
        async with self._client().pipeline(transaction=False) as pipe:
            for prefix_hash, endpoint_id, expires_at in entries:
                fields = {"h": prefix_hash, "e": endpoint_id, "x": repr(expires_at)}
                pipe.xadd(log, fields, maxlen=PREFIX_LOG_MAXLEN, approximate=True)
            await pipe.execute()

    async def read_log(self, log: str, after: str) -> tuple[str, list[LogEntry]]:
        """Entries appended after ``after`` ("$": from now on); returns the new cursor."""
        if after == "$":
            last = await self._client().xrevrange(log, count=1)
            return (last[0][0] if last else "0-0"), []
        found = await self._client().xread({log: after}, count=10_000)
        entries: list[LogEntry] = []
        for _, messages in found:
            for message_id, fields in messages:
                after = message_id
                entries.append((fields["h"], int(fields["e"]), float(fields["x"])))
        return after, entries


_kv: SharedKV | None = None


def shared_kv() -> SharedKV:
    global _kv
    if _kv is None:
        _kv = RedisKV(settings.REDIS_URL) if settings.REDIS_URL else LocalKV()
    return _kv


def key(*parts: object) -> str:
    """Namespaced key, e.g. key("unusable", 12) -> "ullm:unusable:12"."""
    prefix = live_config().shared_key_prefix
    return ":".join([prefix, *map(str, parts)])
