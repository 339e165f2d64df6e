"""A ``Responder``'s whole replies at the ASGI level: JSON with the call's generation id,
an error with its own headers (also in the Messages format, and behind a ``ReplyTap``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from routing.errors import OVERLOADED, GatewayError
from routing.gateway.bodies import ReplyTap
from routing.gateway.messages import MessagesResponder
from routing.gateway.respond import Responder

OVERLOADED_ERROR = GatewayError(503, "every provider is busy", code=OVERLOADED, retry_after_s=1)


def _reply(
    make: Callable[[Any], Any], act: Callable[[Any], Awaitable[None]]
) -> tuple[int, dict[bytes, bytes], bytes, Any]:
    """What ``act`` sent through the responder ``make(send)``: status, headers, body."""
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    out = make(send)
    asyncio.run(act(out))
    start, body = sent
    assert body["more_body"] is False
    return start["status"], dict(start["headers"]), body["body"], out


def test_a_json_reply_carries_the_generation_id_when_the_call_has_one():
    status, headers, body, _ = _reply(Responder, lambda out: out.json(200, b"{}", "gen-1"))
    assert (status, body) == (200, b"{}")
    assert headers[b"content-type"] == b"application/json"
    assert headers[b"x-generation-id"] == b"gen-1"
    assert headers[b"x-content-type-options"] == b"nosniff"
    _, headers, _, _ = _reply(Responder, lambda out: out.json(200, b"{}"))
    assert b"x-generation-id" not in headers


def test_an_error_reply_carries_the_errors_headers():
    status, headers, body, _ = _reply(Responder, lambda out: out.error(OVERLOADED_ERROR, "g"))
    assert status == 503 and body == OVERLOADED_ERROR.body()
    assert headers[b"retry-after"] == b"1" and headers[b"x-generation-id"] == b"g"


def test_the_messages_format_answers_overloaded_as_529_with_the_same_headers():
    status, headers, body, _ = _reply(
        MessagesResponder, lambda out: out.error(OVERLOADED_ERROR, "g")
    )
    assert status == 529 and orjson.loads(body)["error"]["type"] == "overloaded_error"
    assert headers[b"retry-after"] == b"1" and headers[b"x-generation-id"] == b"g"


def test_a_tap_keeps_the_whole_reply_and_the_error_it_passes_on():
    def tapped(send: Any) -> ReplyTap:
        return ReplyTap(Responder(send))

    status, _, body, tap = _reply(tapped, lambda out: out.json(200, b'{"a": 1}', "g"))
    assert (status, body, tap.parts) == (200, b'{"a": 1}', [b'{"a": 1}'])
    status, headers, body, tap = _reply(tapped, lambda out: out.error(OVERLOADED_ERROR))
    assert status == 503 and headers[b"retry-after"] == b"1"
    assert tap.parts == [OVERLOADED_ERROR.body()] == [body]
