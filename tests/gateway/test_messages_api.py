"""The Anthropic Messages API through the live gateway, with the official ``anthropic``
SDK: text, streaming, tools over several turns, thinking, token counting, both ways of
passing the key, Anthropic-shaped errors; billed and recorded like any chat call."""

import time

import anthropic
import httpx
import orjson
import pytest

from ..providers.samples import PDF_DOCUMENT
from ..support import TEST_MODEL, WEATHER_PARAMETERS, WEATHER_QUESTION
from .test_chat_api import wait_finished

pytestmark = pytest.mark.django_db(transaction=True)
HI = [{"role": "user", "content": "Say hello."}]
WEATHER = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": WEATHER_PARAMETERS,
}
ASK = [{"role": "user", "content": WEATHER_QUESTION}]


def test_text_reply_billed_like_a_chat_call(claude, emulator):
    message = claude.messages.create(
        model=TEST_MODEL, max_tokens=100, messages=HI, system="You are terse."
    )
    assert [b.type for b in message.content] == ["text"]
    assert message.content[0].text.startswith("lorem")
    assert message.stop_reason == "end_turn"
    assert message.usage.output_tokens == 8 and message.usage.input_tokens > 0
    row = wait_finished(message.id)
    assert (row.status, row.model_slug, row.completion_tokens) == ("success", TEST_MODEL, 8)
    assert row.cost_usd > 0
    assert "system" not in emulator.log()[0]["request_body_keys"]  # became a message


def test_max_tokens_stop_reason(claude):
    message = claude.messages.create(model=TEST_MODEL, max_tokens=3, messages=HI)
    assert message.stop_reason == "max_tokens"
    assert message.usage.output_tokens == 3


def test_streaming_text(claude):
    with claude.messages.stream(model=TEST_MODEL, max_tokens=100, messages=HI) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert kinds[0] == "message_start"
    assert kinds[-1] == "message_stop"
    assert {
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
    } <= set(kinds)
    assert final.content[0].text.startswith("lorem")
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens == 8
    assert wait_finished(final.id).stream is True


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_multi_turn_tool_use(claude, emulator, stream):
    first = _turn(claude, ASK, stream)
    assert first.stop_reason == "tool_use"
    (tool_use,) = [b for b in first.content if b.type == "tool_use"]
    assert (tool_use.name, tool_use.input) == ("get_weather", {"city": "emulator"})
    follow_up = [
        *ASK,
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": tool_use.id, "content": "Sunny, 21 C"},
                {"type": "text", "text": "Thanks."},
            ],
        },
    ]
    second = _turn(claude, follow_up, stream)
    assert second.stop_reason == "end_turn"
    assert second.content[-1].text.startswith("lorem")
    assert len(emulator.log()) == 2


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_thinking_blocks(claude, stream):
    thinking = {"type": "enabled", "budget_tokens": 1024}
    message = _turn(claude, HI, stream, thinking=thinking, tools=[], max_tokens=2000)
    assert [b.type for b in message.content] == ["thinking", "text"]
    assert message.content[0].thinking.startswith("Let me think")


def _turn(claude, messages, stream: bool, **extra):
    kwargs = {
        "model": TEST_MODEL,
        "max_tokens": 200,
        "messages": messages,
        "tools": [WEATHER],
        **extra,  # may replace max_tokens
    }
    if not stream:
        return claude.messages.create(**kwargs)
    with claude.messages.stream(**kwargs) as events:
        return events.get_final_message()


def test_bearer_auth_and_v1_alias(gateway, tenant):
    with anthropic.Anthropic(
        base_url=gateway.base_url, auth_token=tenant.key, max_retries=0
    ) as sdk:
        message = sdk.messages.create(model=TEST_MODEL, max_tokens=50, messages=HI)
    assert message.content[0].text


def test_the_model_listing_reads_in_the_anthropic_sdk(claude):
    # The SDK got OpenAI's shape: display_name and created_at empty (found with the SDK).
    page = claude.models.list()
    assert TEST_MODEL in [m.id for m in page.data] and page.has_more is False
    model = claude.models.retrieve(TEST_MODEL)
    assert model.type == "model" and model.display_name
    assert model.created_at.year >= 2026 and model.created_at.tzinfo is not None


PDF_ONLY = [{"role": "user", "content": [PDF_DOCUMENT]}]


def test_a_pdf_document_reaches_an_openai_provider_as_a_file(claude, emulator):
    # It was dropped: a message holding only a PDF read as "messages must be a
    # non-empty array" (found with the anthropic SDK).
    message = claude.messages.create(model=TEST_MODEL, max_tokens=5, messages=PDF_ONLY)
    assert message.content[0].text
    (record,) = emulator.log()
    assert record["last_message_part_types"] == ["file"]


def test_count_tokens(claude):
    counted = claude.messages.count_tokens(model=TEST_MODEL, messages=HI, tools=[WEATHER])
    bare = claude.messages.count_tokens(model=TEST_MODEL, messages=HI)
    assert counted.input_tokens > bare.input_tokens > 0


def test_errors_in_anthropic_shape(gateway, claude, emulator):
    stranger = anthropic.Anthropic(
        base_url=f"{gateway.base_url}/api", api_key="ullm_nope", max_retries=0
    )
    with stranger, pytest.raises(anthropic.AuthenticationError) as caught:
        stranger.messages.create(model=TEST_MODEL, max_tokens=10, messages=HI)
    assert caught.value.body["error"]["type"] == "authentication_error"
    with pytest.raises(anthropic.BadRequestError) as caught:
        claude.messages.create(model=TEST_MODEL, max_tokens=10, messages=[])
    assert caught.value.body == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "messages: must be a non-empty array.",
        },
    }
    with pytest.raises(anthropic.NotFoundError):
        claude.messages.create(model="nobody/none", max_tokens=10, messages=HI)
    assert emulator.log() == []
    # Refusals of an identified key are on its Activity ("rejected"), as for chat calls.
    from billing.models import RejectedRequest

    deadline = time.monotonic() + 10
    while RejectedRequest.unscoped_objects.count() < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(RejectedRequest.unscoped_objects.values_list("http_status", "model_slug")) == [
        (400, TEST_MODEL),
        (404, "nobody/none"),
    ]


def test_missing_max_tokens_is_a_400(gateway, tenant, emulator):
    response = httpx.post(
        f"{gateway.api_url}/messages",
        headers={"x-api-key": tenant.key},
        json={"model": TEST_MODEL, "messages": HI},
    )
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert "max_tokens" in response.json()["error"]["message"]


def test_a_stream_cut_upstream_ends_with_an_error_event(gateway, tenant, emulator):
    for slug in ("alpha", "bravo", "charlie"):
        emulator.control(slug, fail_after_tokens=3, default_output_tokens=20)
    events = _raw_stream(
        gateway,
        tenant.key,
        {"model": TEST_MODEL, "max_tokens": 100, "messages": HI, "stream": True},
    )
    names = [name for name, _ in events]
    assert names[0] == "message_start"
    assert names[-1] == "error"
    assert "message_stop" not in names


def test_a_claude_code_request_is_accepted(gateway, tenant, emulator):
    """The fields and headers Claude Code 2.1 sends (shared/reference/claude-code-requests.md)."""
    tools = [
        {"name": f"Tool{i}", "description": "d", "input_schema": {"type": "object"}}
        for i in range(24)
    ]
    tools.append({"type": "web_search_20250305", "name": "web_search"})  # a server tool
    body = {
        "model": TEST_MODEL,
        "max_tokens": 32000,
        "stream": True,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Say hello", "cache_control": {"type": "ephemeral"}}
                ],
            }
        ],
        "system": [
            {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}
        ],
        "thinking": {"type": "adaptive"},
        "tools": tools,
        "metadata": {"user_id": "user_abc"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015"}]},
        "output_config": {"effort": "high"},
    }
    headers = {
        "Authorization": f"Bearer {tenant.key}",
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
        "anthropic-dangerous-direct-browser-access": "true",
        "X-Claude-Code-Session-Id": "s1",
    }
    events = _raw_stream(gateway, None, body, headers=headers, path="/api/v1/messages?beta=true")
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    text = "".join(d["delta"].get("text", "") for n, d in events if n == "content_block_delta")
    assert text.startswith("lorem")
    sent = emulator.log()[0]["request_body_keys"]
    assert "context_management" not in sent and "output_config" not in sent


def _raw_stream(gateway, key, body, headers=None, path="/api/v1/messages"):
    headers = headers or {"x-api-key": key}
    events = []
    with httpx.stream(
        "POST", gateway.base_url + path, json=body, headers=headers, timeout=30
    ) as response:
        assert response.status_code == 200, response.read()
        name = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                events.append((name, orjson.loads(line[6:])))
    return events


_THINKING_NOT_TEXT = [*HI, {"role": "assistant", "content": [{"type": "thinking", "thinking": 1}]}]
_IMAGE_NOT_OBJECT = [{"role": "user", "content": [{"type": "image", "source": "x"}]}]


@pytest.mark.parametrize("path", ["/messages", "/messages/count_tokens"])
@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("metadata", "user-1", "metadata"),
        ("messages", _THINKING_NOT_TEXT, "messages[1].content[0].thinking"),
        ("messages", _IMAGE_NOT_OBJECT, "messages[0].content[0].source"),
        # round 16's fuzzing: refused under its chat name (messages[0]...), or dropped
        ("system", [{"type": "text", "text": 5}], "system[0].text"),
        ("system", [{"type": "image", "source": {"type": "url", "url": "x"}}], "system[0]"),
    ],
)
def test_a_field_of_the_wrong_type_is_a_400(gateway, tenant, emulator, path, field, value, words):
    """Each was a 500 (a ``.get`` on a string, a join of a number): found by fuzzing."""
    body = {"model": TEST_MODEL, "messages": HI, "max_tokens": 5, field: value}
    response = httpx.post(f"{gateway.api_url}{path}", headers={"x-api-key": tenant.key}, json=body)
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert words in response.json()["error"]["message"]


@pytest.mark.parametrize("path", ["/messages", "/messages/count_tokens"])
@pytest.mark.parametrize("raw", [b"[]", b"null", b'"x"', b"5"])
def test_a_body_that_is_not_an_object_is_a_400(gateway, tenant, path, raw):
    """count_tokens answered these with a 500 (it spread the body into a dict before
    checking it): found by fuzzing."""
    response = httpx.post(
        f"{gateway.api_url}{path}",
        content=raw,
        headers={"x-api-key": tenant.key, "content-type": "application/json"},
    )
    assert response.status_code == 400
    error = response.json()
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert "must be a JSON object" in error["error"]["message"]


_PNG_NOT_BASE64 = {"type": "base64", "media_type": "image/png", "data": "!!!"}
_ANTHROPIC_REFUSES = [
    ({"messages": [*HI, {"role": "system", "content": "Be terse."}]}, "messages[1].role"),
    ({"tools": [WEATHER], "tool_choice": {"type": "tool"}}, "tool_choice.name"),
    ({"thinking": {"type": "enabled", "budget_tokens": -1}}, "thinking.budget_tokens"),
    (
        {"messages": [{"role": "user", "content": [{"type": "image", "source": _PNG_NOT_BASE64}]}]},
        "messages[0].content[0].source.data",
    ),
]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize(("fields", "words"), _ANTHROPIC_REFUSES)
def test_bodies_anthropic_refuses_are_400_before_any_upstream_call(
    gateway, tenant, emulator, stream, fields, words
):
    """Issue 45: each of these was answered 200 (forwarded); Anthropic refuses them."""
    body = {"model": TEST_MODEL, "messages": HI, "max_tokens": 2000, "stream": stream, **fields}
    response = httpx.post(
        f"{gateway.api_url}/messages", headers={"x-api-key": tenant.key}, json=body
    )
    assert response.status_code == 400, response.text
    error = response.json()
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert words in error["error"]["message"]
    assert emulator.log() == []


def test_a_mid_conversation_system_message_passes_with_its_beta(gateway, tenant, emulator):
    """Claude Code sends ``role: "system"`` inside messages with its beta header."""
    body = {
        "model": TEST_MODEL,
        "max_tokens": 50,
        "messages": [*HI, {"role": "system", "content": "Be terse."}],
    }
    headers = {
        "x-api-key": tenant.key,
        "anthropic-beta": "claude-code-20250219, mid-conversation-system-2026-04-07",
    }
    response = httpx.post(f"{gateway.api_url}/messages", headers=headers, json=body)
    assert response.status_code == 200, response.text
    assert len(emulator.log()) == 1
