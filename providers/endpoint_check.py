"""The admin's "Test endpoint": one tiny real request, its status, TTFT and error.

Sent with httpx directly (not the gateway's pooled upstream client), synchronously,
from the admin's request: a 1-token streaming request to the endpoint in its protocol
(a chat completion to ``/chat/completions``, or a Messages request to ``/messages``
with ``x-api-key``) with its credential, no redirects followed. The host is checked
against the egress rules again just before (``validators.check_upstream_host``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import httpx
import orjson
from django.core.exceptions import ValidationError

from providers.config import providers_config

from . import protocols
from .credentials import authorization_for
from .models import Endpoint
from .validators import check_upstream_host

PROMPT = [{"role": "user", "content": "Reply with one word."}]
ERROR_TEXT_LIMIT = 300


@dataclass(frozen=True, slots=True)
class EndpointCheck:
    """The outcome of one test call. ``status`` is None when no HTTP answer came."""

    ok: bool
    status: int | None = None
    ttft_ms: int | None = None
    error: str = ""

    def summary(self) -> str:
        parts = [f"HTTP {self.status}" if self.status else "no HTTP answer"]
        if self.ttft_ms is not None:
            parts.append(f"TTFT {self.ttft_ms} ms")
        if self.error:
            parts.append(self.error)
        return ", ".join(parts)


def _error_text(body: bytes) -> str:
    try:
        data = orjson.loads(body)
        message = data["error"]["message"] if isinstance(data.get("error"), dict) else data
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
        message = body.decode("utf-8", "replace")
    return str(message).strip()[:ERROR_TEXT_LIMIT] or "(empty body)"


def _first_token_ms(response: httpx.Response, started: float) -> tuple[int | None, str]:
    """Read SSE events until the first data event; (TTFT ms, error text)."""
    for line in response.iter_lines():
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            return None, "The stream ended without a token."
        try:
            event = orjson.loads(payload)
        except orjson.JSONDecodeError:
            return None, f"Not an SSE JSON event: {payload[:100]}"
        if isinstance(event, dict) and "error" in event:
            return None, _error_text(payload.encode())
        return int((time.perf_counter() - started) * 1000), ""
    return None, "The stream ended without an event."


def _timeout() -> httpx.Timeout:
    conf = providers_config()
    return httpx.Timeout(conf.upstream_connect_timeout_s, read=min(conf.probe_timeout_s, 60.0))


def endpoint_check(*, endpoint: Endpoint) -> EndpointCheck:
    """Send one 1-token streaming request to ``endpoint`` and report what happened."""
    url = endpoint.base_url.rstrip("/") + protocols.upstream_path(endpoint.protocol)
    try:
        check_upstream_host(httpx.URL(url).host)
    except ValidationError as exc:
        return EndpointCheck(ok=False, error=" ".join(exc.messages))
    headers = protocols.upstream_headers(endpoint.protocol, authorization_for(endpoint))
    body = {
        "model": endpoint.upstream_model or endpoint.model.slug,
        "messages": PROMPT,
        "max_tokens": 1,
        "stream": True,
    }
    # In the endpoint's own wire format (an Anthropic stream's first event is
    # message_start; its data is JSON like an OpenAI chunk's).
    content = protocols.upstream_body(endpoint.protocol, body, None)
    started = time.perf_counter()
    try:
        with (
            httpx.Client(timeout=_timeout(), follow_redirects=False) as http,
            http.stream("POST", url, content=content, headers=headers) as response,
        ):
            if response.status_code != 200:
                return EndpointCheck(
                    ok=False, status=response.status_code, error=_error_text(response.read())
                )
            ttft_ms, error = _first_token_ms(response, started)
    except httpx.TimeoutException:
        return EndpointCheck(ok=False, error="Timed out.")
    except httpx.HTTPError as exc:
        return EndpointCheck(ok=False, error=f"Could not connect: {type(exc).__name__}.")
    return EndpointCheck(ok=not error, status=200, ttft_ms=ttft_ms, error=error)
