"""The upstream client: one pooled ``httpx.AsyncClient`` per process (per event loop).

``open_stream`` sends a streaming chat request and returns once the provider answered
with HTTP 200; reading the first event is bounded by the first-token timeout, later
events by the idle timeout (httpx's read timeout). Streams are always closed in
``finally``, so a cancelled caller leaves no connection behind.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
from django.conf import settings
from httpx_sse import EventSource

_clients: dict[asyncio.AbstractEventLoop, httpx.AsyncClient] = {}


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


def get_client() -> httpx.AsyncClient:
    """The process's pooled client for the running event loop."""
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or client.is_closed:
        limit = settings.UBERLLM["UPSTREAM_MAX_CONNECTIONS"]
        client = httpx.AsyncClient(
            timeout=_timeouts(),
            limits=httpx.Limits(max_connections=limit, max_keepalive_connections=limit),
            follow_redirects=False,
            trust_env=False,
        )
        _clients[loop] = client
    return client


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


class UpstreamStream:
    """An open SSE stream. Use ``first()`` then iterate ``rest()``; always ``aclose()``."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self._events = EventSource(response).aiter_sse()

    async def next_data(self) -> str | None:
        """The next event's data, or None at the end of the stream."""
        try:
            event = await anext(self._events)
        except StopAsyncIteration:
            return None
        except Exception as exc:
            raise _wrap(exc) from exc
        return event.data

    async def data(self) -> AsyncIterator[str]:
        while (data := await self.next_data()) is not None:
            yield data

    async def aclose(self) -> None:
        await self._response.aclose()


async def open_stream(call: UpstreamCall) -> UpstreamStream:
    """POST a streaming request; raises ``UpstreamError`` unless the provider says 200."""
    client = get_client()
    request = client.build_request(
        "POST", call.url, content=call.body, headers=_headers(call, True)
    )
    try:
        response = await client.send(request, stream=True)
    except Exception as exc:
        raise _wrap(exc) from exc
    if response.status_code != 200:
        try:
            body = await response.aread()
        except Exception:
            body = b""
        finally:
            await response.aclose()
        raise UpstreamError(
            "http", _error_message(body, response.status_code), response.status_code
        )
    return UpstreamStream(response)


async def close_client() -> None:
    """Close this loop's pooled client (a short-lived loop, e.g. a Celery task's)."""
    client = _clients.pop(asyncio.get_running_loop(), None)
    if client is not None:
        await client.aclose()
