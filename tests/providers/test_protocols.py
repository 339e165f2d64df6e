"""The wire formats' pure translations (providers/protocols), one case per rule."""

import orjson
import pytest

from providers.protocols import anthropic_messages as wire
from providers.protocols import openai_chat
from providers.protocols import types as ev
from providers.protocols.types import ProtocolError
from providers.protocols.usage import read_usage

from .samples import PDF, PDF_DOCUMENT, TURN


def _request(**fields):
    return {
        "model": "m/x",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}],
        **fields,
    }


def _replied(*blocks: dict, asked: str = "q") -> list[dict]:
    """A conversation's start: the user asked, the assistant replied with ``blocks``."""
    return [{"role": "user", "content": asked}, {"role": "assistant", "content": list(blocks)}]


def test_blocks_become_chat_messages():
    body = wire.to_chat_body(
        _request(
            max_tokens=4096,  # above the thinking budget
            system=[{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Look"},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
                        },
                    ],
                },
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "hmm", "signature": "s"},
                        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}},
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "and"},
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_1",
                            "is_error": True,
                            "content": [{"type": "text", "text": "boom"}],
                        },
                    ],
                },
            ],
            stop_sequences=["a", "b", "c", "d", "e"],
            metadata={"user_id": "u1"},
            tools=[
                {"name": "f", "input_schema": {"type": "object"}},
                {"type": "web_search_20250305", "name": "web_search"},
            ],
            tool_choice={"type": "any", "disable_parallel_tool_use": True},
            thinking={"type": "enabled", "budget_tokens": 2048},
        )
    )
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
        (
            _request(messages=[{"role": "user", "content": [{"type": "video"}]}]),
            "messages[0].content[0]",
        ),
        (_request(stop_sequences="x"), "stop_sequences"),
        (_request(metadata="u1"), "metadata"),
        (
            _request(messages=[{"role": "user", "content": [{"type": "image", "source": "x"}]}]),
            "messages[0].content[0].source",
        ),
        (
            _request(
                messages=[
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "image",
                                "source": {
                                    "type": "base64",
                                    "media_type": "image/png",
                                    "data": ["AAAA"],
                                },
                            }
                        ],
                    }
                ]
            ),
            "messages[0].content[0].source.data",
        ),
        (
            _request(messages=[{"role": "user", "content": [{"type": "document", "source": 1}]}]),
            "messages[0].content[0].source",
        ),
        (
            _request(messages=_replied({"type": "thinking", "thinking": None, "signature": "s"})),
            "messages[1].content[0].thinking",
        ),
        (
            _request(
                messages=_replied({"type": "tool_use", "id": "t1", "name": "f", "input": "{}"})
            ),
            "messages[1].content[0].input",
        ),
        (_request(metadata=[{"user_id": "u1"}]), "metadata"),
    ],
)
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
    raw = renderer.start() + b"".join(map(renderer.render, TURN)) + renderer.finish()
    events = _events(raw)
    names = [n for n, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    starts = [d["content_block"]["type"] for n, d in events if n == "content_block_start"]
    assert starts == ["thinking", "text", "tool_use"]
    assert names.count("content_block_stop") == 3
    partial = "".join(
        d["delta"].get("partial_json", "") for n, d in events if n == "content_block_delta"
    )
    assert partial == '{"x":1}'
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
    raw = renderer.render(ev.TextDelta("a")) + renderer.render(ev.StreamError("cut"))
    assert [n for n, _ in _events(raw)][-1] == "error"


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
        ev.ReasoningDelta("r"),
        ev.ToolCallStart(1, "c", "f"),
        ev.ToolCallDelta(1, "{"),
        ev.Finish("tool_calls"),
        ev.UsageReport(3, 2),
    ]
    assert openai_chat.events_from_chunk({"error": {"message": "x"}}) == [ev.StreamError("x")]


@pytest.mark.parametrize("read", ["chunk", "completion"])
def test_reasoning_that_is_not_text_is_skipped_for_the_next_field(read):
    """A stream's delta and a whole message read reasoning alike: the first field that holds
    a non-empty string; a list or an object there (no upstream's text) is not relayed."""
    part = {"reasoning_content": [{"type": "text"}], "reasoning": "r", "content": "hi"}
    if read == "chunk":
        events = openai_chat.events_from_chunk({"choices": [{"delta": part}]})
    else:
        completion = {"choices": [{"message": part, "finish_reason": "stop"}]}
        events = openai_chat.events_from_completion(completion)[:-1]
    assert events == [ev.ReasoningDelta("r"), ev.TextDelta("hi")]


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (402, "billing_error"),
        (429, "rate_limit_error"),
        (503, "overloaded_error"),
        (502, "api_error"),
    ],
)
def test_error_types(status, kind):
    assert wire.error_body(status, "m") == {
        "type": "error",
        "error": {"type": kind, "message": "m"},
    }


# --- upstreams that speak Messages: the neutral request -> Messages, its SSE -> chunks ---------
def test_chat_body_becomes_a_messages_request():
    body = {
        "model": "claude-x",
        "stream": True,
        "max_tokens": 50,
        "temperature": 1.5,
        "stop": "END",
        "user": "u-1",
        "parallel_tool_calls": False,
        "seed": 3,
        "messages": [
            {
                "role": "system",
                "content": [
                    {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Look"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                    {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}},
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "reasoning_content": "hmm",
                "tool_calls": [
                    {
                        "id": "t1",
                        "type": "function",
                        "function": {"name": "f", "arguments": '{"a": 1}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "t1", "content": "42"},
            {"role": "user", "content": "thanks"},
        ],
        "tools": [
            {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
        ],
        "tool_choice": "required",
    }
    request = wire.from_chat_body(body)
    assert request["system"] == [
        {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
    ]
    assert [m["role"] for m in request["messages"]] == ["user", "assistant", "user"]
    user, assistant, results = request["messages"]
    assert [b["type"] for b in user["content"]] == ["text", "image", "image"]
    assert user["content"][1]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": "AAAA",
    }
    assert user["content"][2]["source"] == {"type": "url", "url": "https://x.test/a.png"}
    # earlier thinking is dropped (no signature to send back)
    assert assistant["content"] == [
        {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}
    ]
    assert results["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "42"},
        {"type": "text", "text": "thanks"},
    ]
    assert request["tools"] == [{"name": "f", "input_schema": {"type": "object"}}]
    assert request["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    assert request["stop_sequences"] == ["END"] and request["temperature"] == 1.0
    assert request["metadata"] == {"user_id": "u-1"} and "seed" not in request
    assert (request["max_tokens"], request["stream"]) == (50, True)


@pytest.mark.parametrize(
    ("fields", "thinking", "max_tokens"),
    [
        ({"reasoning": {"max_tokens": 3000}}, {"type": "enabled", "budget_tokens": 3000}, 3100),
        ({"reasoning": {"effort": "low"}}, {"type": "enabled", "budget_tokens": 2048}, 2148),
        ({"reasoning_effort": "high"}, {"type": "enabled", "budget_tokens": 16384}, 16484),
        ({"reasoning": {"max_tokens": 10}}, {"type": "enabled", "budget_tokens": 1024}, 1124),
        ({"reasoning": {"enabled": False}}, None, 100),
        ({"reasoning_effort": "none"}, None, 100),
        ({}, None, 100),
    ],
)
def test_thinking_budget_from_the_neutral_request(fields, thinking, max_tokens):
    body = {
        "model": "m",
        "max_tokens": 100,
        "temperature": 0.5,
        "messages": [{"role": "user", "content": "hi"}],
        **fields,
    }
    request = wire.from_chat_body(body)
    assert request.get("thinking") == thinking
    assert request["max_tokens"] == max_tokens
    assert ("temperature" in request) is (thinking is None)  # thinking allows none


def test_max_tokens_required_by_messages_gets_a_default():
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert wire.from_chat_body(body)["max_tokens"] == wire.DEFAULT_MAX_TOKENS
    assert wire.from_chat_body(body, max_output_tokens=512)["max_tokens"] == 512


def _sse(*events):
    return [orjson.dumps(e) for e in events]


def _block(index: int, block: dict, *deltas: dict) -> list[dict]:
    """One content block of a Messages stream: its start, its deltas, its stop."""
    return [
        {"type": "content_block_start", "index": index, "content_block": block},
        *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": index},
    ]


def test_upstream_stream_read_into_openai_chunks():
    reader = wire.UpstreamReader()
    events = _sse(  # the sample TURN as Anthropic streams it, with Anthropic's usage
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "model": "claude-x",
                "usage": {
                    "input_tokens": 10,
                    "cache_read_input_tokens": 100,
                    "cache_creation_input_tokens": 50,
                    "output_tokens": 1,
                },
            },
        },
        {"type": "ping"},
        *_block(
            0,
            {"type": "thinking", "thinking": ""},
            {"type": "thinking_delta", "thinking": "Let"},
            {"type": "thinking_delta", "thinking": " me"},
            {"type": "signature_delta", "signature": "sig"},
        ),
        *_block(1, {"type": "text", "text": ""}, {"type": "text_delta", "text": "Hi"}),
        *_block(
            2,
            {"type": "tool_use", "id": "toolu_1", "name": "b", "input": {}},
            {"type": "input_json_delta", "partial_json": '{"x"'},
            {"type": "input_json_delta", "partial_json": ":1}"},
        ),
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 30},
        },
        {"type": "message_stop"},
    )
    chunks = [c for data in events for c in reader.feed(data)]
    assert chunks[-1] == b"[DONE]"
    parsed = [_read_usage(orjson.loads(c)) for c in chunks[:-1]]
    events_out = [e for chunk in parsed for e in openai_chat.events_from_chunk(chunk)]
    assert events_out[:-1] == list(TURN[:-1])
    assert events_out[-1] == ev.UsageReport(
        prompt_tokens=160, completion_tokens=30, cached_tokens=100, cache_write_tokens=50
    )
    assert parsed[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}


def test_upstream_error_event_becomes_an_error_chunk():
    reader = wire.UpstreamReader()
    (chunk,) = reader.feed(
        orjson.dumps(
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        )
    )
    assert openai_chat.events_from_chunk(orjson.loads(chunk)) == [
        ev.StreamError("overloaded_error: Overloaded")
    ]


def _read_usage(chunk: dict) -> dict:
    """The relay's reading of a usage chunk: the reader passes Anthropic's usage object
    on as is, and the endpoint's dialect (anthropic) reads it."""
    if chunk.get("usage"):
        assert "input_tokens" in chunk["usage"]
        chunk["usage"] = read_usage("anthropic", chunk["usage"])
    return chunk


def test_upstream_whole_message_read_as_a_stream():
    reader = wire.UpstreamReader()
    message = {
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "model": "c",
        "content": [
            {"type": "text", "text": "Hello"},
            {"type": "tool_use", "id": "t", "name": "f", "input": {"x": 1}},
        ],
        "stop_reason": "max_tokens",
        "usage": {"input_tokens": 5, "output_tokens": 7},
    }
    chunks = reader.message(orjson.dumps(message))
    assert chunks[-1] == b"[DONE]"
    parsed = [_read_usage(orjson.loads(c)) for c in chunks[:-1]]
    events = [e for chunk in parsed for e in openai_chat.events_from_chunk(chunk)]
    assert events == [
        ev.TextDelta("Hello"),
        ev.ToolCallStart(0, "t", "f"),
        ev.ToolCallDelta(0, '{"x":1}'),
        ev.Finish("length"),
        ev.UsageReport(prompt_tokens=5, completion_tokens=7),
    ]


def test_upstream_headers_carry_the_key_as_x_api_key():
    from providers import protocols

    headers = protocols.upstream_headers("anthropic_messages", "Bearer sk-1")
    assert headers["x-api-key"] == "sk-1" and "authorization" not in headers
    assert headers["anthropic-version"] == wire.ANTHROPIC_VERSION
    assert protocols.upstream_headers("openai_chat", "Bearer sk-1")["authorization"] == (
        "Bearer sk-1"
    )


def test_messages_usage_rendered_with_cache_writes():
    usage = ev.UsageReport(
        prompt_tokens=160, completion_tokens=3, cached_tokens=100, cache_write_tokens=50
    )
    rendered = wire.render_message("m", "x", [usage], 0)["usage"]
    assert rendered == {
        "input_tokens": 10,
        "output_tokens": 3,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 50,
    }


def test_thinking_signature_round_trip():
    """Upstream signature -> chunk field -> Messages block -> client's next request ->
    the thinking block sent upstream again; unsigned thinking is not sent."""
    renderer = wire.StreamRenderer("m", "x", 0)
    out = renderer.render(ev.ReasoningDelta("Hmm")) + renderer.render(ev.ReasoningSignature("s1"))
    out += renderer.render(ev.TextDelta("ok"))
    assert b'"signature_delta","signature":"s1"' in out
    body = wire.to_chat_body(
        _request(
            messages=[
                *_replied(
                    {"type": "thinking", "thinking": "Hmm", "signature": "s1"},
                    {"type": "tool_use", "id": "t", "name": "f", "input": {}},
                ),
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t", "content": "1"}],
                },
            ]
        )
    )
    assistant = body["messages"][1]
    assert (assistant["reasoning_content"], assistant["reasoning_signature"]) == ("Hmm", "s1")
    upstream = wire.from_chat_body(body)
    assert upstream["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "Hmm",
        "signature": "s1",
    }
    del assistant["reasoning_signature"]
    assert wire.from_chat_body(body)["messages"][1]["content"][0]["type"] == "tool_use"


def test_signature_not_sent_to_openai_hosts():
    from providers import protocols

    body = {
        "model": "m",
        "messages": [{"role": "assistant", "content": "a", "reasoning_signature": "s"}],
    }
    sent = orjson.loads(protocols.upstream_body("openai_chat", body, None))
    assert sent["messages"] == [{"role": "assistant", "content": "a"}]
    assert body["messages"][0]["reasoning_signature"] == "s"  # the request is not changed


def test_thinking_within_the_endpoint_output_cap():
    body = {
        "model": "m",
        "max_tokens": 1000,
        "reasoning": {"max_tokens": 4000},
        "messages": [{"role": "user", "content": "hi"}],
    }
    capped = wire.from_chat_body(body, max_output_tokens=3000)
    assert capped["max_tokens"] == 3000 and capped["thinking"]["budget_tokens"] == 2999
    tiny = wire.from_chat_body(body, max_output_tokens=800)
    assert "thinking" not in tiny and tiny["max_tokens"] == 800


def test_forced_tool_drops_thinking():
    body = {
        "model": "m",
        "max_tokens": 100,
        "reasoning": {"effort": "high"},
        "messages": [{"role": "user", "content": "hi"}],
        "tool_choice": "required",
        "tools": [{"type": "function", "function": {"name": "f"}}],
    }
    request = wire.from_chat_body(body)
    assert "thinking" not in request and request["tool_choice"] == {"type": "any"}
    assert request["max_tokens"] == 100


def test_tool_result_cache_breakpoint_reaches_anthropic_only():
    """Claude Code marks its last tool_result for caching: kept for Anthropic upstreams,
    never sent to OpenAI-compatible hosts (their tool content is a plain string)."""
    from providers import protocols

    body = wire.to_chat_body(
        _request(
            messages=[
                *_replied({"type": "tool_use", "id": "t", "name": "f", "input": {}}),
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t",
                            "content": "1",
                            "cache_control": {"type": "ephemeral"},
                        }
                    ],
                },
            ]
        )
    )
    upstream = wire.from_chat_body(body)
    assert upstream["messages"][-1]["content"][0]["cache_control"] == {"type": "ephemeral"}
    sent = orjson.loads(protocols.upstream_body("openai_chat", body, None))
    assert sent["messages"][-1] == {"role": "tool", "tool_call_id": "t", "content": "1"}


def test_server_tool_blocks_of_every_kind_are_taken_and_dropped():
    """web_fetch, code execution and MCP blocks were a 400 "not a known content block"
    (found with the anthropic SDK); they ran at Anthropic, as server_tool_use did."""
    body = wire.to_chat_body(
        _request(
            messages=[
                *_replied(
                    {
                        "type": "server_tool_use",
                        "id": "srvtoolu_1",
                        "name": "web_fetch",
                        "input": {},
                    },
                    {
                        "type": "web_fetch_tool_result",
                        "tool_use_id": "srvtoolu_1",
                        "content": {},
                    },
                    {
                        "type": "mcp_tool_use",
                        "id": "mcptoolu_1",
                        "name": "q",
                        "server_name": "s",
                        "input": {},
                    },
                    {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1", "content": []},
                    {"type": "code_execution_tool_result", "tool_use_id": "x", "content": {}},
                    {"type": "text", "text": "done"},
                    asked="fetch it",
                ),
                {"role": "user", "content": "more"},
            ]
        )
    )
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "fetch it"}]},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": [{"type": "text", "text": "more"}]},
    ]
    with pytest.raises(ProtocolError):  # a type outside the family is still refused
        wire.to_chat_body(_request(messages=[{"role": "user", "content": [{"type": "toolz"}]}]))


def test_a_pdf_document_becomes_a_file_part_and_back():
    # A PDF document block was dropped, so a message holding only one read as empty
    # (found with the anthropic SDK). Both ways, base64 and URL; text stays text.
    body = wire.to_chat_body(
        _request(
            messages=[
                {
                    "role": "user",
                    "content": [
                        PDF_DOCUMENT,
                        {
                            "type": "document",
                            "source": {"type": "url", "url": "https://x.test/a.pdf"},
                        },
                        {
                            "type": "document",
                            "source": {"type": "text", "media_type": "text/plain", "data": "plain"},
                        },
                        {"type": "document", "source": {"type": "file", "file_id": "file_1"}},
                    ],
                }
            ]
        )
    )
    (user,) = body["messages"]
    assert user["content"] == [
        {
            "type": "file",
            "file": {"filename": "spec.pdf", "file_data": f"data:application/pdf;base64,{PDF}"},
        },
        {"type": "file", "file": {"filename": "document.pdf", "file_data": "https://x.test/a.pdf"}},
        {"type": "text", "text": "plain"},
    ]
    back = wire.from_chat_body({"model": "m", "max_tokens": 5, "messages": body["messages"]})
    pdf, linked, text = back["messages"][0]["content"]
    assert pdf == PDF_DOCUMENT
    assert linked["source"] == {"type": "url", "url": "https://x.test/a.pdf"}
    assert text == {"type": "text", "text": "plain"}


def test_an_openai_file_id_part_is_not_sent_to_an_anthropic_upstream():
    body = {
        "model": "m",
        "max_tokens": 5,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "read"},
                    {"type": "file", "file": {"file_id": "file-1"}},
                ],
            }
        ],
    }
    assert wire.from_chat_body(body)["messages"][0]["content"] == [{"type": "text", "text": "read"}]


_SYSTEM_MESSAGE = [{"role": "user", "content": "hi"}, {"role": "system", "content": "Be terse."}]
_TOOLS = [{"name": "f", "input_schema": {"type": "object"}}]


def _image(data: str) -> list[dict]:
    source = {"type": "base64", "media_type": "image/png", "data": data}
    return [{"role": "user", "content": [{"type": "image", "source": source}]}]


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"messages": _SYSTEM_MESSAGE}, "messages[1].role"),
        ({"tools": _TOOLS, "tool_choice": {"type": "tool"}}, "tool_choice.name"),
        ({"tool_choice": {"type": "tool", "name": ""}}, "tool_choice.name"),
        ({"tool_choice": {"type": "function"}}, "tool_choice"),
        ({"thinking": {"type": "enabled", "budget_tokens": -1}}, "thinking.budget_tokens"),
        ({"thinking": {"type": "enabled", "budget_tokens": 1023}}, "thinking.budget_tokens"),
        ({"thinking": {"type": "enabled", "budget_tokens": "2000"}}, "thinking.budget_tokens"),
        ({"thinking": {"type": "enabled", "budget_tokens": 4096}}, "thinking.budget_tokens"),
        ({"thinking": {"type": "enabled"}}, "thinking.budget_tokens"),
        ({"messages": _image("!!!")}, "messages[0].content[0].source.data"),
        ({"messages": _image("AAA")}, "messages[0].content[0].source.data"),  # bad padding
    ],
)
def test_bodies_anthropic_refuses_are_refused(fields, param):
    """Issue 45: each was forwarded; Anthropic answers each with a 400."""
    with pytest.raises(ProtocolError) as caught:
        wire.to_chat_body(_request(max_tokens=4096, **fields))
    assert (caught.value.status, caught.value.param) == (400, param)
    assert param.split("[")[0].split(".")[0] in caught.value.message


def test_betas_loosen_what_anthropic_loosens():
    """A mid-conversation system message (Claude Code's beta) and, with interleaved
    thinking, a budget above max_tokens are Anthropic's own exceptions."""
    betas = ("claude-code-20250219", "mid-conversation-system-2026-04-07")
    body = wire.to_chat_body(_request(messages=_SYSTEM_MESSAGE), betas)
    assert body["messages"][1] == {
        "role": "system",
        "content": [{"type": "text", "text": "Be terse."}],
    }
    thinking = {"type": "enabled", "budget_tokens": 2048}
    body = wire.to_chat_body(_request(thinking=thinking), ("interleaved-thinking-2025-05-14",))
    assert body["reasoning"] == {"max_tokens": 2048}


def test_valid_base64_and_count_tokens_without_max_tokens_pass():
    body = wire.to_chat_body(_request(messages=_image("aGk=")))
    assert body["messages"][0]["content"][0]["image_url"]["url"].endswith("aGk=")
    request = _request(thinking={"type": "enabled", "budget_tokens": 2048})
    del request["max_tokens"]
    assert wire.count_text(request)[0]["content"] == [{"type": "text", "text": "hi"}]
