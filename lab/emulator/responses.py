"""Raw ASGI response helpers: JSON bodies, OpenAI errors and pre-encoded SSE chunks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import orjson

Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Headers = Sequence[tuple[bytes, bytes]]

JSON_TYPE = (b"content-type", b"application/json")
SSE_HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
DONE = b"data: [DONE]\n\n"

RATE_LIMITED = [
    (b"x-ratelimit-remaining-requests", b"0"),
    (b"x-ratelimit-reset-requests", b"1s"),
    (b"x-ratelimit-remaining-tokens", b"90000"),
    (b"x-ratelimit-reset-tokens", b"6m0s"),
]
_ERROR_TYPES = {
    402: ("insufficient_quota", "insufficient_quota"),
    400: ("invalid_request_error", "invalid_request"),
    401: ("authentication_error", "invalid_api_key"),
    404: ("invalid_request_error", "not_found"),
    405: ("invalid_request_error", "method_not_allowed"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
    500: ("server_error", "internal_error"),
    503: ("server_error", "overloaded"),
}


def error_object(
    status: int, message: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """OpenAI error JSON: ``{"error": {"message", "type", "code", "param"}}``."""
    err_type, default_code = _ERROR_TYPES.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", "error")
    )
    return {
        "error": {
            "message": message,
            "type": err_type,
            "code": code or default_code,
            "param": param,
        }
    }


async def send_json(send: Send, status: int, body: Any, headers: Headers = ()) -> None:
    """Send a complete JSON response."""
    payload = orjson.dumps(body)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [JSON_TYPE, (b"content-length", str(len(payload)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": payload, "more_body": False})


async def send_error(
    send: Send,
    status: int,
    message: str,
    *,
    code: str | None = None,
    param: str | None = None,
    headers: Headers = (),
) -> None:
    """Send an OpenAI-shaped error; 429s carry ``Retry-After: 1`` and OpenAI's
    rate-limit headers (no request left, reset in 1 s)."""
    if status == 429:
        headers = [*headers, (b"retry-after", b"1"), *RATE_LIMITED]
    await send_json(send, status, error_object(status, message, code, param), headers)


class ChunkEncoder:
    """Pre-encodes the constant parts of one stream's ``chat.completion.chunk`` events.

    ``content(token_json)`` is two byte concatenations: no JSON work per token.
    """

    def __init__(self, rid: str, created: int, model: str, include_usage: bool) -> None:
        self._head = (
            b'data: {"id":'
            + orjson.dumps(rid)
            + b',"object":"chat.completion.chunk","created":'
            + str(created).encode()
            + b',"model":'
            + orjson.dumps(model)
            + b',"choices":['
        )
        self._tail = (b',"usage":null' if include_usage else b"") + b"}\n\n"
        self._content_prefix = self._head + b'{"index":0,"delta":{"content":'
        self._content_suffix = b'},"finish_reason":null,"logprobs":null}]' + self._tail

    def role(self) -> bytes:
        """First event: ``delta: {"role": "assistant", "content": ""}``."""
        return (
            self._head + b'{"index":0,"delta":{"role":"assistant","content":""},'
            b'"finish_reason":null,"logprobs":null}]' + self._tail
        )

    def content(self, token_json: bytes) -> bytes:
        """A content event; ``token_json`` is the token already JSON-encoded."""
        return self._content_prefix + token_json + self._content_suffix

    def finish(self, reason: str) -> bytes:
        """The event with an empty delta and ``finish_reason``."""
        return (
            self._head
            + b'{"index":0,"delta":{},"finish_reason":'
            + orjson.dumps(reason)
            + b',"logprobs":null}]'
            + self._tail
        )

    def usage(self, usage: dict[str, Any]) -> bytes:
        """The final ``{"choices": [], "usage": {...}}`` event (include_usage only)."""
        return self._head + b'],"usage":' + orjson.dumps(usage) + b"}\n\n"


def error_event(message: str, code: str) -> bytes:
    """A mid-stream SSE error event, as OpenAI-compatible providers send."""
    return b"data: " + orjson.dumps(error_object(500, message, code)) + b"\n\n"
