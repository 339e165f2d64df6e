"""The one interface between the gateway and the routing core: build the core's inputs
for a request (token estimates, expected cache reads per endpoint, speed statistics,
unusable marks, the customer's options), and get the route plan back.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from django.conf import settings

from billing.auth import KeyPrincipal

from .catalog import CatalogModel
from .core.options import RoutingOptions
from .core.plan import plan_route
from .core.prefix import PrefixHashes, prefix_hashes
from .core.tokens import OutputEstimator, TokenEstimator
from .core.types import RequestFeatures, RoutePlan, RoutingError, bucket_for
from .errors import GatewayError
from .request import ChatRequest
from .shared import key, shared_kv
from .state import routing_state

# Per-process estimators; they calibrate within a few calls (see core.tokens).
token_estimator = TokenEstimator()
output_estimator = OutputEstimator()
_rng = random.Random()
# Prefixes looked up per request: the latest ones (a conversation's previous turn) and
# the first message (a shared system prompt).
PREFIX_LOOKBACK = 16


@dataclass(frozen=True, slots=True)
class RoutingDecision:
    plan: RoutePlan
    prompt_tokens: int
    raw_prompt_tokens: int
    prefix_hashes: PrefixHashes
    cached_tokens: dict[int, int]


def prefixes_to_check(hashes: PrefixHashes) -> PrefixHashes:
    recent = hashes[-PREFIX_LOOKBACK:]
    return recent if len(hashes) <= PREFIX_LOOKBACK else [hashes[0], *recent]


async def cached_tokens_by_endpoint(hashes: PrefixHashes, model: CatalogModel) -> dict[int, int]:
    """Tokens of the longest prompt prefix each endpoint has probably cached (R2.3)."""
    candidates = prefixes_to_check(hashes)
    seen = await shared_kv().hgetall_many([key("prefix", h) for h, _ in candidates])
    now = time.time()
    cached: dict[int, int] = {}
    for (_, tokens), endpoints in zip(candidates, seen, strict=True):
        for endpoint_id, expires_at in endpoints.items():
            eid = int(endpoint_id)
            if float(expires_at) > now and eid in model.by_id:
                cached[eid] = max(cached.get(eid, 0), tokens)
    return cached


def followup_turns(chat: ChatRequest) -> float:
    """A conversation (it already holds a reply) is expected to go on: its next turns
    resend this prompt, as cache reads where it is served now."""
    if any(m.get("role") in ("assistant", "tool") for m in chat.messages):
        return settings.UBERLLM["FOLLOWUP_TURNS"]
    return 0.0


def _options(chat: ChatRequest) -> RoutingOptions:
    try:
        return RoutingOptions.from_request(chat.provider_options, chat.model_suffix)
    except RoutingError as exc:
        raise GatewayError(exc.status, exc.message, code=exc.code, param="provider") from None


async def plan_request(
    chat: ChatRequest, model: CatalogModel, principal: KeyPrincipal
) -> RoutingDecision:
    """Plan where to send ``chat``; raises GatewayError (400/404/503) if nowhere."""
    options = _options(chat)
    raw = token_estimator.estimate(chat.messages)
    prompt_tokens = round(raw * token_estimator.ratio(model.info.slug))
    hashes = prefix_hashes(chat.messages)
    ratio = token_estimator.ratio(model.info.slug)
    hashes = [(h, round(t * ratio)) for h, t in hashes]
    cached = await cached_tokens_by_endpoint(hashes, model)
    bucket = bucket_for(prompt_tokens)
    features = RequestFeatures(
        prompt_tokens=prompt_tokens,
        expected_output_tokens=output_estimator.expected(model.info.slug, bucket, chat.max_tokens),
        cached_tokens=cached,
        required_parameters=chat.required_parameters,
        stream=chat.stream,
        expected_followup_turns=followup_turns(chat),
    )
    state = await routing_state.get(model)
    try:
        plan = plan_route(
            model.info,
            [route.info for route in model.endpoints],
            features,
            options,
            state.speed,
            state.unusable(time.time()),
            _rng,
            exploration_rate=settings.UBERLLM["EXPLORATION_RATE"],
        )
    except RoutingError as exc:
        raise GatewayError(exc.status, exc.message, code=exc.code) from None
    return RoutingDecision(plan, prompt_tokens, raw, hashes, cached)
