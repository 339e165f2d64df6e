"""A provider's refusal read (providers/refusals.py): its error shape and rate-limit
headers, on the providers' real forms and on real HTTP from the emulator."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest

from providers import protocols
from providers.refusals import duration_s, error_code, read_refusal
from providers.upstream import UpstreamCall, UpstreamError, close_client, open_stream

from ..support import TEST_MODEL

NOW = datetime(2026, 12, 6, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("1", 1.0),
        ("0.5", 0.5),
        ("12ms", 0.012),
        ("6m0s", 360.0),
        ("1h2m3s", 3723.0),
        ("2026-12-06T12:00:30Z", 30.0),
        ("Sun, 06 Dec 2026 12:01:00 GMT", 60.0),
        ("2026-12-06T11:00:00Z", 0.0),
        ("soon", None),
        ("", None),
    ],
)
def test_durations_in_every_providers_form(value, seconds):
    assert duration_s(value, NOW) == (pytest.approx(seconds) if seconds is not None else None)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (
            {"error": {"message": "m", "type": "requests", "code": "rate_limit_exceeded"}},
            "rate_limit_exceeded",
        ),
        (
            {"error": {"message": "m", "type": "insufficient_quota", "code": None}},
            "insufficient_quota",
        ),
        (
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            "overloaded_error",
        ),
        (
            {
                "type": "error",
                "error": {
                    "type": "rate_limit_error",
                    "message": "m",
                    "details": {"error_code": "enforced_spend_limit_reached"},
                },
            },
            "enforced_spend_limit_reached",
        ),
        ({"error": {"code": 429, "message": "Rate limited", "metadata": {}}}, ""),
        ("upstream connect error", ""),
    ],
)
def test_the_error_code_of_every_shape(body, code):
    raw = orjson.dumps(body) if isinstance(body, dict) else body.encode()
    assert error_code(raw) == code


def test_retry_after_wins_then_the_exhausted_limits_reset():
    headers = {
        "retry-after": "7",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "20s",
    }
    assert read_refusal(429, headers, b"", NOW).retry_after_s == 7.0
    del headers["retry-after"]
    refusal = read_refusal(429, headers, b"", NOW)
    assert refusal.retry_after_s == 20.0 and refusal.remaining == {"requests": 0}
    headers["x-ratelimit-remaining-requests"] = "3"  # not exhausted: unknown
    assert read_refusal(429, headers, b"", NOW).retry_after_s is None


def test_anthropic_rate_limit_headers():
    headers = {
        "anthropic-ratelimit-requests-remaining": "10",
        "anthropic-ratelimit-tokens-remaining": "0",
        "anthropic-ratelimit-tokens-reset": "2026-12-06T12:00:45Z",
    }
    refusal = read_refusal(
        429, headers, b'{"type":"error","error":{"type":"rate_limit_error"}}', NOW
    )
    assert refusal.remaining == {"requests": 10, "tokens": 0}
    assert refusal.retry_after_s == 45.0 and refusal.error_code == "rate_limit_error"


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (429, {"error": {"type": "insufficient_quota", "message": "quota"}}),
        (402, {"error": {"message": "Insufficient Balance"}}),
        (
            429,
            {
                "type": "error",
                "error": {
                    "type": "rate_limit_error",
                    "details": {"error_code": "enforced_spend_limit_reached"},
                },
            },
        ),
    ],
)
def test_a_billing_stop_is_no_rate_limit(status, body):
    refusal = read_refusal(status, {"retry-after": "1"}, orjson.dumps(body), NOW)
    assert refusal.billing_stop and refusal.retry_after_s is None


async def _refused(url: str, protocol: str) -> UpstreamError:
    body = {"model": TEST_MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": True}
    call = UpstreamCall(url, protocols.upstream_body(protocol, body, None), None, protocol)
    try:
        with pytest.raises(UpstreamError) as refused:
            await open_stream(call)
    finally:
        await close_client()
    return refused.value


@pytest.mark.parametrize(
    ("protocol", "path", "code"),
    [
        ("openai_chat", "chat/completions", "rate_limit_exceeded"),
        ("anthropic_messages", "messages", "rate_limit_error"),
    ],
)
async def test_a_429_is_read_on_real_http(emulator, protocol, path, code):
    emulator.control("alpha", status_override=429)
    error = await _refused(f"{emulator.base_url}/alpha/v1/{path}", protocol)
    assert (error.kind, error.status, error.retry_after_s) == ("http", 429, 1.0)
    assert error.refusal.error_code == code and not error.refusal.billing_stop
    if protocol == "openai_chat":  # OpenAI's headers (the Messages route sends Retry-After)
        assert error.refusal.remaining == {"requests": 0, "tokens": 90_000}
        assert error.refusal.reset_s == {"requests": 1.0, "tokens": 360.0}


async def test_a_402_is_a_billing_stop_on_real_http(emulator):
    emulator.control("alpha", status_override=402)
    error = await _refused(f"{emulator.base_url}/alpha/v1/chat/completions", "openai_chat")
    assert error.refusal.billing_stop and error.retry_after_s is None
