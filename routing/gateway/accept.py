"""Accepting a chat request: authenticate, check the key's limit, validate, plan.

The result is an immutable ``Accepted``: made once, read by the session's router, the
relay and ``finish``. Planning reads only the in-process snapshot (``routing.memory``),
never a shared store.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from django.utils import timezone

from billing import limits
from billing.auth import KeyPrincipal, KeyStoreUnavailable, authenticate
from billing.quota import Ticket
from providers import protocols

from ..catalog import CatalogModel, EndpointRoute, catalog_cache
from ..config import live_config
from ..core.lessons import Lesson
from ..core.options import RoutingOptions
from ..core.prefix import PrefixHashes, prefix_hashes, prefixes_to_check
from ..core.router import SmartRouter
from ..core.types import RequestFeatures, RoutePlan, RoutingError
from ..errors import GatewayError
from ..memory import memory, refresher
from ..request import ChatRequest, parse_chat_request
from .big import per_message_work

_rng = random.Random()
_planner: list[SmartRouter | None] = [None]


class _Planning:
    """The planner's ``Stores``: planning reserves nothing and learns nothing (a
    request's router, ``routing.gateway.router.LiveRouter``, does)."""

    def hedge_budget_left(self, day: int) -> float:
        return 0.0

    def reserve(self, usd: float, day: int) -> bool:
        return False

    def emit(self, lessons: Sequence[Lesson], now: float) -> None:
        raise RuntimeError("the planner emits no lessons")


def planner() -> SmartRouter:
    """The process's core router for ``features``/``plan``, on the process's knowledge
    under the current settings (rebuilt only when either changed)."""
    knowledge = memory.current()
    router = _planner[0]
    if router is None or router.knowledge is not knowledge or router.config is not knowledge.config:
        router = _planner[0] = SmartRouter(knowledge.config, knowledge, _Planning(), _rng)
    return router


@dataclass(frozen=True, slots=True)
class Accepted:
    """One accepted chat request, as planned (immutable)."""

    request_id: str
    principal: KeyPrincipal
    chat: ChatRequest
    model: CatalogModel
    plan: RoutePlan
    features: RequestFeatures  # what the plan was made for (the router's hedge costs)
    prompt_tokens_estimate: int
    raw_prompt_tokens: int
    prefix_hashes: PrefixHashes
    created_at: datetime
    started: float  # perf_counter at acceptance
    # The ``models`` fallbacks after the one planned (OpenRouter), each found in the
    # catalog; planned only if every endpoint of this one fails at run time (``replan``).
    fallbacks: tuple[tuple[ChatRequest, CatalogModel], ...] = ()
    # Hard limits (billing.limits): what this call reserved, settled by ``finish``; and
    # the max_tokens sent upstream when the request set none (its reservation's cap).
    quota: Ticket | None = None
    max_tokens_cap: int | None = None

    @property
    def cached_tokens(self) -> Mapping[int, int]:
        """Prompt tokens each endpoint probably has cached (R2.3)."""
        return self.features.cached_tokens

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
            401,
            f"This API key expired at {principal.expires_at:%Y-%m-%d %H:%M} UTC.",
            code="expired_api_key",
        )
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
                403,
                f"This API key may not call model '{slug}'; it is limited to: "
                f"{', '.join(allowed)}.",
                code="model_not_allowed",
                param="model",
            )


async def reserve(
    principal: KeyPrincipal,
    request_id: str,
    chat: ChatRequest,
    model: CatalogModel,
    plan: RoutePlan,
    prompt_tokens: int,
    fallbacks: tuple[tuple[ChatRequest, CatalogModel], ...] = (),
) -> tuple[Ticket | None, int | None]:
    """Admit the call against the key's and organisation's hard limits and rate limits
    (billing.limits): reserve its worst case at the dearest endpoint of ``plan`` or of
    any ``models`` fallback it may switch to at run time. Returns (ticket, max_tokens
    cap to send upstream); (None, None) with no limit."""
    if not principal.has_quota:
        return None, None
    cap = None
    max_tokens = chat.max_tokens
    if max_tokens is None:
        max_tokens = cap = live_config().spend_default_max_tokens
    routes = [model.by_id[c.endpoint_id] for c in plan.choices if c.endpoint_id in model.by_id]
    routes += [route for _, other in fallbacks for route in other.by_id.values()]
    worst = limits.worst_case_usd(routes, limits.reserved_prompt_tokens(prompt_tokens), max_tokens)
    try:
        ticket = await limits.admit(principal, request_id, worst_usd=worst, tokens=prompt_tokens)
    except limits.QuotaRefused as exc:
        raise GatewayError(
            exc.status, exc.message, code=exc.code, retry_after_s=exc.retry_after_s
        ) from None
    except limits.QuotaUnavailable:
        raise GatewayError(
            503,
            "The key's spend and rate limits cannot be checked right now; retry shortly.",
            code="quota_store_unavailable",
            retry_after_s=2,
        ) from None
    return ticket, (cap if ticket is not None and ticket.budgets else None)


def earlier_turns(chat: ChatRequest) -> int:
    """Turns of the conversation before this request: its replies (a tool result
    without one: a first turn that went on), for the follow-up estimate."""
    earlier = sum(1 for m in chat.messages if m.get("role") == "assistant")
    if not earlier and any(m.get("role") == "tool" for m in chat.messages):
        earlier = 1
    return earlier


def _options(chat: ChatRequest) -> RoutingOptions:
    try:
        return RoutingOptions.from_request(chat.provider_options, chat.model_suffix)
    except RoutingError as exc:
        raise GatewayError(exc.status, exc.message, code=exc.code, param="provider") from None


# Parameters an endpoint may or may not support (OpenRouter's ``supported_parameters``
# names): with ``provider.require_parameters`` every one sent must be supported.
REQUIRABLE_PARAMETERS = frozenset(
    {
        "tools",
        "tool_choice",
        "max_tokens",
        "temperature",
        "top_p",
        "reasoning",
        "include_reasoning",
        "response_format",
        "structured_outputs",
        "stop",
        "frequency_penalty",
        "presence_penalty",
        "seed",
        "top_k",
        "min_p",
        "top_a",
        "repetition_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "parallel_tool_calls",
        "verbosity",
    }
)


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
    return memory.knowledge.tokens.estimate(messages), prefix_hashes(messages)


def plan_request(
    chat: ChatRequest,
    model: CatalogModel,
    measured: tuple[int, PrefixHashes] | None = None,
    customer: int | None = None,
) -> tuple[RoutePlan, RequestFeatures, int, list]:
    """Plan where to send ``chat`` from the snapshot (``measured``: its ``measure_prompt``,
    made here if not given; ``customer``: the API key id, whose first turns' follow-ups
    are learnt apart: ``RoutingKnowledge.followup_turns``); GatewayError (400/404) if
    nowhere. Returns the plan, the features it was made for, the raw token estimate and
    the prefix hashes in calibrated tokens."""
    options = _options(chat)
    router = planner()
    slug = model.info.slug
    raw, raw_hashes = measured if measured is not None else measure_prompt(chat.messages)
    ratio = router.knowledge.tokens.ratio(slug, raw)
    hashes = [(h, round(t * ratio)) for h, t in raw_hashes]
    now = time.time()
    features = router.features(
        slug,
        round(raw * ratio),
        prefixes_to_check(hashes),
        model.by_id,  # type: ignore[arg-type]
        now,
        stream=chat.stream,
        earlier=earlier_turns(chat),
        customer=customer,
        max_tokens=chat.max_tokens,
        required=required_parameters(chat, options),
    )
    endpoints = [route.info for route in model.endpoints]
    try:
        plan = router.plan(model.info, endpoints, features, options, now)
    except RoutingError as exc:
        raise GatewayError(exc.status, exc.message, code=exc.code) from None
    return plan, features, raw, hashes


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
            plan, features, raw, hashes = plan_request(
                chat, model, customer=accepted.principal.api_key_id
            )
        except GatewayError:
            continue
        return replace(
            accepted,
            chat=chat,
            model=model,
            plan=plan,
            features=features,
            prompt_tokens_estimate=features.prompt_tokens,
            raw_prompt_tokens=raw,
            prefix_hashes=hashes,
            fallbacks=fallbacks,
        )
    return None


async def accept(principal: KeyPrincipal, body: bytes) -> Accepted:
    """Validate and plan an authenticated request; raises GatewayError."""
    depth = live_config().max_json_depth
    chat = await per_message_work(len(body), parse_chat_request, body, depth)
    return await accept_chat(principal, chat, len(body))


async def accept_chat(principal: KeyPrincipal, chat: ChatRequest, body_bytes: int = 0) -> Accepted:
    """Plan an authenticated, validated request (of a ``body_bytes`` body), then reserve it
    against the key's limits (the last step: nothing after it may refuse); raises
    GatewayError. A model alias is resolved first: the rest sees the catalog model."""
    chat = await catalog_cache.resolve_aliases(chat)
    check_allowed_models(principal, chat)
    chosen = await _plan_model(chat, body_bytes, principal.api_key_id)
    chat, model, (plan, features, raw, hashes), fallbacks = chosen
    prompt_tokens = features.prompt_tokens
    request_id = f"gen-{os.urandom(16).hex()}"
    quota, cap = await reserve(principal, request_id, chat, model, plan, prompt_tokens, fallbacks)
    return Accepted(
        request_id=request_id,
        principal=principal,
        chat=chat,
        model=model,
        plan=plan,
        features=features,
        prompt_tokens_estimate=prompt_tokens,
        raw_prompt_tokens=raw,
        prefix_hashes=hashes,
        created_at=timezone.now(),
        started=time.perf_counter(),
        fallbacks=fallbacks,
        quota=quota,
        max_tokens_cap=cap,
    )
