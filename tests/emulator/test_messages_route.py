"""The emulator's Anthropic Messages route (``POST /{provider}/v1/messages``) with the
official ``anthropic`` SDK over loopback: text, thinking and tool_use, usage with cache
reads and writes, Anthropic-shaped errors per the fault profile."""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import httpx
import pytest

MODEL = "claude-emulated"
KEY = "sk-ant-emu"
# The profiles the module's emulator serves (the `emu` fixture, tests/emulator/conftest.py).
PROFILES = {
    "seed": 3,
    "time_scale": 0,
    "providers": {"claude": {"models": [MODEL], "api_key": KEY, "default_output_tokens": 6}},
}
HI = [{"role": "user", "content": "Hello"}]
TOOL = {
    "name": "lookup",
    "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
}


@pytest.fixture
def sdk(emu) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(
        base_url=f"{emu.base_url}/claude", api_key=KEY, max_retries=0
    ) as client:
        yield client


def test_text_message_and_log(sdk, emu):
    message = sdk.messages.create(model=MODEL, max_tokens=100, messages=HI)
    assert message.id.startswith("msg_") and message.type == "message"
    assert [b.type for b in message.content] == ["text"] and message.stop_reason == "end_turn"
    assert message.usage.output_tokens == 6 and message.usage.input_tokens > 0
    (record,) = emu.log()
    assert record["protocol"] == "anthropic_messages" and record["status"] == "completed"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_thinking_and_tool_use(sdk, stream):
    kwargs = {
        "model": MODEL,
        "max_tokens": 2000,
        "messages": [{"role": "user", "content": "Please lookup the answer."}],
        "tools": [TOOL],
        "thinking": {"type": "enabled", "budget_tokens": 1024},
    }
    if stream:
        with sdk.messages.stream(**kwargs) as events:
            kinds = [e.type for e in events]
            message = events.get_final_message()
        assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    else:
        message = sdk.messages.create(**kwargs)
    assert [b.type for b in message.content] == ["thinking", "tool_use"]
    assert message.content[1].input == {"q": "emulator"} and message.stop_reason == "tool_use"


def test_cache_control_reports_writes_then_reads(sdk):
    system = [{"type": "text", "text": "Rules. " * 200, "cache_control": {"type": "ephemeral"}}]
    first = sdk.messages.create(model=MODEL, max_tokens=10, system=system, messages=HI)
    assert first.usage.cache_creation_input_tokens > 0
    assert first.usage.cache_read_input_tokens == 0
    second = sdk.messages.create(model=MODEL, max_tokens=10, system=system, messages=HI)
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert second.usage.cache_creation_input_tokens == 0


@pytest.mark.parametrize(
    ("status", "error", "kind"),
    [
        (529, anthropic.InternalServerError, "overloaded_error"),
        (429, anthropic.RateLimitError, "rate_limit_error"),
        (500, anthropic.InternalServerError, "api_error"),
    ],
)
def test_fault_profile_answers_anthropic_errors(sdk, emu, status, error, kind):
    emu.control("claude", status_override=status)
    with pytest.raises(error) as caught:
        sdk.messages.create(model=MODEL, max_tokens=10, messages=HI)
    assert caught.value.status_code == status
    assert caught.value.body["error"]["type"] == kind


def test_stream_cut_is_an_error_event(sdk, emu):
    emu.control("claude", fail_after_tokens=2)
    with (
        pytest.raises(anthropic.APIStatusError),
        sdk.messages.stream(model=MODEL, max_tokens=10, messages=HI) as events,
    ):
        for _ in events:
            pass


def test_anthropic_rules_enforced(emu):
    url = f"{emu.base_url}/claude/v1/messages"
    body = {"model": MODEL, "max_tokens": 5, "messages": HI}
    missing_version = httpx.post(url, json=body, headers={"x-api-key": KEY})
    assert missing_version.status_code == 400
    assert missing_version.json()["error"]["type"] == "invalid_request_error"
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    no_max = httpx.post(url, json={"model": MODEL, "messages": HI}, headers=headers)
    assert no_max.status_code == 400 and "max_tokens" in no_max.json()["error"]["message"]
    good = httpx.post(url, json=body, headers=headers)
    assert good.status_code == 200 and good.json()["type"] == "message"
    record = emu.log()[-1]
    assert "x-api-key" in record["headers_seen"] and "x-api-key" not in record["headers"]
    unsigned = [
        *HI,
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "x", "signature": ""},
                {"type": "text", "text": "y"},
            ],
        },
        {"role": "user", "content": "more"},
    ]
    refused = httpx.post(url, json={**body, "messages": unsigned}, headers=headers)
    assert refused.status_code == 400 and "signature" in refused.json()["error"]["message"]
    bad_key = httpx.post(url, json=body, headers={**headers, "x-api-key": "nope"})
    assert bad_key.status_code == 401
    assert bad_key.json()["error"]["type"] == "authentication_error"
