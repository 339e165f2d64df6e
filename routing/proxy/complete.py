"""Non-streaming path: POST upstream (with retries), add our fields, answer JSON."""

from __future__ import annotations

import asyncio
import time

import orjson
from django.conf import settings
from django.http import HttpResponse

from billing.ledger import AttemptResult
from providers.upstream import UpstreamCall, UpstreamError, post_json

from ..catalog import EndpointRoute
from ..core.types import RouteChoice
from ..errors import GatewayError
from .attempts import run_attempts
from .state import CallState


def _parse(raw: bytes) -> dict:
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise UpstreamError("protocol", "upstream answered invalid JSON") from None
    if not isinstance(body, dict) or body.get("error") or not body.get("choices"):
        message = body.get("error") if isinstance(body, dict) else None
        raise UpstreamError("protocol", f"upstream answered no completion: {message}")
    return body


async def complete_response(state: CallState) -> HttpResponse:
    timeout = settings.UBERLLM["UPSTREAM_FIRST_TOKEN_TIMEOUT_S"]

    async def try_one(choice: RouteChoice, route: EndpointRoute, attempt: AttemptResult):
        started = time.perf_counter()
        call = UpstreamCall(route.url, state.upstream_body(route), route.authorization)
        try:
            async with asyncio.timeout(timeout):
                body = _parse(await post_json(call))
        except TimeoutError:
            raise UpstreamError("timeout", "upstream did not answer before the timeout") from None
        attempt.duration_ms = int((time.perf_counter() - started) * 1000)
        attempt.outcome = "success"
        return body

    try:
        body = await run_attempts(state, try_one)
    except GatewayError as exc:
        state.finish("error", exc.status, exc.message)
        return exc.response()
    except asyncio.CancelledError:
        state.finish("cancelled", 499, "client disconnected")
        raise
    state.usage = body.get("usage") or None
    body["id"] = state.request_id
    body["model"] = state.chat.model_slug
    body["provider"] = state.served.provider_slug if state.served else None
    if state.usage:
        state.usage["cost"] = float(state.cost()[0])
    state.finish("success", 200)
    response = HttpResponse(orjson.dumps(body), content_type="application/json")
    response["X-Generation-Id"] = state.request_id
    return response
