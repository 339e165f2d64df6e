"""The one place a call finishes: its outcome becomes the ledger row (queued for the
background writer); metrics and logs hook in here.

A stream served and then cut or cancelled is billed for what the provider charged:
its reported usage, or an estimate (prompt estimate + one token per content chunk
delivered) when the usage never arrived. A call that failed on every attempt costs $0.

Its hard-limit reservation (``Accepted.quota``, billing.limits) is settled here to what
the row bills, in the background: $0 for a failed call releases it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from billing import limits
from billing.ledger import CallResult, OpenRow
from billing.ledger_writer import ledger_writer, queue_finish, queue_open
from common import metrics

from ..core.options import NOOP_KEYS
from .accept import Accepted


class FinishedCall(Protocol):
    """What ``finish`` reads of the live shell's call (routing.gateway.call.LiveCall)."""

    session: Any
    router: Any
    records: list
    served: Any
    ttft_ms: int | None


@dataclass(frozen=True, slots=True)
class Outcome:
    """How the request ended: status (success, error, cancelled), HTTP status, error."""

    status: str
    http_status: int
    error: str = ""


def open_row(accepted: Accepted) -> OpenRow:
    return OpenRow(
        request_id=accepted.request_id,
        organisation_id=accepted.principal.organisation_id,
        api_key_id=accepted.principal.api_key_id,
        model_slug=accepted.chat.model_slug,
        stream=accepted.chat.stream,
        created_at=accepted.created_at,
    )


def start(accepted: Accepted) -> None:
    """The request is accepted: its pending row is queued (a crash leaves it pending)."""
    queue_open(open_row(accepted))


def call_result(accepted: Accepted, outcome: Outcome, call: FinishedCall) -> CallResult:
    session = call.session
    result = CallResult(
        request_id=accepted.request_id,
        status=outcome.status,
        http_status=outcome.http_status,
        total_ms=accepted.elapsed_ms(),
        ttft_ms=call.ttft_ms if call.served is not None else None,
        routing_strategy=accepted.plan.strategy,
        prompt_bucket=accepted.plan.bucket,
        error_message=outcome.error,
        hedged=session.hedged,
        hedge_cost_usd=call.router.hedge_cost_usd,
        attempts=list(call.records),
        model_slug=accepted.chat.model_slug,
    )
    served = call.served
    if served is not None:
        cost, prompt, cached, completion, estimated = served.cost(accepted)
        result.endpoint_id = served.route.endpoint_id
        result.provider_slug = served.route.provider_slug
        result.routing_reason = served.record.reason
        result.prompt_tokens, result.cached_tokens = prompt, cached
        result.completion_tokens, result.usage_estimated = completion, estimated
        result.cost_usd = cost
        result.prices = {k: str(v) for k, v in served.route.prices.items()}
    elif accepted.plan.choices:
        result.routing_reason = accepted.plan.choices[0].reason
    result.routing_reason = with_ignored_options(result.routing_reason, accepted)
    return result


def with_ignored_options(reason: str, accepted: Accepted) -> str:
    """The routing reason, plus the OpenRouter provider options the request sent that
    UberLLM accepted without acting on them (the generation record says so)."""
    ignored = sorted(NOOP_KEYS & (accepted.chat.provider_options or {}).keys())
    if not ignored:
        return reason
    return f"{reason} (ignored: {', '.join(ignored)})"[:ROUTING_REASON_MAX]


ROUTING_REASON_MAX = 128  # billing.models.Activity.routing_reason


def finish(accepted: Accepted, outcome: Outcome, call: FinishedCall) -> None:
    """Write the outcome (once; the writer retries while the database is away) and
    record the call's metrics."""
    result = call_result(accepted, outcome, call)
    queue_finish(open_row(accepted), result)
    if accepted.quota is not None:
        limits.settle(
            accepted.quota,
            cost_usd=result.cost_usd,
            total_tokens=result.prompt_tokens + result.completion_tokens,
        )
    _observe(accepted, result, call)


def _observe(accepted: Accepted, result: CallResult, call: FinishedCall) -> None:
    attempts = result.attempts
    for attempt in attempts:
        metrics.observe_upstream_attempt(attempt.provider_slug, attempt.outcome)
    hedge_legs = [a for a in attempts if a.hedge_leg]
    metrics.observe_call(
        model=accepted.model.info.slug,
        provider=result.provider_slug or None,
        status=result.status,
        protocol="stream" if accepted.chat.stream else "json",
        bucket=accepted.plan.bucket,
        ttft_s=result.ttft_ms / 1000 if result.ttft_ms is not None else None,
        total_s=(result.total_ms or 0) / 1000,
        attempts=len(attempts),
        retries=sum(1 for a in attempts if not a.hedge_leg) - 1 if attempts else 0,
        hedged=result.hedged,
        hedge_won=any(a.outcome == "success" for a in hedge_legs),
        cancelled=result.status == "cancelled",
        cost_usd=float(result.cost_usd),
        platform_cost_usd=float(result.hedge_cost_usd),
    )
    metrics.set_queue_size("ledger", ledger_writer.pending())
