"""The Responses translation rules (providers/protocols/openai_responses), one by one:
a Responses request -> the neutral chat body, and neutral events -> Responses events."""

import orjson
import pytest

from providers.protocols import types as ev
from providers.protocols.openai_responses import (
    ResponseRenderer,
    render_response,
    skeleton,
    to_chat_body,
)
from providers.protocols.types import ProtocolError

from .samples import TURN


def _body(**request):
    return to_chat_body({"model": "m", **request})


def test_instructions_and_developer_become_system_messages():
    body = _body(
        instructions="Be terse.",
        input=[
            {
                "type": "message",
                "id": "m1",
                "role": "developer",
                "content": [{"type": "input_text", "text": "Rules."}],
            },
            {"role": "user", "content": "Hi"},
        ],
    )
    assert body["messages"] == [
        {"role": "system", "content": "Be terse."},
        {"role": "system", "content": "Rules."},
        {"role": "user", "content": "Hi"},
    ]


def test_calls_join_the_assistant_turn_and_outputs_follow():
    body = _body(
        input=[
            {"role": "user", "content": "Go"},
            {
                "type": "reasoning",
                "id": "rs",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": "Hmm."}],
                "encrypted_content": "sig",
            },
            {"role": "assistant", "content": [{"type": "output_text", "text": "Calling."}]},
            {"type": "function_call", "call_id": "c1", "name": "a", "arguments": "{}"},
            {"type": "function_call", "call_id": "c2", "name": "b", "arguments": ""},
            {"type": "function_call_output", "call_id": "c1", "output": "one"},
            {
                "type": "function_call_output",
                "call_id": "c2",
                "output": [{"type": "input_text", "text": "two"}],
            },
        ],
    )
    _user, assistant, *tools = body["messages"]
    assert assistant["content"] == "Calling."
    assert [c["id"] for c in assistant["tool_calls"]] == ["c1", "c2"]
    assert assistant["tool_calls"][1]["function"]["arguments"] == "{}"
    assert (assistant["reasoning_content"], assistant["reasoning_signature"]) == ("Hmm.", "sig")
    assert tools == [
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "tool", "tool_call_id": "c2", "content": "two"},
    ]


def test_a_call_without_a_message_opens_an_assistant_turn():
    body = _body(
        input=[
            {"role": "user", "content": "Go"},
            {"type": "function_call", "call_id": "c", "name": "a", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "x"},
            {"role": "user", "content": "Again"},
            {"type": "function_call", "call_id": "d", "name": "a"},
        ]
    )
    roles = [(m["role"], m.get("content")) for m in body["messages"]]
    assert roles == [
        ("user", "Go"),
        ("assistant", None),
        ("tool", "x"),
        ("user", "Again"),
        ("assistant", None),
    ]


def test_tools_flattened_builtins_dropped():
    body = _body(
        input="Hi",
        tools=[
            {"type": "function", "name": "a", "parameters": {"type": "object"}, "strict": False},
            {"type": "namespace", "name": "ns", "tools": [{"type": "function", "name": "b"}]},
            {"type": "web_search", "external_web_access": False},
        ],
        tool_choice={"type": "function", "name": "b"},
    )
    assert [t["function"]["name"] for t in body["tools"]] == ["a", "b"]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "b"}}


def test_only_builtin_tools_means_no_tools_and_no_choice():
    body = _body(input="Hi", tools=[{"type": "web_search"}], tool_choice="required")
    assert "tools" not in body and "tool_choice" not in body


def test_server_tool_items_are_dropped():
    body = _body(
        input=[
            {"role": "user", "content": "Hi"},
            {"type": "web_search_call", "id": "ws", "status": "completed"},
            {"type": "custom_tool_call_output", "call_id": "x", "output": "y"},
        ]
    )
    assert [m["role"] for m in body["messages"]] == ["user"]


def test_options_translated_and_unknown_fields_dropped():
    body = _body(
        input="Hi",
        stream=True,
        max_output_tokens=50,
        temperature=0.2,
        store=False,
        reasoning={"effort": "high", "summary": "auto"},
        include=["x"],
        prompt_cache_key="k",
        text={"format": {"type": "json_schema", "name": "s", "schema": {"type": "object"}}},
        client_metadata={"a": "b"},
        safety_identifier="u1",
    )
    assert body["max_tokens"] == 50 and body["temperature"] == 0.2 and body["user"] == "u1"
    assert body["reasoning"] == {"effort": "high"}
    assert body["response_format"]["json_schema"]["name"] == "s"
    assert body["stream_options"] == {"include_usage": True}
    assert {"store", "include", "prompt_cache_key", "client_metadata"}.isdisjoint(body)


@pytest.mark.parametrize(
    "request_",
    [
        {"input": "Hi", "previous_response_id": "r"},
        {"input": "Hi", "background": True},
        {"input": [{"type": "function_call", "call_id": "c", "name": "a", "arguments": {}}]},
        {"input": [{"type": "function_call_output", "output": "x"}]},
        {"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "f"}]}]},
        {"input": "Hi", "tools": "all"},
        {"input": "Hi", "tools": [{"type": "function", "name": "a"}], "tool_choice": 3},
        {"input": "Hi", "instructions": ["x"]},
        {"input": 5},
    ],
)
def test_malformed_requests_are_400s(request_):
    with pytest.raises(ProtocolError) as caught:
        _body(**request_)
    assert caught.value.status == 400 and caught.value.message


def _renderer(**request):
    response = skeleton({"model": "m", **request}, "gen-abc", "m", 1)
    return ResponseRenderer(response, {"b": "ns"}, prompt_estimate=7)


def _events(raw: bytes) -> list[dict]:
    return [orjson.loads(line[6:]) for line in raw.split(b"\n") if line.startswith(b"data: ")]


def test_stream_items_in_order_with_signature_and_namespace():
    renderer = _renderer()
    raw = renderer.start() + b"".join(map(renderer.render, TURN))
    events = _events(raw + renderer.finish())
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert [i["type"] for i in done] == ["reasoning", "message", "function_call"]
    assert done[0]["encrypted_content"] == "sig"
    assert (done[2]["arguments"], done[2]["namespace"]) == ('{"x":1}', "ns")
    final = events[-1]["response"]
    assert final["status"] == "completed" and len(final["output"]) == 3
    assert final["usage"] == {
        "input_tokens": 20,
        "input_tokens_details": {"cached_tokens": 5},
        "output_tokens": 7,
        "output_tokens_details": {"reasoning_tokens": 1},
        "total_tokens": 27,
    }
    assert [e["sequence_number"] for e in events] == list(range(len(events)))


def test_a_stream_error_fails_the_response_once():
    renderer = _renderer()
    raw = (
        renderer.start()
        + renderer.render(ev.TextDelta("Hi"))
        + renderer.render(ev.StreamError("x"))
    )
    events = _events(raw + renderer.finish())
    assert events[-1]["type"] == "response.failed"
    assert events[-1]["response"]["error"] == {"code": "server_error", "message": "x"}
    assert events[-2]["type"] == "response.output_item.done"


def test_whole_reply_without_usage_uses_the_estimate():
    response = render_response(_renderer(), [ev.TextDelta("Hi"), ev.Finish("length")])
    assert response["status"] == "incomplete"
    assert response["incomplete_details"] == {"reason": "max_output_tokens"}
    assert response["output"][0]["content"][0]["text"] == "Hi"
    assert response["usage"]["input_tokens"] == 7
