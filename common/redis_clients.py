"""redis.asyncio clients for the request path: one per event loop (a client's pool is
bound to the loop that made it), a bounded blocking pool, and short timeouts so a Redis
outage degrades a call instead of hanging it."""

from __future__ import annotations

import asyncio

REDIS_TIMEOUT_S = 2.0


def loop_client(clients: dict, url: str, *, max_connections: int):
    """The client of this event loop in ``clients`` (made on first use)."""
    import redis.asyncio as redis

    loop = asyncio.get_running_loop()
    client = clients.get(loop)
    if client is None:
        pool = redis.BlockingConnectionPool.from_url(
            url,
            decode_responses=True,
            max_connections=max_connections,
            timeout=REDIS_TIMEOUT_S,
            socket_timeout=REDIS_TIMEOUT_S,
            socket_connect_timeout=REDIS_TIMEOUT_S,
        )
        client = clients[loop] = redis.Redis(connection_pool=pool)
    return client
