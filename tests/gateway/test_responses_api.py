"""The OpenAI Responses API through the live gateway and the emulator, with the official
``openai`` SDK: text streamed and not, a function tool round trip over two requests
(stateless, the whole history sent again), reasoning items, instructions, usage; OpenAI-
shaped 400s for what needs a stored response; billed and recorded like any chat call."""

import httpx
import openai
import orjson
import pytest

from billing.models import Activity

from ..support import TEST_MODEL, WEATHER_PARAMETERS, WEATHER_QUESTION
from .test_chat_api import wait_finished

pytestmark = pytest.mark.django_db(transaction=True)
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a city",
    "parameters": WEATHER_PARAMETERS,
}
ASK = WEATHER_QUESTION


def test_text_reply_billed_like_a_chat_call(client, emulator):
    response = client.responses.create(
        model=TEST_MODEL, input="Say hello.", instructions="You are terse.", store=False
    )
    assert response.status == "completed"
    assert [item.type for item in response.output] == ["message"]
    assert response.output_text.startswith("lorem")
    assert response.usage.output_tokens == 8 and response.usage.input_tokens > 0
    assert response.usage.total_tokens == response.usage.input_tokens + 8
    assert response.usage.input_tokens_details.cached_tokens == 0
    assert response.instructions == "You are terse."
    row = wait_finished(response.id)
    assert (row.status, row.model_slug, row.completion_tokens, row.stream) == (
        "success",
        TEST_MODEL,
        8,
        False,
    )
    assert row.cost_usd > 0
    sent = emulator.log()[0]
    assert "instructions" not in sent["request_body_keys"]  # became a system message


def test_streamed_text_events(client):
    with client.responses.create(model=TEST_MODEL, input="Say hello.", stream=True) as stream:
        events = list(stream)
    kinds = [event.type for event in events]
    assert kinds[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert len(deltas) > 1
    completed = events[-1].response
    assert completed.output_text == "".join(deltas) == events[-4].text
    assert completed.usage.output_tokens == 8
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert wait_finished(completed.id).stream is True


def test_stream_helper_accumulates_the_response(client):
    with client.responses.stream(model=TEST_MODEL, input="Say hello.") as stream:
        text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        final = stream.get_final_response()
    assert final.output_text == text and text.startswith("lorem")


def _turn(client, items, stream: bool):
    kwargs = {"model": TEST_MODEL, "input": items, "tools": [WEATHER], "store": False}
    if not stream:
        return client.responses.create(**kwargs)
    with client.responses.stream(**kwargs) as events:
        kinds = [event.type for event in events]
        final = events.get_final_response()
    if any(item.type == "function_call" for item in final.output):
        assert "response.function_call_arguments.delta" in kinds
        assert "response.function_call_arguments.done" in kinds
    return final


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_function_tool_round_trip(client, emulator, stream):
    items = [{"role": "user", "content": ASK}]
    first = _turn(client, items, stream)
    (call,) = [item for item in first.output if item.type == "function_call"]
    assert (call.name, orjson.loads(call.arguments)) == ("get_weather", {"city": "emulator"})
    assert call.call_id and call.status == "completed"
    items += [item.model_dump(exclude_none=True) for item in first.output]
    items.append({"type": "function_call_output", "call_id": call.call_id, "output": "Sunny"})
    second = _turn(client, items, stream)
    assert second.output_text.startswith("lorem")
    sent = emulator.log()
    assert len(sent) == 2
    rows = Activity.unscoped_objects.filter(status="success", model_slug=TEST_MODEL)
    assert rows.count() <= 2  # rows land in the background; both are awaited below
    for response in (first, second):
        assert wait_finished(response.id).status == "success"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_reasoning_item_when_the_model_reasons(client, stream):
    kwargs = {"model": TEST_MODEL, "input": "Say hello.", "reasoning": {"effort": "low"}}
    if stream:
        with client.responses.stream(**kwargs) as events:
            kinds = [event.type for event in events]
            response = events.get_final_response()
        assert "response.reasoning_text.delta" in kinds
    else:
        response = client.responses.create(**kwargs)
    assert [item.type for item in response.output] == ["reasoning", "message"]
    assert response.output[0].content[0].text.startswith("Let me think")
    assert response.usage.output_tokens_details.reasoning_tokens == 6


def test_max_output_tokens_is_incomplete(client):
    response = client.responses.create(model=TEST_MODEL, input="Say hello.", max_output_tokens=3)
    assert response.status == "incomplete"
    assert response.incomplete_details.reason == "max_output_tokens"
    assert response.usage.output_tokens == 3


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"previous_response_id": "resp_123"}, "previous_response_id"),
        ({"conversation": "conv_1"}, "conversation"),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0].type"),
        ({"input": [{"role": "robot", "content": "hi"}]}, "input[0].role"),
        ({"input": [{"role": "user", "content": [{"type": "video"}]}]}, "input[0].content[0].type"),
        ({"input": []}, "input"),
        ({"tools": [{"type": "function", "name": "bad name"}]}, "tools[0].name"),
        ({"max_output_tokens": 0}, "max_output_tokens"),
        ({"reasoning": {"effort": "huge"}}, "reasoning.effort"),
        ({"input": [{"type": ["message"]}]}, "input[0].type"),
        ({"input": [{"role": "user", "content": [{"type": {}}]}]}, "input[0].content[0].type"),
        ({"temperature": "hot"}, "temperature"),
    ],
)
def test_bad_requests_are_openai_shaped_400s(client, extra, param):
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(**{"model": TEST_MODEL, "input": "Hi", **extra})
    error = caught.value.body
    assert caught.value.status_code == 400
    assert error["param"] == param and error["type"] == "invalid_request_error"


def test_a_stream_cut_after_tokens_is_response_failed(gateway, tenant, emulator):
    emulator.control("alpha", fail_after_tokens=3, default_output_tokens=20)
    body = {"model": TEST_MODEL, "input": "Say hello.", "stream": True}
    headers = {"Authorization": f"Bearer {tenant.key}"}
    reply = httpx.post(f"{gateway.api_url}/responses", json=body, headers=headers, timeout=10)
    assert reply.status_code == 200
    events = [orjson.loads(line[6:]) for line in reply.text.splitlines() if line[:6] == "data: "]
    kinds = [event["type"] for event in events]
    assert kinds[-2:] == ["response.output_item.done", "response.failed"]
    assert "response.completed" not in kinds
    failed = events[-1]["response"]
    assert failed["status"] == "failed" and failed["error"]["message"]
    assert wait_finished(failed["id"]).status == "error"


def test_previous_response_id_says_why(client):
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model=TEST_MODEL, input="Hi", previous_response_id="resp_1")
    assert "stores no responses" in caught.value.body["message"]


def test_codex_shaped_request_is_served(gateway, tenant, emulator):
    """What Codex sends (docs/shared reference): developer messages with ids,
    a namespace tool, a built-in web_search tool, reasoning.summary, include, store:
    false, prompt_cache_key, client_metadata."""
    body = {
        "model": TEST_MODEL,
        "stream": True,
        "input": [
            _message("developer", "You are Codex."),
            _message("user", "<environment_context>cwd</environment_context>"),
            _message("user", "Reply with the word PONG"),
        ],
        "tools": [
            {**WEATHER, "strict": False},
            {
                "type": "namespace",
                "name": "multi_agent_v1",
                "description": "agents",
                "tools": [{"type": "function", "name": "spawn_agent", "parameters": {}}],
            },
            {"type": "web_search", "external_web_access": False},
        ],
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "reasoning": {"summary": "auto"},
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "session-1",
        "client_metadata": {"window": "1"},
    }
    headers = {"Authorization": f"Bearer {tenant.key}", "Accept": "text/event-stream"}
    reply = httpx.post(f"{gateway.api_url}/responses", json=body, headers=headers, timeout=10)
    assert reply.status_code == 200, reply.text
    events = [orjson.loads(line[6:]) for line in reply.text.splitlines() if line[:6] == "data: "]
    assert events[-1]["type"] == "response.completed"
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert done[-1]["content"][0]["text"].startswith("lorem")
    sent = emulator.log()[0]
    assert "tools" in sent["request_body_keys"]


def _message(role: str, text: str) -> dict:
    return {
        "type": "message",
        "id": f"msg_{role}",
        "role": role,
        "content": [{"type": "input_text", "text": text}],
    }


def test_no_stored_response_to_retrieve(gateway, tenant):
    headers = {"Authorization": f"Bearer {tenant.key}"}
    reply = httpx.get(f"{gateway.api_url}/responses/gen-123", headers=headers)
    assert reply.status_code == 404 and reply.json()["error"]["message"]
    wrong_method = httpx.get(f"{gateway.base_url}/v1/responses", headers=headers)
    assert wrong_method.status_code == 405 and wrong_method.headers["allow"] == "POST"


def test_the_v1_path_serves_responses_too(gateway, tenant):
    """Issue 45: ``/api/v1/responses`` and its ``/v1`` alias (what a client configured
    with the bare host plus ``/v1`` calls)."""
    headers = {"Authorization": f"Bearer {tenant.key}"}
    body = {"model": TEST_MODEL, "input": "Say hello.", "store": False}
    reply = httpx.post(f"{gateway.base_url}/v1/responses", json=body, headers=headers)
    assert reply.status_code == 200, reply.text
    response = reply.json()
    assert (response["object"], response["status"]) == ("response", "completed")
    assert wait_finished(response["id"]).status == "success"
