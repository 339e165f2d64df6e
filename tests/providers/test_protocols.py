"""The wire formats' pure translations (providers/protocols), one case per rule."""

import orjson
import pytest

from providers.protocols import anthropic_messages as wire
from providers.protocols import openai_chat
from providers.protocols.types import (
    Finish,
    ProtocolError,
    ReasoningDelta,
    StreamError,
    TextDelta,
    ToolCallDelta,
    ToolCallStart,
    UsageReport,
)


def _request(**fields):
    return {"model": "m/x", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}],
            **fields}  # fmt: skip


def test_blocks_become_chat_messages():
    body = wire.to_chat_body(_request(
        system=[{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        messages=[
            {"role": "user", "content": [
                {"type": "text", "text": "Look"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": "AAAA"}}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "s"},
                {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}]},
            {"role": "user", "content": [
                {"type": "text", "text": "and"},
                {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True,
                 "content": [{"type": "text", "text": "boom"}]}]},
        ],
        stop_sequences=["a", "b", "c", "d", "e"], metadata={"user_id": "u1"},
        tools=[{"name": "f", "input_schema": {"type": "object"}},
               {"type": "web_search_20250305", "name": "web_search"}],
        tool_choice={"type": "any", "disable_parallel_tool_use": True},
        thinking={"type": "enabled", "budget_tokens": 2048},
    ))  # fmt: skip
    system, user, assistant, tool, user_after = body["messages"]
    assert system == {
        "role": "system",
        "content": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
    }
    assert user["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,AAAA"},
    }
    assert assistant["reasoning_content"] == "hmm"
    assert assistant["tool_calls"][0]["function"] == {"name": "f", "arguments": '{"a":1}'}
    assert tool == {"role": "tool", "tool_call_id": "toolu_1", "content": "Error: boom"}
    assert user_after["content"] == [{"type": "text", "text": "and"}]
    assert body["stop"] == ["a", "b", "c", "d"]
    assert body["user"] == "u1"
    assert [t["function"]["name"] for t in body["tools"]] == ["f"]  # server tool dropped
    assert (body["tool_choice"], body["parallel_tool_calls"]) == ("required", False)
    assert body["reasoning"] == {"max_tokens": 2048}
    assert "stream_options" not in body


@pytest.mark.parametrize(
    ("request_body", "param"),
    [
        ({"model": "m/x", "messages": [{"role": "user", "content": "hi"}]}, "max_tokens"),
        (_request(model=""), "model"),
        (_request(messages=[{"role": "robot", "content": "x"}]), "messages[0].role"),
        (_request(messages=[{"role": "user", "content": [{"type": "video"}]}]),
         "messages[0].content[0]"),
        (_request(stop_sequences="x"), "stop_sequences"),
    ],
)  # fmt: skip
def test_malformed_messages_requests(request_body, param):
    with pytest.raises(ProtocolError) as caught:
        wire.to_chat_body(request_body)
    assert (caught.value.status, caught.value.param) == (400, param)


def _events(raw: bytes) -> list[tuple[str, dict]]:
    out = []
    for block in raw.split(b"\n\n"):
        if block:
            name, data = block.split(b"\n")
            out.append((name[7:].decode(), orjson.loads(data[6:])))
    return out


def test_stream_renderer_blocks_in_order():
    renderer = wire.StreamRenderer("gen-1", "m/x", 12)
    raw = renderer.start() + b"".join(renderer.render(e) for e in [
        ReasoningDelta("Let"), ReasoningDelta(" me"), TextDelta("Hi"),
        ToolCallStart(0, "call_1", "f"), ToolCallDelta(0, '{"a"'), ToolCallDelta(0, ":1}"),
        Finish("tool_calls"), UsageReport(20, 7, cached_tokens=5),
    ]) + renderer.finish()  # fmt: skip
    events = _events(raw)
    names = [n for n, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    starts = [d["content_block"]["type"] for n, d in events if n == "content_block_start"]
    assert starts == ["thinking", "text", "tool_use"]
    assert names.count("content_block_stop") == 3
    partial = "".join(d["delta"].get("partial_json", "") for n, d in events
                      if n == "content_block_delta")  # fmt: skip
    assert partial == '{"a":1}'
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == "tool_use"
    assert delta["usage"] == {
        "input_tokens": 15,
        "output_tokens": 7,
        "cache_read_input_tokens": 5,
        "cache_creation_input_tokens": 0,
    }


def test_stream_error_is_an_error_event():
    renderer = wire.StreamRenderer("gen-1", "m/x", 1)
    names = [n for n, _ in _events(renderer.render(TextDelta("a"))
                                   + renderer.render(StreamError("cut")))]  # fmt: skip
    assert names[-1] == "error"


def test_openai_chunk_events():
    chunk = {
        "choices": [
            {
                "index": 0,
                "delta": {
                    "reasoning": "r",
                    "tool_calls": [
                        {
                            "index": 1,
                            "id": "c",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{"},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2},
    }
    assert openai_chat.events_from_chunk(chunk) == [
        ReasoningDelta("r"), ToolCallStart(1, "c", "f"), ToolCallDelta(1, "{"),
        Finish("tool_calls"), UsageReport(3, 2),
    ]  # fmt: skip
    assert openai_chat.events_from_chunk({"error": {"message": "x"}}) == [StreamError("x")]


@pytest.mark.parametrize(
    ("status", "kind"),
    [(400, "invalid_request_error"), (401, "authentication_error"), (402, "billing_error"),
     (429, "rate_limit_error"), (503, "overloaded_error"), (502, "api_error")],
)  # fmt: skip
def test_error_types(status, kind):
    assert wire.error_body(status, "m") == {
        "type": "error",
        "error": {"type": kind, "message": "m"},
    }
