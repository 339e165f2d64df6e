"""Streaming path: open the upstream stream (retries and hedging) up to its first token,
then relay.

Nothing reaches the customer before an upstream has produced its first token, so any
failure until then is retried on the next endpoint (R4). If that takes longer than
``KEEPALIVE_AFTER_S`` (a long prefill), the response starts anyway and SSE comments
(``: PROCESSING``) keep it alive until the first token; a failure from then on, like
any failure after the first byte, ends the stream with an error chunk, never a silent
clean end.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from django.conf import settings
from django.http import HttpResponse, StreamingHttpResponse

from billing.ledger import AttemptResult
from providers.upstream import UpstreamCall, UpstreamError, UpstreamStream, open_stream
from uberllm.aio import run_in_background

from ..catalog import EndpointRoute
from ..core.types import RouteChoice
from ..errors import GatewayError
from .chunks import ChunkRewriter, encode_all, error_chunk
from .race import Opener
from .state import CallState

DONE = b"data: [DONE]\n\n"
DONE_DATA = b"[DONE]"
KEEPALIVE = b": PROCESSING\n\n"


@dataclass(slots=True)
class Opened:
    """An upstream stream that has produced its first token."""

    stream: UpstreamStream
    rewriter: ChunkRewriter
    pending: list[dict]
    attempt: AttemptResult

    async def aclose(self) -> None:
        await self.stream.aclose()


async def _first_token(stream: UpstreamStream, rewriter: ChunkRewriter) -> list[dict]:
    """Read events until the first one carrying a token; returns them rewritten (events
    after it that arrived in the same read stay in the stream for the relay)."""
    pending: list[dict] = []
    while True:
        events = await stream.next_events()
        if events is None:
            raise UpstreamError("protocol", "upstream stream ended before the first token")
        for index, data in enumerate(events):
            if data == DONE_DATA:
                raise UpstreamError("protocol", "upstream stream ended before the first token")
            chunk = rewriter.rewrite(data)
            if rewriter.upstream_error is not None:
                raise UpstreamError("http", rewriter.upstream_error, 502)
            if chunk:
                pending.append(chunk)
            if rewriter.saw_token:
                stream.push_back(events[index + 1 :])
                return pending


async def open_attempt(state: CallState, route: EndpointRoute, attempt: AttemptResult) -> Opened:
    """Open the upstream stream and read up to its first token (the attempt's TTFT).

    Raises UpstreamError on any failure, always with the stream closed.
    """
    rewriter = ChunkRewriter(state, route)
    started = time.perf_counter()
    call = UpstreamCall(route.url, state.upstream_body(route), route.authorization)
    stream: UpstreamStream | None = None
    try:
        async with asyncio.timeout(settings.UBERLLM["UPSTREAM_FIRST_TOKEN_TIMEOUT_S"]):
            stream = await open_stream(call)
            state.open_ledger_row()  # the upstream answered: now beside its prefill
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
    return Opened(stream, rewriter, pending, attempt)


def adopt(state: CallState, opened: Opened) -> None:
    """The winning attempt serves the request."""
    state.rewriter = opened.rewriter
    state.ttft_ms = state.elapsed_ms()


async def chunk_batches(
    stream: UpstreamStream, rewriter: ChunkRewriter
) -> AsyncIterator[tuple[list[dict], bool]]:
    """The remaining rewritten chunks as they arrived, one list per network read, with
    True on the last list once the stream ended properly (``[DONE]``, or the end of the
    body, after a finish reason). UpstreamError if the stream fails or is cut, after the
    chunks that came before the failure."""
    batch: list[dict] = []
    while (events := await stream.next_events()) is not None:
        batch = []
        for data in events:
            if data == DONE_DATA:
                break
            chunk = rewriter.rewrite(data)
            if rewriter.upstream_error is not None:
                if batch:
                    yield batch, False
                raise UpstreamError("protocol", rewriter.upstream_error)
            if chunk:
                batch.append(chunk)
        else:
            if batch:
                yield batch, False
            batch = []
            continue
        break  # [DONE]
    if not rewriter.finished:
        if batch:
            yield batch, False
        raise UpstreamError("protocol", "upstream stream was cut before it finished")
    yield batch, True


async def rest_of_stream(stream: UpstreamStream, rewriter: ChunkRewriter):
    """The remaining rewritten chunks one by one; UpstreamError if the stream fails or is cut."""
    async for batch, _ in chunk_batches(stream, rewriter):
        for chunk in batch:
            yield chunk


async def _relay(state: CallState, opened: Opened) -> AsyncIterator[bytes]:
    status, http_status, error = "cancelled", 499, "client disconnected"
    try:
        # One write per upstream read: the chunks that arrived together leave together.
        if opened.pending:
            yield encode_all(opened.pending)
        async for batch, done in chunk_batches(opened.stream, opened.rewriter):
            yield encode_all(batch) + DONE if done else encode_all(batch)
        status, http_status, error = "success", 200, ""
    except UpstreamError as exc:
        status, http_status, error = "error", 502, exc.message
        opened.attempt.error_message = exc.message
        yield error_chunk(state, exc.message)
    except Exception as exc:  # a bug must still end the stream visibly and finish the row
        status, http_status, error = "error", 502, f"gateway error: {exc.__class__.__name__}"
        yield error_chunk(state, error)
    finally:
        opened.attempt.outcome = {"success": "success", "error": "cut"}.get(status, "cancelled")
        opened.attempt.duration_ms = state.elapsed_ms()
        await asyncio.shield(opened.aclose())
        # A stream that failed after its first byte was still served (and partly billed).
        state.finish(status, http_status, error)


async def _wait_then_relay(state: CallState, opening: asyncio.Task) -> AsyncIterator[bytes]:
    """Keep-alive comments until the opening finishes, then its stream or an error chunk."""
    interval = settings.UBERLLM["KEEPALIVE_INTERVAL_S"]
    try:
        while not opening.done():
            yield KEEPALIVE
            await asyncio.wait({opening}, timeout=interval)
        opened = opening.result()
    except GatewayError as exc:
        state.finish("error", exc.status, exc.message)
        yield error_chunk(state, exc.message)
        return
    except BaseException:
        opening.cancel()
        state.finish("cancelled", 499, "client disconnected before the first token")
        raise
    adopt(state, opened)
    async for data in _relay(state, opened):
        yield data


def _finish_when_request_ends(state: CallState, upstream: Opened | asyncio.Task) -> None:
    """Django may drop a streaming generator without closing it (a client that leaves
    while a chunk is being sent): the generator's ``finally`` then waits for the garbage
    collector. So when the request's task ends, close the upstream and finish the row
    if the relay has not (a no-op when it has)."""

    async def abandon() -> None:
        if isinstance(upstream, asyncio.Task):
            upstream.cancel()
            opened = None if upstream.cancelled() or upstream.exception() else upstream.result()
        else:
            opened = upstream
        if opened is not None:
            if opened.attempt.outcome == "pending":
                opened.attempt.outcome = "cancelled"
                opened.attempt.duration_ms = state.elapsed_ms()
            await opened.aclose()
        state.finish("cancelled", 499, "client disconnected")

    def on_done(_: asyncio.Task) -> None:
        if not state.finished:
            run_in_background(abandon())

    task = asyncio.current_task()
    if task is not None:
        task.add_done_callback(on_done)


def _streaming(
    body: AsyncIterator[bytes], state: CallState, upstream: Opened | asyncio.Task
) -> StreamingHttpResponse:
    _finish_when_request_ends(state, upstream)
    response = StreamingHttpResponse(body, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    response["X-Generation-Id"] = state.request_id
    return response


async def stream_response(state: CallState) -> HttpResponse:
    """Open upstream (retries, hedging); answer an error or a streaming response."""

    async def try_one(choice: RouteChoice, route: EndpointRoute, attempt: AttemptResult):
        return await open_attempt(state, route, attempt)

    opening = asyncio.ensure_future(Opener(state, try_one, hedge=True).run())
    try:
        await asyncio.wait({opening}, timeout=settings.UBERLLM["KEEPALIVE_AFTER_S"])
    except asyncio.CancelledError:
        opening.cancel()
        state.finish("cancelled", 499, "client disconnected before the first token")
        raise
    if not opening.done():
        return _streaming(_wait_then_relay(state, opening), state, opening)
    try:
        opened = opening.result()
    except GatewayError as exc:
        state.finish("error", exc.status, exc.message)
        return state.error_response(exc)
    adopt(state, opened)
    return _streaming(_relay(state, opened), state, opened)
