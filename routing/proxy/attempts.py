"""The retry loop (R4): try the plan's endpoints in order, never one twice, at most N."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from django.conf import settings

from billing.ledger import AttemptResult
from providers.upstream import UpstreamError

from ..catalog import EndpointRoute
from ..core.retry import RetryPolicy, is_retryable, marks_unusable
from ..core.types import RouteChoice
from ..errors import GatewayError
from ..state import mark_unusable
from .state import CallState

T = TypeVar("T")
TryOne = Callable[[RouteChoice, EndpointRoute, AttemptResult], Awaitable[T]]


def _final_error(error: UpstreamError, attempts: int) -> GatewayError:
    if error.kind == "timeout":
        status = 504
    elif error.status in (400, 413, 422):
        status = 400
    elif error.status == 429:
        status = 429
    else:
        status = 502
    return GatewayError(
        status,
        f"All {attempts} upstream attempt(s) failed; last: {error.message}",
        code="upstream_error",
    )


def _core_kind(error: UpstreamError) -> tuple[str, int | None]:
    """The core's failure kinds: a protocol failure before the first token counts as 502."""
    if error.kind in ("connect", "timeout"):
        return error.kind, None
    return "http", error.status or 502


async def run_attempts(state: CallState, try_one: TryOne[T]) -> T:
    """Call ``try_one`` on successive plan choices until one succeeds.

    ``try_one`` fills in the AttemptResult it is given (ttft) and returns on success;
    it raises ``UpstreamError`` on a failure before any byte reached the customer.
    Raises ``GatewayError`` with the last error when every attempt failed.
    """
    policy = RetryPolicy(max_attempts=settings.UBERLLM["MAX_ATTEMPTS"])
    tried: list[int] = []
    last_error: UpstreamError | None = None
    while (choice := policy.next_choice(state.plan, tried)) is not None:
        route = state.model.by_id[choice.endpoint.endpoint_id]
        tried.append(route.endpoint_id)
        attempt = AttemptResult(
            attempt_no=len(tried),
            endpoint_id=route.endpoint_id,
            provider_slug=route.provider_slug,
            reason=choice.reason,
            outcome="pending",
        )
        state.attempts.append(attempt)
        started = time.perf_counter()
        try:
            result = await try_one(choice, route, attempt)
        except UpstreamError as error:
            attempt.outcome = f"{error.kind}_error"
            attempt.http_status = error.status
            attempt.error_message = error.message
            attempt.duration_ms = int((time.perf_counter() - started) * 1000)
            last_error = error
            kind, status = _core_kind(error)
            if marks_unusable(status, kind):
                mark_unusable(state.model.info.slug, route.endpoint_id)
            if not is_retryable(status, kind):
                break
            continue
        state.served, state.served_choice = route, choice
        return result
    if last_error is None:
        raise GatewayError(503, "No endpoint could be tried for this request.", code="no_endpoint")
    raise _final_error(last_error, len(tried))
