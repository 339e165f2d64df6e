"""What a call teaches: small frozen records the router returns and the knowledge learns.

``SmartRouter.on_*`` turn the session's events into lessons; ``RoutingKnowledge.learn``
applies them (the simulator's knowledge in place; the live gateway's process knowledge
at once, and its store writes the shared part through the outbox). A lesson holds
plain values only, so the live and the simulated shells can be compared lesson by
lesson (tests/routing/test_one_router.py).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Failed:
    """An attempt failed before its first token. ``kind``/``status`` are the core's
    (``failure_kind``); ``counts``: it counts against the provider (R2.7,
    ``classify_failure``); ``inflight``: our calls in flight at the endpoint when the
    provider refused (O3 learns a cap from a 429); ``peers``: the model's endpoints;
    ``retry_after_s``: the refusal's Retry-After, if any (a 429 holds the endpoint)."""

    endpoint_id: int
    kind: str
    status: int | None
    counts: bool
    inflight: int
    peers: tuple[int, ...]
    retry_after_s: float | None = None


@dataclass(frozen=True, slots=True)
class Cut:
    """The provider cut a served stream after its first token: a failure in its error
    rate, and no speed sample."""

    endpoint_id: int
    peers: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Served:
    """A served call ended whole. ``bucket``: the plan's bucket (output lengths);
    ``sample_bucket``: the bucket of the reported prompt (the TTFT window);
    ``estimated``: usage was estimated, so token counts teach nothing; ``complete``:
    the reply was not cut at the request's max_tokens; ``prefixes``: the prefix hashes
    the endpoint now holds (R2.3), for ``cache_ttl_s``."""

    endpoint_id: int
    model: str
    bucket: str
    sample_bucket: str
    ttft_s: float | None
    cached: bool
    tps: float | None
    raw_prompt_tokens: int
    prompt_tokens: int
    completion_tokens: int
    estimated: bool
    complete: bool
    prefixes: tuple[Hashable, ...]
    cache_ttl_s: float


@dataclass(frozen=True, slots=True)
class HedgeSettled:
    """A hedge race is over: ``reserved`` USD is replaced by ``spent`` (the losers'
    prompts, never above the reservation) on the UTC ``day`` it was reserved."""

    reserved: float
    spent: float
    day: int


@dataclass(frozen=True, slots=True)
class Probed:
    """A probe (R5) ended: ``ttfts`` its answers (None: it failed, the endpoint is
    marked); ``restart``: a confirmed shift restarts the bucket's window."""

    endpoint_id: int
    prompt_tokens: int
    ttfts: tuple[float, ...] | None
    restart: bool


@dataclass(frozen=True, slots=True)
class ToolCallChecked:
    """A served call that carried tools returned tool calls: ``valid`` when every one
    named a requested function with arguments that fit its schema (core.toolcalls)."""

    endpoint_id: int
    valid: bool


@dataclass(frozen=True, slots=True)
class Marked:
    """What the knowledge derived from a lesson, for the shared stores: the endpoint is
    unusable until ``until`` (``strikes`` refusals in a row); ``strikes`` 0: its streak
    ended (it served a call)."""

    endpoint_id: int
    until: float
    strikes: int


Lesson = Failed | Cut | Served | HedgeSettled | Probed | ToolCallChecked
