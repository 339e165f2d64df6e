"""The protocol seam: neutral chat types and one module per wire format.

- ``types``: the neutral stream events (``TextDelta``, ``ReasoningDelta``,
  ``ToolCallStart``, ``ToolCallDelta``, ``Finish``, ``UsageReport``, ``StreamError``)
  and the neutral error (``ProtocolError``).
- ``openai_chat``: OpenAI Chat Completions, the gateway's neutral request form and the
  wire format of ``openai_chat`` upstreams: chunks -> neutral events, errors.
- ``usage``: one usage reader per upstream dialect (``openai``, ``deepseek``,
  ``anthropic``, ``none``): the provider's usage object -> the form billing prices.
- ``anthropic_messages``: Anthropic Messages, both ways: a client's request -> the
  neutral (OpenAI chat) request and neutral events -> Messages SSE / a Message (the
  ``/v1/messages`` API); and for ``anthropic_messages`` upstreams the neutral request
  -> a Messages request and their SSE -> OpenAI chunks (``UpstreamReader``).
- ``openai_responses``: OpenAI Responses, client side only: a client's request -> the
  neutral body, neutral events -> Responses SSE / a Response (the ``/v1/responses`` API).

The functions below are all the upstream client (``providers.upstream``) and the
catalog know of an upstream's protocol: its path, headers, request body and the
reader of its stream. The gateway session never sees a wire format. A new client
format is one module here plus one URL (``routing.gateway.messages`` is the Messages
one); a new upstream format is one module plus an entry below. Nothing here imports
Django or ``routing``.
"""

from __future__ import annotations

from typing import Any

import orjson

from . import anthropic_messages
from .usage import ANTHROPIC

OPENAI_CHAT = "openai_chat"
ANTHROPIC_MESSAGES = "anthropic_messages"
PROTOCOLS = (OPENAI_CHAT, ANTHROPIC_MESSAGES)
_PATHS = {OPENAI_CHAT: "/chat/completions", ANTHROPIC_MESSAGES: "/messages"}


def upstream_path(protocol: str) -> str:
    """The path appended to an endpoint's base URL."""
    return _PATHS.get(protocol, _PATHS[OPENAI_CHAT])


def upstream_headers(protocol: str, authorization: str | None) -> dict[str, str]:
    """The request headers (with the credential) for an upstream of ``protocol``."""
    if protocol == ANTHROPIC_MESSAGES:
        return anthropic_messages.upstream_headers(authorization)
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    if authorization:
        headers["authorization"] = authorization
    return headers


def upstream_body(protocol: str, body: dict[str, Any], max_output_tokens: int | None) -> bytes:
    """The request body for an upstream of ``protocol`` from the neutral (OpenAI chat)
    body (``max_output_tokens``: the endpoint's cap, the default where one is required)."""
    if protocol == ANTHROPIC_MESSAGES:
        return orjson.dumps(anthropic_messages.from_chat_body(body, max_output_tokens))
    messages = body.get("messages")
    if isinstance(messages, list) and any(
        isinstance(m, dict) and not OWN_MESSAGE_KEYS.isdisjoint(m) for m in messages
    ):  # UberLLM's own message fields: not for OpenAI-compatible hosts
        body = {**body, "messages": [_plain(m) for m in messages]}
    return orjson.dumps(body)


# Message-level fields of the neutral form that only Anthropic upstreams understand: a
# thinking signature, a tool result's cache breakpoint (OpenAI's tool content is a string).
OWN_MESSAGE_KEYS = frozenset({"reasoning_signature", "cache_control"})


def _plain(message: Any) -> Any:
    if not isinstance(message, dict) or OWN_MESSAGE_KEYS.isdisjoint(message):
        return message
    return {k: v for k, v in message.items() if k not in OWN_MESSAGE_KEYS}


def usage_dialect(protocol: str, dialect: str) -> str:
    """The usage dialect an endpoint's replies are read in: an ``anthropic_messages``
    upstream always reports Anthropic's usage (its reader passes it on as is); an
    OpenAI-compatible one the dialect its endpoint names."""
    return ANTHROPIC if protocol == ANTHROPIC_MESSAGES else dialect


def upstream_reader(protocol: str) -> anthropic_messages.UpstreamReader | None:
    """A reader turning the upstream's events into OpenAI chunks, or None when the
    upstream already speaks OpenAI chat."""
    if protocol == ANTHROPIC_MESSAGES:
        return anthropic_messages.UpstreamReader()
    return None
