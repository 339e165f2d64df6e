"""A small key-value interface over the shared store: Redis when ``REDIS_URL`` is set,
else process memory (the embedded default runs one gateway process).

Used for what must be fast on the hot path and may expire: unusable marks (R2.7) and
remembered prompt prefixes per endpoint (R2.3).
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

from django.conf import settings


class SharedKV(Protocol):
    async def get_many(self, keys: list[str]) -> dict[str, str]: ...
    async def set(self, key: str, value: str, ttl_s: float) -> None: ...
    async def hgetall_many(self, keys: list[str]) -> list[dict[str, str]]: ...
    async def hset(self, key: str, field: str, value: str, ttl_s: float) -> None: ...


class LocalKV:
    """Process memory with expiry (the same contract as RedisKV)."""

    def __init__(self, clock=time.time) -> None:
        self._values: dict[str, tuple[float, object]] = {}
        self._clock = clock

    def _get(self, key: str):
        hit = self._values.get(key)
        if hit is None or hit[0] < self._clock():
            self._values.pop(key, None)
            return None
        return hit[1]

    async def get_many(self, keys: list[str]) -> dict[str, str]:
        return {k: v for k in keys if isinstance(v := self._get(k), str)}

    async def set(self, key: str, value: str, ttl_s: float) -> None:
        self._values[key] = (self._clock() + ttl_s, value)

    async def hgetall_many(self, keys: list[str]) -> list[dict[str, str]]:
        return [dict(v) if isinstance(v := self._get(k), dict) else {} for k in keys]

    async def hset(self, key: str, field: str, value: str, ttl_s: float) -> None:
        current = self._get(key)
        mapping = current if isinstance(current, dict) else {}
        mapping[field] = value
        self._values[key] = (self._clock() + ttl_s, mapping)


class RedisKV:
    """Redis through redis.asyncio, one client per event loop."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._clients: dict[asyncio.AbstractEventLoop, object] = {}

    def _client(self):
        import redis.asyncio as redis

        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = redis.Redis.from_url(self._url, decode_responses=True)
        return client

    async def get_many(self, keys: list[str]) -> dict[str, str]:
        if not keys:
            return {}
        values = await self._client().mget(keys)
        return {k: v for k, v in zip(keys, values, strict=True) if v is not None}

    async def set(self, key: str, value: str, ttl_s: float) -> None:
        await self._client().set(key, value, px=max(1, int(ttl_s * 1000)))

    async def hgetall_many(self, keys: list[str]) -> list[dict[str, str]]:
        if not keys:
            return []
        async with self._client().pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.hgetall(key)
            return await pipe.execute()

    async def hset(self, key: str, field: str, value: str, ttl_s: float) -> None:
        async with self._client().pipeline(transaction=False) as pipe:
            pipe.hset(key, field, value)
            pipe.pexpire(key, max(1, int(ttl_s * 1000)))
            await pipe.execute()


_kv: SharedKV | None = None


def shared_kv() -> SharedKV:
    global _kv
    if _kv is None:
        _kv = RedisKV(settings.REDIS_URL) if settings.REDIS_URL else LocalKV()
    return _kv


def key(*parts: object) -> str:
    """Namespaced key, e.g. key("unusable", 12) -> "ullm:unusable:12"."""
    prefix = settings.UBERLLM.get("SHARED_KEY_PREFIX", "ullm")
    return ":".join([prefix, *map(str, parts)])
