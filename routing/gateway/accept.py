"""Accepting a chat request: authenticate, check the key's limit, validate, plan.

The result is an immutable ``Accepted``: made once, read by the session's router, the
relay and ``finish``. Planning reads only the in-process snapshot (``routing.memory``),
never a shared store.
"""

from __future__ import annotations

import functools
import os
import random
import time
from dataclasses import dataclass, replace
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from billing import limits
from billing.auth import KeyPrincipal, KeyStoreUnavailable, authenticate
from billing.quota import Ticket
from providers import protocols

from ..catalog import CatalogModel, EndpointRoute, catalog_cache
from ..core.candidate import SmartTuning
from ..core.followups import FollowupEstimator
from ..core.options import RoutingOptions
from ..core.plan import plan_route
from ..core.prefix import PrefixHashes, prefix_hashes
from ..core.types import RequestFeatures, RoutePlan, RoutingError, bucket_for
from ..errors import GatewayError
from ..memory import memory, refresher
from ..request import ChatRequest, parse_chat_request
from .big import per_message_work

_rng = random.Random()


def _unusable(now: float) -> frozenset[int]:
    """Marked endpoints (R2.7), and with ``ROUTING_CONCURRENCY_CAPS`` the ones whose
    learnt concurrency cap this process's calls in flight reach (O3): both go last."""
    marked = memory.unusable(now)
    if not settings.UBERLLM.get("ROUTING_CONCURRENCY_CAPS"):
        return marked
    full = memory.full(now)
    return marked | full if full else marked


@functools.lru_cache(maxsize=4)
def _tuning(
    tail_weight: float, ratio: float, under_s: float, under_s_long: float | None
) -> SmartTuning:
    return SmartTuning(
        tail_weight=tail_weight,
        fast_enough_ratio=ratio,
        fast_enough_under_s=under_s,
        fast_enough_under_s_long=under_s_long,
    )


def smart_tuning() -> SmartTuning:
    """R2.4's thresholds and the slow-tail weight, from the settings (operator knobs)."""
    conf = settings.UBERLLM
    return _tuning(
        float(conf.get("ROUTING_TAIL_WEIGHT", 0.0)),
        float(conf.get("ROUTING_FAST_ENOUGH_RATIO", 2.0)),
        float(conf.get("ROUTING_FAST_ENOUGH_UNDER_S", 1.0)),
        _optional_float(conf.get("ROUTING_FAST_ENOUGH_UNDER_S_LONG")),
    )


def _optional_float(value: object) -> float | None:
    return None if value in (None, "") else float(value)  # type: ignore[arg-type]


followups = FollowupEstimator()  # per process; learns within a few conversations


@dataclass(frozen=True, slots=True)
class Accepted:
    """One accepted chat request, as planned (immutable)."""

    request_id: str
    principal: KeyPrincipal
    chat: ChatRequest
    model: CatalogModel
    plan: RoutePlan
    prompt_tokens_estimate: int
    raw_prompt_tokens: int
    prefix_hashes: PrefixHashes
    cached_tokens: dict[int, int]
    created_at: datetime
    started: float  # perf_counter at acceptance
    # The ``models`` fallbacks after the one planned (OpenRouter), each found in the
    # catalog; planned only if every endpoint of this one fails at run time (``replan``).
    fallbacks: tuple[tuple[ChatRequest, CatalogModel], ...] = ()
    # Hard limits (billing.limits): what this call reserved, settled by ``finish``; and
    # the max_tokens sent upstream when the request set none (its reservation's cap).
    quota: Ticket | None = None
    max_tokens_cap: int | None = None

    def elapsed_ms(self) -> int:
        return int((time.perf_counter() - self.started) * 1000)

    def upstream_body(self, route: EndpointRoute) -> bytes:
        body = dict(self.chat.body)
        body["model"] = route.upstream_model
        # Upstream always streams (a non-streaming reply is assembled from the chunks, so
        # every call measures its TTFT) and always reports usage, which billing needs; the
        # usage chunk is stripped if the client did not ask for it.
        body["stream"] = True
        body["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
        if self.max_tokens_cap is not None:
            body["max_tokens"] = self.max_tokens_cap
        # In the upstream's own wire format (providers/protocols): the session never sees it.
        return protocols.upstream_body(route.protocol, body, route.info.max_output_tokens)


async def require_key(authorization: str | None) -> KeyPrincipal:
    try:
        principal = await authenticate(authorization)
    except KeyStoreUnavailable:
        raise GatewayError(
            503,
            "The key cannot be checked right now; retry shortly.",
            code="key_store_unavailable",
            retry_after_s=2,
        ) from None
    if principal is None:
        raise GatewayError(401, "Missing, invalid or revoked API key.", code="invalid_api_key")
    if principal.expires_at is not None and principal.expires_at <= timezone.now():
        raise GatewayError(
            401, f"This API key expired at {principal.expires_at:%Y-%m-%d %H:%M} UTC.",
            code="expired_api_key",
        )  # fmt: skip
    return principal


def check_allowed_models(principal: KeyPrincipal, chat: ChatRequest) -> None:
    """A key with an allow-list may call only those models (every one it names,
    ``models`` fallbacks included): else 403 ``model_not_allowed``."""
    allowed = principal.allowed_models
    if not allowed:
        return
    for model_id in (chat.body["model"], *chat.fallback_models):
        slug = str(model_id).partition(":")[0]
        if slug not in allowed:
            raise GatewayError(
                403, f"This API key may not call model '{slug}'; it is limited to: "
                f"{', '.join(allowed)}.", code="model_not_allowed", param="model",
            )  # fmt: skip


async def reserve(principal: KeyPrincipal, request_id: str, chat: ChatRequest,
                  model: CatalogModel, plan: RoutePlan, prompt_tokens: int,
                  fallbacks: tuple[tuple[ChatRequest, CatalogModel], ...] = (),
                  ) -> tuple[Ticket | None, int | None]:  # fmt: skip
    """Admit the call against the key's and organisation's hard limits and rate limits
    (billing.limits): reserve its worst case at the dearest endpoint of ``plan`` or of
    any ``models`` fallback it may switch to at run time. Returns (ticket, max_tokens
    cap to send upstream); (None, None) with no limit."""
    if not principal.has_quota:
        return None, None
    cap = None
    max_tokens = chat.max_tokens
    if max_tokens is None:
        max_tokens = cap = settings.UBERLLM["SPEND_DEFAULT_MAX_TOKENS"]
    routes = [model.by_id[c.endpoint_id] for c in plan.choices if c.endpoint_id in model.by_id]
    routes += [route for _, other in fallbacks for route in other.by_id.values()]
    worst = limits.worst_case_usd(routes, limits.reserved_prompt_tokens(prompt_tokens), max_tokens)
    try:
        ticket = await limits.admit(principal, request_id, worst_usd=worst, tokens=prompt_tokens)
    except limits.QuotaRefused as exc:
        raise GatewayError(exc.status, exc.message, code=exc.code,
                           retry_after_s=exc.retry_after_s) from None  # fmt: skip
    except limits.QuotaUnavailable:
        raise GatewayError(
            503, "The key's spend and rate limits cannot be checked right now; retry shortly.",
            code="quota_store_unavailable", retry_after_s=2,
        ) from None  # fmt: skip
    return ticket, (cap if ticket is not None and ticket.budgets else None)


def followup_turns(
    chat: ChatRequest, model_slug: str, customer: int | None = None, bucket: str = ""
) -> float:
    """A conversation (it already holds a reply) is expected to go on: its next turns
    resend this prompt, as cache reads where it is served now. How many is learnt per
    model from the turn index of the conversations seen (routing.core.followups), never
    below ``FOLLOWUP_TURNS``. A first turn of ``customer`` (the API key) is priced with
    the share of that key's first turns of this size that a second turn followed
    (``ROUTING_FIRST_TURN_FOLLOWUPS``; without a customer, with none)."""
    earlier = sum(1 for m in chat.messages if m.get("role") == "assistant")
    if not earlier and any(m.get("role") == "tool" for m in chat.messages):
        earlier = 1
    conf = settings.UBERLLM
    followups.minimum = conf["FOLLOWUP_TURNS"]
    start = (model_slug, customer, bucket)
    if customer is not None:
        followups.observe_start(start, earlier)
    if not earlier:
        if customer is None or not conf["ROUTING_FIRST_TURN_FOLLOWUPS"]:
            return 0.0
        return followups.expected_first(model_slug, start)
    followups.observe(model_slug, earlier)
    return followups.expected(model_slug)


def _options(chat: ChatRequest) -> RoutingOptions:
    try:
        return RoutingOptions.from_request(chat.provider_options, chat.model_suffix)
    except RoutingError as exc:
        raise GatewayError(exc.status, exc.message, code=exc.code, param="provider") from None


# Parameters an endpoint may or may not support (OpenRouter's ``supported_parameters``
# names): with ``provider.require_parameters`` every one sent must be supported.
REQUIRABLE_PARAMETERS = frozenset({
    "tools", "tool_choice", "max_tokens", "temperature", "top_p", "reasoning",
    "include_reasoning", "response_format", "structured_outputs", "stop", "frequency_penalty",
    "presence_penalty", "seed", "top_k", "min_p", "top_a", "repetition_penalty", "logit_bias",
    "logprobs", "top_logprobs", "parallel_tool_calls", "verbosity",
})  # fmt: skip


def required_parameters(chat: ChatRequest, options: RoutingOptions) -> frozenset[str]:
    if not options.require_parameters:
        return chat.required_parameters
    sent = chat.sent_parameters()
    if "max_completion_tokens" in sent:
        sent |= {"max_tokens"}
    return chat.required_parameters | (sent & REQUIRABLE_PARAMETERS)


def measure_prompt(messages: list[dict]) -> tuple[int, PrefixHashes]:
    """The prompt's raw token estimate and its prefix hashes (raw tokens): the planning
    work that grows with the conversation, pure (``big.per_message_work`` may run it in a
    thread)."""
    return memory.tokens.estimate(messages), prefix_hashes(messages)


def plan_request(
    chat: ChatRequest,
    model: CatalogModel,
    measured: tuple[int, PrefixHashes] | None = None,
    customer: int | None = None,
) -> tuple[RoutePlan, dict, int, int, list]:
    """Plan where to send ``chat`` from the snapshot (``measured``: its ``measure_prompt``,
    made here if not given; ``customer``: the API key id, whose first turns' follow-ups
    are learnt apart); GatewayError (400/404) if nowhere."""
    options = _options(chat)
    slug = model.info.slug
    raw, raw_hashes = measured if measured is not None else measure_prompt(chat.messages)
    ratio = memory.tokens.ratio(slug, raw)
    prompt_tokens = round(raw * ratio)
    hashes = [(h, round(t * ratio)) for h, t in raw_hashes]
    now = time.time()
    cached = memory.cached_tokens(hashes, model.by_id, now)
    bucket = bucket_for(prompt_tokens)
    features = RequestFeatures(
        prompt_tokens=prompt_tokens,
        expected_output_tokens=memory.outputs.expected(slug, bucket, chat.max_tokens),
        cached_tokens=cached,
        required_parameters=required_parameters(chat, options),
        stream=chat.stream,
        expected_followup_turns=followup_turns(chat, slug, customer, bucket),
        output_factors=memory.output_lengths.factors(slug),
    )
    try:
        plan = plan_route(
            model.info,
            [route.info for route in model.endpoints],
            features,
            options,
            memory.speed,
            _unusable(now),
            _rng,
            exploration_rate=settings.UBERLLM["EXPLORATION_RATE"],
            tuning=smart_tuning(),
        )
    except RoutingError as exc:
        raise GatewayError(exc.status, exc.message, code=exc.code) from None
    return plan, cached, prompt_tokens, raw, hashes


def _candidate(chat: ChatRequest, model_id: str) -> ChatRequest:
    slug, _, suffix = model_id.partition(":")
    if slug == chat.model_slug:
        return chat
    return replace(chat, model_slug=slug, model_suffix=suffix or None)


# Refusals that something missing from the catalog snapshot may cause (a model, provider
# or endpoint added, a context length raised, a price cut): answered from a snapshot
# older than CATALOG_CACHE_TTL_S only after its reload (issue 44).
CATALOG_REFUSALS = frozenset(
    {
        "model_not_found",
        "no_endpoints",
        "unknown_provider",
        "no_allowed_provider",
        "context_length_exceeded",
        "unsupported_parameters",
        "max_price_exceeded",
    }
)
Planned = tuple[ChatRequest, CatalogModel, tuple, tuple[tuple[ChatRequest, CatalogModel], ...]]


async def _plan_model(
    chat: ChatRequest, body_bytes: int = 0, customer: int | None = None
) -> Planned:
    """The first of ``model`` and the ``models`` fallbacks that exists and can be planned
    (OpenRouter's fallback list), and the later fallbacks the catalog has; the error of
    the first model if none can. A big body is measured off the loop (``big``). A
    refusal the catalog may cause waits for a stale snapshot's reload, then is planned
    again; other requests never wait for the catalog."""
    measured = await per_message_work(body_bytes, measure_prompt, chat.messages)
    try:
        return await _plan_first(chat, measured, customer)
    except GatewayError as exc:
        if exc.code not in CATALOG_REFUSALS or not await catalog_cache.reload_if_stale():
            raise
    return await _plan_first(chat, measured, customer)


async def _plan_first(chat: ChatRequest, measured: tuple, customer: int | None) -> Planned:
    first_error: GatewayError | None = None
    model_ids = (chat.body["model"], *chat.fallback_models)
    for index, model_id in enumerate(model_ids):
        candidate = _candidate(chat, model_id)
        slug = candidate.model_slug
        model = await catalog_cache.get(slug)
        # After the catalog read: the first refresh reads the speeds of its endpoints.
        await refresher.ready()
        try:
            if model is None:
                raise GatewayError(404, f"Unknown model '{slug}'.", code="model_not_found")
            planned = plan_request(candidate, model, measured, customer)
        except GatewayError as exc:
            if exc.status not in (404, 503) or not chat.fallback_models:
                raise
            first_error = first_error or exc
            continue
        later = []
        for later_id in model_ids[index + 1 :]:
            fallback = _candidate(chat, later_id)
            if (found := await catalog_cache.get(fallback.model_slug)) is not None:
                later.append((fallback, found))
        return candidate, model, planned, tuple(later)
    assert first_error is not None
    raise first_error


def replan(accepted: Accepted) -> Accepted | None:
    """The request moved to its next ``models`` fallback that can be planned (same id,
    key, clock), once every endpoint of the current model failed; None if none is left.
    Sync: it reads only the in-process snapshot, like acceptance."""
    fallbacks = accepted.fallbacks
    while fallbacks:
        (chat, model), fallbacks = fallbacks[0], fallbacks[1:]
        try:
            plan, cached, prompt_tokens, raw, hashes = plan_request(
                chat, model, customer=accepted.principal.api_key_id
            )
        except GatewayError:
            continue
        return replace(
            accepted, chat=chat, model=model, plan=plan, prompt_tokens_estimate=prompt_tokens,
            raw_prompt_tokens=raw, prefix_hashes=hashes, cached_tokens=cached,
            fallbacks=fallbacks,
        )  # fmt: skip
    return None


async def accept(principal: KeyPrincipal, body: bytes) -> Accepted:
    """Validate and plan an authenticated request; raises GatewayError."""
    depth = settings.UBERLLM["MAX_JSON_DEPTH"]
    chat = await per_message_work(len(body), parse_chat_request, body, depth)
    return await accept_chat(principal, chat, len(body))


async def accept_chat(principal: KeyPrincipal, chat: ChatRequest, body_bytes: int = 0) -> Accepted:
    """Plan an authenticated, validated request (of a ``body_bytes`` body), then reserve it
    against the key's limits (the last step: nothing after it may refuse); raises
    GatewayError."""
    check_allowed_models(principal, chat)
    chosen = await _plan_model(chat, body_bytes, principal.api_key_id)
    chat, model, (plan, cached, prompt_tokens, raw, hashes), fallbacks = chosen
    request_id = f"gen-{os.urandom(16).hex()}"
    quota, cap = await reserve(principal, request_id, chat, model, plan, prompt_tokens,
                               fallbacks)  # fmt: skip
    return Accepted(
        request_id=request_id,
        principal=principal,
        chat=chat,
        model=model,
        plan=plan,
        prompt_tokens_estimate=prompt_tokens,
        raw_prompt_tokens=raw,
        prefix_hashes=hashes,
        cached_tokens=cached,
        created_at=timezone.now(),
        started=time.perf_counter(),
        fallbacks=fallbacks,
        quota=quota,
        max_tokens_cap=cap,
    )
