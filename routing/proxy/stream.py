"""Streaming path: open the upstream stream (with retries) up to its first token, then relay.

Nothing reaches the customer before an upstream has produced its first token, so any
failure until then is retried on the next endpoint (R4). After that, a failure ends
the stream with an error chunk, never a silent clean end.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from django.conf import settings
from django.http import HttpResponse, StreamingHttpResponse

from billing.ledger import AttemptResult
from providers.upstream import UpstreamCall, UpstreamError, UpstreamStream, open_stream

from ..catalog import EndpointRoute
from ..core.types import RouteChoice
from ..errors import GatewayError
from .attempts import run_attempts
from .chunks import ChunkRewriter, encode, error_chunk
from .state import CallState

DONE = b"data: [DONE]\n\n"


async def _first_token(stream: UpstreamStream, rewriter: ChunkRewriter) -> list[dict]:
    """Read events until the first one carrying a token; returns them rewritten."""
    pending: list[dict] = []
    while True:
        data = await stream.next_data()
        if data is None or data == "[DONE]":
            raise UpstreamError("protocol", "upstream stream ended before the first token")
        chunk = rewriter.rewrite(data)
        if rewriter.upstream_error is not None:
            raise UpstreamError("http", rewriter.upstream_error, 502)
        if chunk:
            pending.append(chunk)
        if rewriter.saw_token:
            return pending


async def open_attempt(state: CallState, route: EndpointRoute, attempt: AttemptResult):
    """Open the upstream stream and read up to its first token (the attempt's TTFT).

    Returns (stream, rewriter, chunks so far); raises UpstreamError on any failure, with
    the stream closed.
    """
    rewriter = ChunkRewriter(state, route)
    state.usage, state.completion_chunks = None, 0  # nothing of a failed attempt counts
    started = time.perf_counter()
    call = UpstreamCall(route.url, state.upstream_body(route), route.authorization)
    stream: UpstreamStream | None = None
    try:
        async with asyncio.timeout(settings.UBERLLM["UPSTREAM_FIRST_TOKEN_TIMEOUT_S"]):
            stream = await open_stream(call)
            pending = await _first_token(stream, rewriter)
    except TimeoutError:
        if stream is not None:
            await stream.aclose()
        raise UpstreamError("timeout", "no first token before the timeout") from None
    except BaseException:
        if stream is not None:
            await asyncio.shield(stream.aclose())
        raise
    attempt.ttft_ms = int((time.perf_counter() - started) * 1000)
    state.ttft_ms = state.elapsed_ms()
    return stream, rewriter, pending


async def rest_of_stream(stream: UpstreamStream, rewriter: ChunkRewriter):
    """The remaining rewritten chunks; UpstreamError if the stream fails or is cut."""
    async for data in stream.data():
        if data == "[DONE]":
            break
        chunk = rewriter.rewrite(data)
        if rewriter.upstream_error is not None:
            raise UpstreamError("protocol", rewriter.upstream_error)
        if chunk:
            yield chunk
    if not rewriter.finished:
        raise UpstreamError("protocol", "upstream stream was cut before it finished")


async def _relay(state: CallState, attempt: AttemptResult, opened: tuple) -> AsyncIterator[bytes]:
    stream, rewriter, pending = opened
    status, http_status, error = "cancelled", 499, "client disconnected"
    try:
        for chunk in pending:
            yield encode(chunk)
        async for chunk in rest_of_stream(stream, rewriter):
            yield encode(chunk)
        yield DONE
        status, http_status, error = "success", 200, ""
    except UpstreamError as exc:
        status, http_status, error = "error", 502, exc.message
        attempt.error_message = exc.message
        yield error_chunk(state, exc.message)
    except Exception as exc:  # a bug must still end the stream visibly and finish the row
        status, http_status, error = "error", 502, f"gateway error: {exc.__class__.__name__}"
        yield error_chunk(state, error)
    finally:
        attempt.outcome = {"success": "success", "error": "cut"}.get(status, "cancelled")
        attempt.duration_ms = state.elapsed_ms()
        await asyncio.shield(stream.aclose())
        # A stream that failed after its first byte was still served (and partly billed).
        state.finish(status, http_status, error)


async def stream_response(state: CallState) -> HttpResponse:
    """Open upstream with retries; answer an error, or a streaming response."""

    async def try_one(choice: RouteChoice, route: EndpointRoute, attempt: AttemptResult):
        return await open_attempt(state, route, attempt)

    try:
        opened = await run_attempts(state, try_one)
    except GatewayError as exc:
        state.finish("error", exc.status, exc.message)
        return exc.response()
    except asyncio.CancelledError:
        state.finish("cancelled", 499, "client disconnected before the first token")
        raise
    attempt = state.attempts[-1]
    response = StreamingHttpResponse(
        _relay(state, attempt, opened), content_type="text/event-stream"
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    response["X-Generation-Id"] = state.request_id
    return response
