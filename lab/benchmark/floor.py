"""The floor of this stack: an ASGI app that only relays the provider's bytes.

``manage.py bench_overhead --app lab.benchmark.floor:application`` serves it in the
gateway's place (uvicorn, uvloop, httptools, the same load): no key, no routing, no
rewriting, no ledger. What it adds to a stream is what uvicorn, an upstream client and
one more loopback hop cost; the gateway's own work is its figure minus this one.

Two upstream clients (``UBERLLM_FLOOR_CLIENT``): ``aiohttp`` (the gateway's, default)
and ``raw``, a keep-alive asyncio protocol with httptools' C parser and nothing else
(no pool limits, TLS, timeouts or egress checks): what a hand-written client could save
at best. The upstream URL is ``UBERLLM_BENCH_UPSTREAM`` (set by ``bench_overhead``).
Not a product path: a benchmark instrument.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import httptools

SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
_sessions: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = {}
_idle: list[RawConnection] = []


def upstream_url() -> str:
    return os.environ["UBERLLM_BENCH_UPSTREAM"]


async def _body(receive) -> bytes:
    parts = []
    while True:
        message = await receive()
        parts.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(parts)


async def _start(send, status: int) -> None:
    await send({"type": "http.response.start", "status": status, "headers": SSE_HEADERS})


async def relay_aiohttp(scope: dict[str, Any], receive, send) -> None:
    """Relay through a pooled aiohttp session (the gateway's upstream client)."""
    loop = asyncio.get_running_loop()
    session = _sessions.get(loop)
    if session is None:
        session = _sessions[loop] = aiohttp.ClientSession(auto_decompress=False)
    body = await _body(receive)
    async with session.post(
        upstream_url(), data=body, headers={"content-type": "application/json"}
    ) as response:
        await _start(send, response.status)
        while chunk := await response.content.readany():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


class RawConnection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection; each parsed piece goes to ``queue``: the
    status (an int), body bytes, then ``b""`` at the end of the response, ``None`` if the
    connection is lost."""

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.queue: asyncio.Queue = asyncio.Queue()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def connection_lost(self, exc) -> None:
        self.transport = None
        self.queue.put_nowait(None)

    def on_headers_complete(self) -> None:
        self.queue.put_nowait(self.parser.get_status_code())

    def on_body(self, body: bytes) -> None:
        self.queue.put_nowait(body)

    def on_message_complete(self) -> None:
        self.queue.put_nowait(b"")


async def _raw_connection(host: str, port: int) -> RawConnection:
    while _idle:
        connection = _idle.pop()
        if connection.transport is not None:
            return connection
    _, connection = await asyncio.get_running_loop().create_connection(RawConnection, host, port)
    return connection


async def relay_raw(scope: dict[str, Any], receive, send) -> None:
    """Relay through a hand-written keep-alive client (httptools' parser)."""
    url = urlsplit(upstream_url())
    body = await _body(receive)
    connection = await _raw_connection(url.hostname or "127.0.0.1", url.port or 80)
    assert connection.transport is not None
    connection.transport.write(
        b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (url.path.encode(), url.netloc.encode(), len(body), body)
    )
    status = await connection.queue.get()
    await _start(send, status if isinstance(status, int) else 502)
    while chunk := await connection.queue.get():
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    if chunk == b"":  # the response ended, the connection is reusable
        _idle.append(connection)
    await send({"type": "http.response.body", "body": b""})


async def application(scope: dict[str, Any], receive, send) -> None:
    if scope["type"] != "http":
        return  # lifespan: nothing to start
    if scope["method"] != "POST":  # the benchmark's readiness check (GET /api/v1/models)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": b'{"object":"list","data":[]}'})
        return
    relay = relay_raw if os.environ.get("UBERLLM_FLOOR_CLIENT") == "raw" else relay_aiohttp
    await relay(scope, receive, send)
