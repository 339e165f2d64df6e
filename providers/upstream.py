"""The upstream client: pooled ``httpx.AsyncClient``s per process (per event loop).

The pool is split over up to ``POOL_SHARDS`` clients, filled one after the other
(``SHARD_STREAMS`` streams each, then the least busy): httpcore's pool walks every
connection it holds on each request and each response end (and every idle one against
all the others), which costs milliseconds per request once a single pool holds a
hundred kept-alive connections; small pools keep that walk short, and filling them in
order keeps a quiet process on one warm connection.

``open_stream`` sends a streaming chat request and returns once the provider answered
with HTTP 200; reading the first event is bounded by the first-token timeout, later
events by the idle timeout (httpx's read timeout). Streams are always closed in
``finally``, so a cancelled caller leaves no connection behind; a stream that ended
with ``[DONE]`` is read to its end first, so its connection goes back to the pool.

SSE is split at the byte level (``SSESplitter``) rather than with httpx-sse: one pass
over each network read instead of text decoding plus a Python call per line, and
every event that arrived in one read comes out together (``next_events``), so the
relay writes them to the client at once. docs/benchmarks.md has the measurements.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
from django.conf import settings

POOL_SHARDS = 8
SHARD_STREAMS = 16


class _Shard:
    """One pooled client and the number of streams open on it."""

    __slots__ = ("client", "streams")

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.streams = 0


_clients: dict[asyncio.AbstractEventLoop, list[_Shard]] = {}
DONE = b"[DONE]"
# After [DONE], how long to wait for the end of the response body (normally already
# received) before closing the connection instead of returning it to the pool.
DRAIN_AFTER_DONE_S = 0.5


class UpstreamError(Exception):
    """A failed upstream call. ``kind``: http, connect, timeout, protocol."""

    def __init__(self, kind: str, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status


@dataclass(frozen=True, slots=True)
class UpstreamCall:
    url: str
    body: bytes
    authorization: str | None


def _timeouts() -> httpx.Timeout:
    conf = settings.UBERLLM
    read = max(conf["UPSTREAM_FIRST_TOKEN_TIMEOUT_S"], conf["UPSTREAM_IDLE_TIMEOUT_S"])
    return httpx.Timeout(conf["UPSTREAM_CONNECT_TIMEOUT_S"], read=read, pool=10.0)


def _new_client() -> httpx.AsyncClient:
    # UPSTREAM_MAX_CONNECTIONS bounds the connections of all shards together.
    limit = -(-settings.UBERLLM["UPSTREAM_MAX_CONNECTIONS"] // POOL_SHARDS)
    return httpx.AsyncClient(
        timeout=_timeouts(),
        limits=httpx.Limits(max_connections=limit, max_keepalive_connections=limit),
        follow_redirects=False,
        trust_env=False,
    )


def _shard() -> _Shard:
    """The first shard with room for a stream, else the least busy (running loop's)."""
    loop = asyncio.get_running_loop()
    shards = _clients.get(loop)
    if shards is None:
        shards = _clients[loop] = [_Shard(_new_client()) for _ in range(POOL_SHARDS)]
    shard = next((s for s in shards if s.streams < SHARD_STREAMS), None)
    shard = shard or min(shards, key=lambda s: s.streams)
    if shard.client.is_closed:
        shard.client = _new_client()
    return shard


def get_client() -> httpx.AsyncClient:
    """A pooled client of the process for the running event loop."""
    return _shard().client


def _headers(call: UpstreamCall, stream: bool) -> dict[str, str]:
    headers = {"content-type": "application/json"}
    if stream:
        headers["accept"] = "text/event-stream"
    if call.authorization:
        headers["authorization"] = call.authorization
    return headers


def _error_message(body: bytes, status: int) -> str:
    text = body[:500].decode("utf-8", "replace").strip()
    return f"upstream HTTP {status}: {text}" if text else f"upstream HTTP {status}"


def _wrap(exc: Exception) -> UpstreamError:
    if isinstance(exc, UpstreamError):
        return exc
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
        return UpstreamError("connect", f"cannot connect to upstream: {exc.__class__.__name__}")
    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        return UpstreamError("timeout", "upstream timed out")
    return UpstreamError("protocol", f"upstream failed: {exc.__class__.__name__}")


class SSESplitter:
    """Splits an SSE byte stream into the data of its events, per the WHATWG rules:
    lines end in LF, CRLF or CR; a blank line ends an event; its ``data`` lines are
    joined with LF; comments (``:``) and other fields are skipped; an event without data
    is not dispatched; an unfinished event at the end of the stream is dropped."""

    __slots__ = ("_buffer", "_cr")

    def __init__(self) -> None:
        self._buffer = b""
        self._cr = False  # the last read ended in CR: maybe the first half of a CRLF

    def feed(self, chunk: bytes) -> list[bytes]:
        """The data of every event completed by ``chunk``, in order."""
        if self._cr or b"\r" in chunk:
            if self._cr:
                chunk, self._cr = b"\r" + chunk, False
            if chunk.endswith(b"\r"):
                chunk, self._cr = chunk[:-1], True
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        blocks = (self._buffer + chunk if self._buffer else chunk).split(b"\n\n")
        self._buffer = blocks.pop()
        events = []
        for block in blocks:
            if block.startswith(b"data: ") and b"\n" not in block:  # the usual one-liner
                events.append(block[6:])
                continue
            data = []
            for line in block.split(b"\n"):
                name, _, value = line.partition(b":")
                if name == b"data":
                    data.append(value[1:] if value.startswith(b" ") else value)
            if data:
                events.append(b"\n".join(data))
        return events

    def flush(self) -> list[bytes]:
        """At the end of the stream: a CR held back ends its line after all."""
        if not self._cr:
            return []
        self._cr = False
        return self.feed(b"\n")


class UpstreamStream:
    """An open SSE stream: ``next_events()`` (or ``next_data()``) until None; always
    ``aclose()``."""

    def __init__(self, response: httpx.Response, shard: _Shard | None = None) -> None:
        self._response = response
        self._shard = shard
        self._chunks = response.aiter_bytes()
        self._splitter = SSESplitter()
        self._ready: list[bytes] = []
        self.saw_done = False

    async def next_events(self) -> list[bytes] | None:
        """The data of the events received so far but not yet returned (at least one,
        waiting for the network if need be); None at the end of the stream."""
        if self._ready:
            ready, self._ready = self._ready, []
            return ready
        while True:
            try:
                chunk = await anext(self._chunks)
            except StopAsyncIteration:
                return self._splitter.flush() or None
            except Exception as exc:
                raise _wrap(exc) from exc
            if events := self._splitter.feed(chunk):
                if DONE in events:
                    self.saw_done = True
                return events

    def push_back(self, events: list[bytes]) -> None:
        """Return unread events: the next ``next_events()`` starts with them."""
        self._ready = events + self._ready

    async def next_data(self) -> str | None:
        """The next event's data, or None at the end of the stream."""
        if not self._ready:
            events = await self.next_events()
            if events is None:
                return None
            self._ready = events
        return self._ready.pop(0).decode("utf-8", "replace")

    async def data(self) -> AsyncIterator[str]:
        while (data := await self.next_data()) is not None:
            yield data

    async def aclose(self) -> None:
        try:
            if self.saw_done and not self._response.is_closed:
                # Read the end of the body (normally already here) so httpcore keeps the
                # connection for the next request instead of closing it.
                async with asyncio.timeout(DRAIN_AFTER_DONE_S):
                    async for _ in self._chunks:
                        pass
        except Exception:  # noqa: S110 - closing below is the fallback
            pass
        finally:
            if self._shard is not None:
                self._shard.streams -= 1
                self._shard = None
            await self._response.aclose()


async def open_stream(call: UpstreamCall) -> UpstreamStream:
    """POST a streaming request; raises ``UpstreamError`` unless the provider says 200."""
    shard = _shard()
    request = shard.client.build_request(
        "POST", call.url, content=call.body, headers=_headers(call, True)
    )
    shard.streams += 1
    try:
        response = await shard.client.send(request, stream=True)
    except BaseException as exc:
        shard.streams -= 1
        if not isinstance(exc, Exception):
            raise
        raise _wrap(exc) from exc
    if response.status_code != 200:
        shard.streams -= 1
        try:
            body = await response.aread()
        except Exception:
            body = b""
        finally:
            await response.aclose()
        raise UpstreamError(
            "http", _error_message(body, response.status_code), response.status_code
        )
    return UpstreamStream(response, shard)


async def close_client() -> None:
    """Close this loop's pooled clients (a short-lived loop, e.g. a Celery task's)."""
    for shard in _clients.pop(asyncio.get_running_loop(), None) or ():
        await shard.client.aclose()
