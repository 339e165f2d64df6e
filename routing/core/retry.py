"""Retries (R4.1): which failures are retried on another endpoint, which mark the
endpoint unusable (R2.7), and the next endpoint to try.

Failure kinds (``error_kind``):
- "http": the upstream answered with ``status`` before any reply reached the customer;
- "connect": no connection / TLS / DNS failure;
- "timeout": no first token within the first-token timeout;
- "stream_interrupted": the upstream failed after part of the reply reached the
  customer: never retried (the customer already has part of an answer);
- "client_cancelled": the customer went away: never retried.

Verdicts for "http":
- 408, 5xx: retry elsewhere and count against the endpoint (``Reliability`` decides
  when a run of them marks it unusable);
- 429: retry elsewhere, never mark: the provider sheds load, it is not down (product
  decision "A 429 teaches capacity, not unusability"): the knowledge learns its
  concurrency cap (O3, ``core.capacity``) and its Retry-After instead;
- 401, 402, 403, 404: retry elsewhere and mark unusable (our credential, account or
  catalog entry is wrong for that endpoint; another provider may work);
- any other 4xx (400 context/parameter errors, 413, 422 ...): retry elsewhere, since
  providers differ in limits and parameter support, but do not mark unusable: the
  endpoint works, this request just did not suit it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .types import RouteChoice, RoutePlan, RoutingError

ERROR_KINDS = frozenset({"http", "connect", "timeout", "stream_interrupted", "client_cancelled"})
_MARKING_STATUSES = frozenset({401, 402, 403, 404, 408})
SHEDDING_STATUS = 429  # load shed: teaches capacity, never marks


@dataclass(frozen=True, slots=True)
class FailureVerdict:
    retry: bool
    mark_unusable: bool


def classify_failure(status: int | None, error_kind: str) -> FailureVerdict:
    """What to do after a failed attempt; see the module doc for the table."""
    if error_kind not in ERROR_KINDS:
        raise ValueError(
            f"unknown error_kind {error_kind!r}; expected one of {sorted(ERROR_KINDS)}"
        )
    if error_kind in ("stream_interrupted", "client_cancelled"):
        return FailureVerdict(retry=False, mark_unusable=False)
    if error_kind in ("connect", "timeout"):
        return FailureVerdict(retry=True, mark_unusable=True)
    if status is None or status < 400:
        raise ValueError(f"an http failure needs a 4xx/5xx status, got {status!r}")
    marks = status >= 500 or status in _MARKING_STATUSES
    return FailureVerdict(retry=True, mark_unusable=marks)


def is_retryable(status: int | None, error_kind: str) -> bool:
    return classify_failure(status, error_kind).retry


def marks_unusable(status: int | None, error_kind: str) -> bool:
    return classify_failure(status, error_kind).mark_unusable


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """R4.1: up to ``max_attempts`` attempts in all, each on a different endpoint."""

    max_attempts: int = 4

    def next_choice(self, plan: RoutePlan, attempts_so_far: Sequence[int]) -> RouteChoice | None:
        """The first endpoint of the plan not yet attempted, or None when the attempts
        are used up or the plan is exhausted."""
        if len(attempts_so_far) >= self.max_attempts:
            return None
        tried = set(attempts_so_far)
        for choice in plan.choices:
            if choice.endpoint.endpoint_id not in tried:
                return choice
        return None

    def schedule(self, plan: RoutePlan) -> tuple[RouteChoice, ...]:
        """The attempts in order if every one fails (at most max_attempts)."""
        return plan.choices[: self.max_attempts]


def all_attempts_failed(model_slug: str, failures: Sequence[tuple[str, str]]) -> RoutingError:
    """503 once every attempt failed (R4.2: the request costs $0).

    ``failures`` = (provider_slug, short description such as "429" or "timeout").
    """
    detail = ", ".join(f"{slug} ({what})" for slug, what in failures) or "no attempt made"
    return RoutingError(
        503,
        "no_endpoint_available",
        f"every endpoint tried for model {model_slug} failed: {detail}",
    )
