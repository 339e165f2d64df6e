"""Non-streaming path: the upstream still streams (so the attempt's TTFT is measured and
a stall before the first token is retried elsewhere); the chunks are assembled into one
``chat.completion``. Nothing reaches the customer until the whole reply is in, so a
failure at any point of an attempt is retried on the next endpoint (R4)."""

from __future__ import annotations

import asyncio

import orjson
from django.http import HttpResponse

from billing.ledger import AttemptResult

from ..catalog import EndpointRoute
from ..core.types import RouteChoice
from ..errors import GatewayError
from .assemble import CompletionAssembler
from .race import Opener
from .state import CallState
from .stream import adopt, open_attempt, rest_of_stream


async def _whole_reply(state: CallState, route: EndpointRoute, attempt: AttemptResult):
    opened = await open_attempt(state, route, attempt)
    assembler = CompletionAssembler()
    try:
        for chunk in opened.pending:
            assembler.add(chunk)
        async for chunk in rest_of_stream(opened.stream, opened.rewriter):
            assembler.add(chunk)
    finally:
        await asyncio.shield(opened.aclose())
    attempt.outcome = "success"
    attempt.duration_ms = state.elapsed_ms()
    return opened, assembler.completion()


async def complete_response(state: CallState) -> HttpResponse:
    async def try_one(choice: RouteChoice, route: EndpointRoute, attempt: AttemptResult):
        return await _whole_reply(state, route, attempt)

    try:
        opened, body = await Opener(state, try_one, hedge=False).run()
    except GatewayError as exc:
        state.finish("error", exc.status, exc.message)
        return state.error_response(exc)
    except asyncio.CancelledError:
        state.finish("cancelled", 499, "client disconnected")
        raise
    adopt(state, opened)
    if not body["usage"]:
        _, prompt, cached, completion, _ = state.cost()
        body["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion,
                         "total_tokens": prompt + completion,
                         "prompt_tokens_details": {"cached_tokens": cached}}  # fmt: skip
    body["usage"]["cost"] = float(state.cost()[0])
    state.finish("success", 200)
    response = HttpResponse(orjson.dumps(body), content_type="application/json")
    response["X-Generation-Id"] = state.request_id
    return response
