"""Reasoning and tool calls through the live gateway with the official openai SDK, streamed
and not: the emulator answers reasoning when asked and a tool call when a tool is named."""

import json
from types import SimpleNamespace

import pytest

from routing.gateway.relay import ChunkRewriter

from ..support import TEST_MODEL, WEATHER_PARAMETERS, WEATHER_QUESTION
from .test_chat_api import wait_finished

pytestmark = pytest.mark.django_db(transaction=True)
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": WEATHER_PARAMETERS,
    },
}
ASK = [{"role": "user", "content": WEATHER_QUESTION}]


def test_reasoning_kept_in_a_non_streaming_reply(client):
    reply = client.chat.completions.create(
        model=TEST_MODEL, messages=ASK[:1], reasoning_effort="low"
    )
    message = reply.choices[0].message
    assert message.model_extra["reasoning_content"] == "Let me think about this step"
    assert message.content.startswith("lorem")
    assert reply.usage.completion_tokens_details.reasoning_tokens == 6
    assert reply.usage.completion_tokens == 6 + 8


def test_reasoning_streamed_before_content(client):
    stream = client.chat.completions.create(
        model=TEST_MODEL, messages=ASK, stream=True, extra_body={"reasoning": {"effort": "high"}}
    )
    deltas = [c.choices[0].delta for c in stream if c.choices]
    reasoning = [d.model_extra.get("reasoning_content") for d in deltas]
    first_reasoning = next(i for i, r in enumerate(reasoning) if r)
    first_content = next(i for i, d in enumerate(deltas) if d.content)
    assert first_reasoning < first_content
    assert "".join(r or "" for r in reasoning).startswith("Let me think")


def _rewriter(stream: bool) -> ChunkRewriter:
    chat = SimpleNamespace(include_usage=False, stream=stream, model_slug=TEST_MODEL, body={})
    accepted = SimpleNamespace(chat=chat, request_id="gen-x")
    return ChunkRewriter(accepted, SimpleNamespace(provider_slug="alpha", usage_dialect="openai"))


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_a_reasoning_delta_is_the_first_token(field):
    rewriter = _rewriter(stream=True)
    rewriter.rewrite(b'{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}')
    assert not rewriter.saw_token  # the role chunk is not a token
    delta = json.dumps({"choices": [{"index": 0, "delta": {field: "Hmm"}}]}).encode()
    rewriter.rewrite(delta)
    assert rewriter.saw_token


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_tool_call_round_trip(client, emulator, stream):
    first = _complete(client, ASK, stream)
    assert first["finish_reason"] == "tool_calls"
    (call,) = first["tool_calls"]
    assert call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "emulator"}
    follow_up = [
        *ASK,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": "Sunny, 21 C"},
    ]
    second = _complete(client, follow_up, stream)
    assert second["finish_reason"] == "stop"
    assert second["content"].startswith("lorem")
    assert not second["tool_calls"]
    assert [r["status"] for r in emulator.log()] == ["completed", "completed"]
    assert wait_finished(second["id"]).status == "success"


def test_tool_choice_required_forces_a_call(client):
    reply = client.chat.completions.create(
        model=TEST_MODEL,
        messages=[{"role": "user", "content": "hi"}],
        tools=[WEATHER],
        tool_choice="required",
    )
    assert reply.choices[0].message.tool_calls[0].function.name == "get_weather"


def _complete(client, messages, stream: bool) -> dict:
    """One turn as a dict: content, tool_calls (merged), finish_reason, id."""
    if not stream:
        reply = client.chat.completions.create(model=TEST_MODEL, messages=messages, tools=[WEATHER])
        choice = reply.choices[0]
        calls = [c.model_dump(exclude_none=True) for c in choice.message.tool_calls or ()]
        return {
            "content": choice.message.content,
            "tool_calls": calls,
            "finish_reason": choice.finish_reason,
            "id": reply.id,
        }
    content, calls, finish, reply_id = "", {}, None, None
    for chunk in client.chat.completions.create(
        model=TEST_MODEL, messages=messages, tools=[WEATHER], stream=True
    ):
        reply_id = chunk.id
        choice = chunk.choices[0]
        content += choice.delta.content or ""
        for part in choice.delta.tool_calls or ():
            merged = calls.setdefault(
                part.index,
                {"id": part.id, "type": "function", "function": {"name": "", "arguments": ""}},
            )
            merged["function"]["name"] += part.function.name or ""
            merged["function"]["arguments"] += part.function.arguments or ""
        finish = choice.finish_reason or finish
    return {
        "content": content,
        "tool_calls": list(calls.values()),
        "finish_reason": finish,
        "id": reply_id,
    }


@pytest.mark.parametrize(
    "chunk",
    [
        b'{"choices": "oops"}',
        b'{"choices": ["oops"]}',
        b'{"choices": [{"delta": ["x"]}]}',
        b'{"choices": [{"index": 0, "message": "x"}]}',
    ],
)
def test_a_chunk_of_another_shape_fails_the_stream_not_the_gateway(chunk):
    """A provider's malformed chunk is an upstream failure (retried before the first
    token, an error chunk after), as a chunk that is not JSON is: not a 500."""
    rewriter = _rewriter(stream=True)
    assert rewriter.rewrite(chunk) is None
    assert rewriter.upstream_error == "upstream sent a malformed chunk"
    good = _rewriter(stream=True)
    assert good.rewrite(b'{"choices": [{"index": 0, "delta": {"content": "hi"}}]}') is not None
    assert good.upstream_error is None and good.saw_token
