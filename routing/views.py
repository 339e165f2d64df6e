"""The public API: chat completions (async, streaming), models, generation lookup.

Views stay thin: authenticate, validate, plan, hand over to ``proxy``.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from billing.auth import KeyPrincipal, authenticate
from billing.limits import key_over_monthly_limit

from .catalog import catalog_cache
from .decide import plan_request
from .errors import GatewayError
from .proxy import CallState, complete_response, stream_response
from .request import parse_chat_request


def _read_body(request: HttpRequest) -> bytes:
    limit = settings.UBERLLM["MAX_BODY_BYTES"]
    declared = request.headers.get("Content-Length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise GatewayError(413, f"Request body is larger than {limit} bytes.", code="too_large")
    try:
        body = request.body
    except RequestDataTooBig:
        raise GatewayError(413, f"Request body is larger than {limit} bytes.") from None
    if len(body) > limit:
        raise GatewayError(413, f"Request body is larger than {limit} bytes.", code="too_large")
    return body


async def require_key(request: HttpRequest) -> KeyPrincipal:
    principal = await authenticate(request.headers.get("Authorization"))
    if principal is None:
        raise GatewayError(401, "Missing, invalid or revoked API key.", code="invalid_api_key")
    return principal


@csrf_exempt
async def chat_completions(request: HttpRequest) -> HttpResponse:
    """POST /api/v1/chat/completions (OpenAI-compatible, stream and not)."""
    if request.method != "POST":
        return GatewayError(405, "Use POST.").response()
    try:
        principal = await require_key(request)
        if (over := await key_over_monthly_limit(principal)) is not None:
            raise GatewayError(402, over, code="insufficient_quota")
        chat = parse_chat_request(_read_body(request))
        model = await catalog_cache.get(chat.model_slug)
        if model is None:
            raise GatewayError(404, f"Unknown model '{chat.model_slug}'.", code="model_not_found")
        decision = await plan_request(chat, model, principal)
    except GatewayError as exc:
        return exc.response()
    state = CallState(
        request_id=f"gen-{uuid.uuid4().hex}",
        principal=principal,
        chat=chat,
        model=model,
        plan=decision.plan,
        prompt_tokens_estimate=decision.prompt_tokens,
        raw_prompt_tokens=decision.raw_prompt_tokens,
        prefix_hashes=decision.prefix_hashes,
        cached_tokens=decision.cached_tokens,
        created_at=timezone.now(),
    )
    # The Activity row is inserted once an upstream answered (CallState.open_ledger_row).
    if chat.stream:
        return await stream_response(state)
    return await complete_response(state)


async def models_list(request: HttpRequest) -> HttpResponse:
    """GET /api/v1/models: the catalog with every endpoint's prices (public, like OpenAI's)."""
    from .selectors import models_payload

    return JsonResponse(await models_payload())
