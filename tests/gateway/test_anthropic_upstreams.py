"""Endpoints whose upstream speaks Anthropic Messages natively (``protocol:
anthropic_messages``): the emulator's ``/v1/messages`` over loopback, reached by the
openai and the anthropic SDKs through the live gateway, streamed and not, with tools,
thinking and cache writes billed; retries between protocols within one call."""

from decimal import Decimal

import httpx
import pytest

from billing.pricing import call_cost
from routing.catalog import catalog_cache

from ..support import TEST_MODEL
from .test_chat_api import wait_finished
from .test_reasoning_tools import ASK, WEATHER

pytestmark = pytest.mark.django_db(transaction=True)
HI = [{"role": "user", "content": "Say hello."}]


def _set(market, slug: str, **fields) -> None:
    endpoint = market[slug]
    for name, value in fields.items():
        setattr(endpoint, name, value)
    endpoint.save()
    catalog_cache.invalidate()


@pytest.fixture
def native(market, emulator, monkeypatch):
    """alpha speaks Anthropic (with a key the emulator checks as x-api-key) and is the
    only endpoint; returns the emulator."""
    monkeypatch.setenv("UBERLLM_PROVIDER_KEY_TEST_ALPHA", "sk-alpha-test")
    emulator.control("alpha", api_key="sk-alpha-test")
    _set(market, "alpha", protocol="anthropic_messages", price_cache_write=Decimal("1.00"))
    for slug in ("bravo", "charlie"):
        _set(market, slug, enabled=False)
    return emulator


@pytest.fixture
def mixed(market, emulator):
    """alpha (cheapest, tried first) speaks Anthropic; bravo and charlie OpenAI chat."""
    _set(market, "alpha", protocol="anthropic_messages")
    return emulator


def _upstream_record(emulator) -> dict:
    (record,) = emulator.log("alpha")
    assert record["protocol"] == "anthropic_messages"
    assert record["headers"]["anthropic-version"] == "2023-06-01"
    assert "x-api-key" in record["headers_seen"] and "authorization" not in record["headers_seen"]
    assert {"max_tokens", "messages", "model", "stream"} <= set(record["anthropic_body_keys"])
    return record


def test_openai_sdk_streamed_through_an_anthropic_upstream(native, client):
    stream = client.chat.completions.create(
        model=TEST_MODEL,
        messages=[{"role": "system", "content": "Be terse."}, *HI],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.startswith("lorem") and len(text.split()) == 8
    finish = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert [f for f in finish if f] == ["stop"]
    usage = chunks[-1].usage
    assert usage.completion_tokens == 8 and usage.prompt_tokens > 0
    record = _upstream_record(native)
    assert "system" in record["anthropic_body_keys"]  # the system message went as `system`
    row = wait_finished(chunks[0].id)
    assert (row.status, row.provider_slug, row.completion_tokens) == ("success", "alpha", 8)
    assert row.prompt_tokens == usage.prompt_tokens and not row.usage_estimated
    assert row.ttft_ms is not None


def test_openai_sdk_whole_reply_through_an_anthropic_upstream(native, client):
    reply = client.chat.completions.create(model=TEST_MODEL, messages=HI, max_tokens=3)
    assert reply.choices[0].message.content.startswith("lorem")
    assert reply.choices[0].finish_reason == "length"
    assert reply.usage.completion_tokens == 3
    record = _upstream_record(native)
    assert record["max_tokens"] == 3
    assert wait_finished(reply.id).completion_tokens == 3


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_openai_sdk_tool_turns_through_an_anthropic_upstream(native, client, stream):
    first = _chat(client, ASK, stream, tools=[WEATHER])
    assert first["finish_reason"] == "tool_calls"
    (call,) = first["tool_calls"]
    assert (call["name"], call["arguments"]) == ("get_weather", '{"city":"emulator"}')
    follow_up = [
        *ASK,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": call["arguments"]},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call["id"], "content": "Sunny, 21 C"},
    ]
    second = _chat(client, follow_up, stream, tools=[WEATHER])
    assert second["finish_reason"] == "stop" and second["content"].startswith("lorem")
    assert len(native.log("alpha")) == 2


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_openai_sdk_reasoning_through_an_anthropic_upstream(native, client, stream):
    reply = _chat(client, HI, stream, extra_body={"reasoning": {"max_tokens": 2000}})
    assert reply["reasoning"].startswith("Let me think")
    assert reply["content"].startswith("lorem")


def _chat(client, messages, stream: bool, **kwargs) -> dict:
    """content, reasoning, tool_calls [{id, name, arguments}], finish_reason."""
    if not stream:
        choice = client.chat.completions.create(
            model=TEST_MODEL, messages=messages, **kwargs
        ).choices[0]
        message = choice.message
        calls = [
            {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
            for c in message.tool_calls or ()
        ]
        reasoning = (message.model_extra or {}).get("reasoning_content") or ""
        return {
            "content": message.content or "",
            "reasoning": reasoning,
            "tool_calls": calls,
            "finish_reason": choice.finish_reason,
        }
    out = {"content": "", "reasoning": "", "tool_calls": [], "finish_reason": None}
    for chunk in client.chat.completions.create(
        model=TEST_MODEL, messages=messages, stream=True, **kwargs
    ):
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        delta = choice.delta
        out["content"] += delta.content or ""
        out["reasoning"] += (delta.model_extra or {}).get("reasoning_content") or ""
        for call in delta.tool_calls or ():
            if call.id:
                out["tool_calls"].append(
                    {"id": call.id, "name": call.function.name, "arguments": ""}
                )
            out["tool_calls"][-1]["arguments"] += call.function.arguments or ""
        out["finish_reason"] = choice.finish_reason or out["finish_reason"]
    return out


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_anthropic_sdk_through_an_anthropic_upstream(claude, native, stream):
    kwargs = {
        "model": TEST_MODEL,
        "max_tokens": 2000,  # above the thinking budget, as Anthropic requires
        "messages": ASK,
        "tools": [
            {
                "name": "get_weather",
                "description": "Weather",
                "input_schema": WEATHER["function"]["parameters"],
            }
        ],
        "thinking": {"type": "enabled", "budget_tokens": 1024},
    }
    if stream:
        with claude.messages.stream(**kwargs) as events:
            message = events.get_final_message()
    else:
        message = claude.messages.create(**kwargs)
    assert [b.type for b in message.content] == ["thinking", "tool_use"]
    assert message.content[1].input == {"city": "emulator"}
    assert message.stop_reason == "tool_use"
    record = _upstream_record(native)
    assert "thinking" in record["anthropic_body_keys"] and "tools" in record["anthropic_body_keys"]
    row = wait_finished(message.id)
    assert (row.status, row.provider_slug) == ("success", "alpha")
    assert row.completion_tokens == message.usage.output_tokens > 0


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_anthropic_sdk_thinking_signature_survives_a_tool_turn(claude, native, stream):
    """The emulator, like Anthropic, refuses a thinking block without its signature."""
    tools = [{"name": "get_weather", "input_schema": WEATHER["function"]["parameters"]}]
    kwargs = {
        "model": TEST_MODEL,
        "max_tokens": 2000,  # above the thinking budget, as Anthropic requires
        "tools": tools,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
    }
    first = _message(claude, stream, messages=ASK, **kwargs)
    thinking, tool_use = first.content
    assert thinking.signature.startswith("emu-sig-")
    follow_up = [
        *ASK,
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool_use.id, "content": "Sunny"}],
        },
    ]
    second = _message(claude, stream, messages=follow_up, **kwargs)
    assert second.stop_reason == "end_turn"
    assert [r["status"] for r in native.log("alpha")] == ["completed", "completed"]


def _message(claude, stream: bool, **kwargs):
    if not stream:
        return claude.messages.create(**kwargs)
    with claude.messages.stream(**kwargs) as events:
        return events.get_final_message()


def test_openai_sdk_sends_the_signature_back(native, client):
    reasoning = {"reasoning": {"max_tokens": 2000}}
    first = (
        client.chat.completions.create(
            model=TEST_MODEL, messages=ASK, tools=[WEATHER], extra_body=reasoning
        )
        .choices[0]
        .message
    )
    extra = first.model_extra or {}
    assert extra["reasoning_signature"].startswith("emu-sig-")
    call = first.tool_calls[0]
    follow_up = [
        *ASK,
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": extra["reasoning_content"],
            "reasoning_signature": extra["reasoning_signature"],
            "tool_calls": [call.model_dump()],
        },
        {"role": "tool", "tool_call_id": call.id, "content": "Sunny"},
    ]
    second = client.chat.completions.create(
        model=TEST_MODEL, messages=follow_up, tools=[WEATHER], extra_body=reasoning
    )
    assert second.choices[0].finish_reason == "stop"


def test_a_pdf_document_reaches_an_anthropic_upstream_as_a_document(claude, native):
    from .test_messages_api import PDF_ONLY

    message = claude.messages.create(model=TEST_MODEL, max_tokens=5, messages=PDF_ONLY)
    assert message.content[0].text
    assert _upstream_record(native)["anthropic_last_part_types"] == ["document"]


def test_cache_writes_reported_and_billed(claude, native):
    system = [
        {
            "type": "text",
            "text": "You are a careful assistant. " * 40,
            "cache_control": {"type": "ephemeral"},
        }
    ]
    first = claude.messages.create(model=TEST_MODEL, max_tokens=50, system=system, messages=HI)
    written = first.usage.cache_creation_input_tokens
    assert written > 100 and first.usage.cache_read_input_tokens == 0
    row = wait_finished(first.id)
    prices = {
        "input": Decimal("0.10"),
        "cache_read": Decimal("0.01"),
        "cache_write": Decimal("1.00"),
        "output": Decimal("0.40"),
    }
    prompt = first.usage.input_tokens + written
    assert row.prompt_tokens == prompt
    expected = call_cost(
        prices=prices,
        prompt_tokens=prompt,
        cached_tokens=0,
        completion_tokens=8,
        cache_write_tokens=written,
    )
    assert row.cost_usd == expected
    assert row.cost_usd > call_cost(
        prices=prices, prompt_tokens=prompt, cached_tokens=0, completion_tokens=8
    )
    second = claude.messages.create(model=TEST_MODEL, max_tokens=50, system=system, messages=HI)
    assert second.usage.cache_read_input_tokens > 100
    assert second.usage.cache_creation_input_tokens < written
    assert wait_finished(second.id).cached_tokens == second.usage.cache_read_input_tokens


@pytest.mark.parametrize("status", [529, 429, 400])
def test_anthropic_upstream_error_retried_on_an_openai_endpoint(mixed, client, status):
    mixed.control("alpha", status_override=status)
    reply = client.chat.completions.create(model=TEST_MODEL, messages=HI)
    assert reply.model_extra["provider"] == "bravo"
    assert reply.choices[0].message.content.startswith("lorem")
    row = wait_finished(reply.id)
    attempts = list(row.attempts.values_list("provider_slug", "outcome", "http_status"))
    assert attempts == [("alpha", "http_error", status), ("bravo", "success", None)]
    assert mixed.log("bravo")[0].get("protocol") is None  # bravo got an OpenAI request


def test_error_event_before_the_first_token_retried(mixed, gateway, tenant):
    """An Anthropic ``error`` event (a cut before any token) moves the call on."""
    mixed.control("alpha", fail_after_tokens=0)
    response = httpx.post(
        f"{gateway.api_url}/chat/completions",
        json={"model": TEST_MODEL, "messages": HI, "stream": True},
        headers={"Authorization": f"Bearer {tenant.key}"},
        timeout=10,
    )
    assert response.status_code == 200
    assert '"provider":"bravo"' in response.text and response.text.endswith("[DONE]\n\n")


def test_endpoints_listing_names_the_protocol(mixed, gateway):
    response = httpx.get(f"{gateway.api_url}/models/{TEST_MODEL}/endpoints")
    assert response.status_code == 200
    data = response.json()
    endpoints = data.get("data", data).get("endpoints") if isinstance(data, dict) else None
    protocols = {e["tag"]: e["protocol"] for e in endpoints}
    assert protocols == {
        "alpha": "anthropic_messages",
        "bravo": "openai_chat",
        "charlie": "openai_chat",
    }


@pytest.mark.parametrize("alpha_fails", [False, True], ids=["anthropic", "openai"])
def test_tool_result_cache_breakpoint_accepted_by_both_kinds(mixed, claude, alpha_fails):
    if alpha_fails:
        mixed.control("alpha", status_override=500)
    history = [
        {"role": "user", "content": "What is the weather? Use get_weather."},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "x"}}
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "Sunny",
                    "cache_control": {"type": "ephemeral"},
                }
            ],
        },
    ]
    tools = [{"name": "get_weather", "input_schema": WEATHER["function"]["parameters"]}]
    message = claude.messages.create(model=TEST_MODEL, max_tokens=50, messages=history, tools=tools)
    assert message.stop_reason == "end_turn"
    assert wait_finished(message.id).provider_slug == ("bravo" if alpha_fails else "alpha")
