"""Strict validation of the OpenAI spec through the live gateway: every malformed request
is a 400 naming the ``param``, before any upstream call (the emulator's log stays empty)."""

import httpx
import pytest

from billing.models import Activity

from ..support import TEST_MODEL

pytestmark = pytest.mark.django_db(transaction=True)
USER = [{"role": "user", "content": "hi"}]
TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}


def body(**fields):
    return {"model": TEST_MODEL, "messages": USER, **fields}


def with_messages(*messages):
    return {"model": TEST_MODEL, "messages": list(messages)}


MALFORMED = [
    ("temperature -1", body(temperature=-1), "temperature"),
    ("temperature 5", body(temperature=5), "temperature"),
    ("temperature string", body(temperature="hot"), "temperature"),
    ("top_p 2", body(top_p=2), "top_p"),
    ("n 1000", body(n=1000), "n"),
    ("content null", with_messages({"role": "user", "content": None}), "messages[0].content"),
    ("content missing", with_messages({"role": "user"}), "messages[0].content"),
    (
        "unknown part type",
        with_messages({"role": "user", "content": [{"type": "video", "video": {}}]}),
        "messages[0].content[0].type",
    ),
    (
        "text part not a string",
        with_messages({"role": "user", "content": [{"type": "text", "text": 5}]}),
        "messages[0].content[0].text",
    ),
    (
        "tool message without tool_call_id",
        with_messages(*USER, {"role": "tool", "content": "42"}),
        "messages[1].tool_call_id",
    ),
    (
        "max_tokens and max_completion_tokens",
        body(max_tokens=5, max_completion_tokens=5),
        "max_tokens",
    ),
    (
        "stream_options without stream",
        body(stream_options={"include_usage": True}),
        "stream_options",
    ),
    (
        "include_usage not a boolean",
        body(stream=True, stream_options={"include_usage": "yes"}),
        "stream_options.include_usage",
    ),
    (
        "function tool without a name",
        body(tools=[{"type": "function", "function": {"parameters": {}}}]),
        "tools[0].function.name",
    ),
    ("unknown tool type", body(tools=[{"type": "magic", "magic": {}}]), "tools[0].type"),
    (
        "tool_choice names a missing tool",
        body(tools=[TOOL], tool_choice={"type": "function", "function": {"name": "nope"}}),
        "tool_choice",
    ),
    ("tool_choice without tools", body(tool_choice="auto"), "tool_choice"),
    ("unknown response_format", body(response_format={"type": "yaml"}), "response_format"),
    ("string response_format", body(response_format="json"), "response_format"),
    ("role object", with_messages({"role": {}, "content": "hi"}), "messages[0].role"),
    ("role array", with_messages({"role": ["user"], "content": "hi"}), "messages[0].role"),
    ("n 2", body(n=2), "n"),
    ("top_logprobs without logprobs", body(top_logprobs=2), "top_logprobs"),
    ("stop not strings", body(stop=[1]), "stop"),
    (
        "assistant tool call without id",
        with_messages(*USER, {"role": "assistant", "tool_calls": [{"function": {}}]}),
        "messages[1].tool_calls[0]",
    ),
    ("models not a list", body(models="a"), "models"),
    ("usage not an object", body(usage=True), "usage"),
]


def _post(gateway, key, **kwargs):
    headers = {"Authorization": f"Bearer {key}", **kwargs.pop("headers", {})}
    return httpx.post(f"{gateway.api_url}/chat/completions", headers=headers, timeout=30, **kwargs)


@pytest.mark.parametrize(("name", "payload", "param"), MALFORMED, ids=[c[0] for c in MALFORMED])
def test_malformed_request_is_a_400_naming_the_param(
    gateway, tenant, emulator, name, payload, param
):
    response = _post(gateway, tenant.key, json=payload)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert error["param"] == param
    assert error["type"] == "invalid_request_error"
    assert emulator.log() == []
    assert not Activity.unscoped_objects.exists()


def test_n_above_one_says_only_one_choice(gateway, tenant, emulator):
    error = _post(gateway, tenant.key, json=body(n=2)).json()["error"]
    assert "n=1" in error["message"]


def test_text_plain_content_type_is_a_json_415(gateway, tenant, emulator):
    import orjson

    response = _post(
        gateway, tenant.key, content=orjson.dumps(body()), headers={"Content-Type": "text/plain"}
    )
    assert response.status_code == 415
    assert "application/json" in response.json()["error"]["message"]
    assert emulator.log() == []


VALID = [
    ("temperature bounds", body(temperature=2, top_p=0)),
    ("n 1", body(n=1)),
    (
        "assistant tool call round trip",
        with_messages(
            *USER,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        ),
    ),
    (
        "parts",
        with_messages(
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                ],
            }
        ),
    ),
    (
        "tools and a named tool_choice",
        body(tools=[TOOL], tool_choice={"type": "function", "function": {"name": "get_weather"}}),
    ),
    ("unknown top-level fields pass", body(top_k=5, transforms=[], reasoning={"effort": "low"})),
    ("stream with stream_options", body(stream=True, stream_options={"include_usage": True})),
]


@pytest.mark.parametrize(("name", "payload"), VALID, ids=[c[0] for c in VALID])
def test_valid_requests_pass(gateway, tenant, emulator, name, payload):
    response = _post(gateway, tenant.key, json=payload)
    assert response.status_code == 200, response.text
    assert len(emulator.log()) == 1
    sent = set(emulator.log()[0]["request_body_keys"])
    assert set(payload) - {"provider", "models", "usage"} <= sent


def test_valid_response_format_reaches_routing(gateway, tenant, emulator):
    """A well-formed json_schema passes validation; the test catalog has no endpoint
    supporting response_format, so routing answers 404 (not a 400)."""
    payload = body(
        response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}
    )
    response = _post(gateway, tenant.key, json=payload)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "unsupported_parameters"


@pytest.mark.parametrize("fields", [{"logprobs": False}, {"tools": []}, {"logprobs": None}])
def test_a_feature_asked_off_does_not_filter_the_endpoints(gateway, tenant, emulator, fields):
    """``logprobs: false`` was a 404 (no endpoint "supports" it): a client that always sends
    it got nothing (found with the openai SDK). ``logprobs: true`` still filters."""
    response = _post(gateway, tenant.key, json=body(**fields))
    assert response.status_code == 200, response.text
    asked = _post(gateway, tenant.key, json=body(logprobs=True))
    assert asked.status_code == 404
    assert asked.json()["error"]["code"] == "unsupported_parameters"
