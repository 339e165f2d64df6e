"""Issue 44, item 1: blame the request, not the provider.

A failure the request caused (JSON too deep to pass on, a body the gateway cannot encode
for the upstream, an upstream 400/413/422) is the client's error, answered in its
protocol's shape, and teaches routing nothing: no endpoint is marked for it, so no key
can push another organisation's traffic off the best providers. Live: the real gateway,
the emulator on loopback, the real database.
"""

from __future__ import annotations

import time

import httpx
import orjson
import pytest
from django.conf import settings
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from routing.memory import memory

from ..support import TEST_MODEL, make_tenant, wait_learnt

pytestmark = pytest.mark.django_db(transaction=True)
MESSAGES = [{"role": "user", "content": "hi"}]


def nested(depth: int) -> bytes:
    """``depth`` arrays, one inside the other (orjson cannot encode it past 254)."""
    return b"[" * depth + b"]" * depth


def chat_body(field: str, raw_value: bytes) -> bytes:
    """An ordinary chat body with ``field`` set to the raw JSON ``raw_value``."""
    head = orjson.dumps({"model": TEST_MODEL, "messages": MESSAGES})
    return head[:-1] + b',"' + field.encode() + b'":' + raw_value + b"}"


def messages_body(field: str, raw_value: bytes) -> bytes:
    head = orjson.dumps({"model": TEST_MODEL, "max_tokens": 5, "messages": MESSAGES})
    return head[:-1] + b',"' + field.encode() + b'":' + raw_value + b"}"


ORDINARY = orjson.dumps({"model": TEST_MODEL, "messages": MESSAGES})


def post(gateway, path: str, headers: dict, content: bytes) -> httpx.Response:
    headers = {**headers, "Content-Type": "application/json"}
    return httpx.post(f"{gateway.api_url}{path}", content=content, headers=headers, timeout=30)


def post_chat(gateway, key: str, content: bytes) -> httpx.Response:
    return post(gateway, "/chat/completions", {"Authorization": f"Bearer {key}"}, content)


def post_messages(gateway, key: str, content: bytes, path: str = "/messages") -> httpx.Response:
    return post(gateway, path, {"x-api-key": key}, content)


def health() -> tuple:
    """What the process learnt about endpoints' health: marks, strikes, failure tallies."""
    knowledge = memory.knowledge
    tallies = knowledge.health._tallies
    return (
        *knowledge.marks.state(),
        {eid: (t.streak, t.failed > 0) for eid, t in tallies.items()},
    )


def assert_no_mark() -> None:
    unusable, strikes, tallies = health()
    assert unusable == {} and strikes == {}
    assert all(streak == 0 and not failed for streak, failed in tallies.values())


def served_by(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    return response.json()["provider"]


# --- JSON nested too deep ------------------------------------------------------------------
@pytest.mark.parametrize("depth", [200, 300, 1023])
def test_deep_nesting_in_a_passed_through_field_is_a_400_naming_it(
    gateway, tenant, emulator, depth
):
    """200 levels went upstream; 255-1024 failed every attempt as a 502 and marked every
    endpoint (orjson cannot encode them for the provider). Now a 400 naming the field,
    before any upstream call."""
    response = post_chat(gateway, tenant.key, chat_body("top_k", nested(depth)))
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == "top_k"
    assert "top_k" in error["message"] and "128" in error["message"]
    assert emulator.log() == []
    assert_no_mark()


def test_nesting_past_what_the_parser_reads_is_the_same_400(gateway, tenant, emulator):
    response = post_chat(gateway, tenant.key, chat_body("top_k", nested(5000)))
    assert response.status_code == 400, response.text
    assert "nested too deeply" in response.json()["error"]["message"]
    assert emulator.log() == []


def test_deep_nesting_inside_a_message_names_the_message(gateway, tenant, emulator):
    message = b'{"role":"user","content":"hi","extra":{"a":' + nested(300) + b"}}"
    body = b'{"model":"%s","messages":[%s]}' % (TEST_MODEL.encode(), message)
    response = post_chat(gateway, tenant.key, body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == "messages[0].extra.a"
    assert emulator.log() == []


def test_deep_nesting_on_the_messages_api_is_anthropics_400(gateway, tenant, emulator):
    for path in ("/messages", "/messages/count_tokens"):
        response = post_messages(gateway, tenant.key, messages_body("metadata", nested(300)), path)
        assert response.status_code == 400, response.text
        body = response.json()
        assert body["type"] == "error"
        assert body["error"]["type"] == "invalid_request_error"
        assert "'metadata'" in body["error"]["message"]
    assert emulator.log() == []
    assert_no_mark()


def test_nesting_at_the_limit_is_served(gateway, tenant, emulator):
    # the body is level 1, ``top_k`` level 2: 127 arrays reach 128 levels
    response = post_chat(gateway, tenant.key, chat_body("top_k", nested(127)))
    assert served_by(response) == "alpha"
    response = post_chat(gateway, tenant.key, chat_body("top_k", nested(128)))
    assert response.status_code == 400 and response.json()["error"]["param"] == "top_k"


def _nest(levels: int) -> list:
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("limit", "body", "param"),
    [
        (128, {"top_k": _nest(127)}, None),
        (128, {"top_k": _nest(128)}, "top_k"),
        (128, {"messages": [{"a": 1}, {"x": {"a": _nest(127)}}]}, "messages[1].x.a"),
        (128, {"a": {"b": {"c": {"d": {"e": _nest(200)}}}}}, "a.b.c.d"),
        (2, {"a": [1]}, None),
        (2, {"a": [[1]]}, "a"),
        (253, {"a": _nest(252)}, None),
        (253, {"a": _nest(253)}, "a"),
    ],
)
def test_check_depth_bounds_and_names(limit, body, param):
    from routing.errors import GatewayError
    from routing.validate import check_depth

    if param is None:
        check_depth(body, limit)
        return
    with pytest.raises(GatewayError) as raised:
        check_depth(body, limit)
    assert (raised.value.status, raised.value.param) == (400, param)


# --- a body the gateway cannot encode for the upstream --------------------------------------
def test_a_body_the_gateway_cannot_encode_is_a_400_before_any_upstream_call(
    gateway, tenant, emulator, monkeypatch
):
    """With the depth limit raised past what the upstream encoder takes (an operator's
    mistake, or a gateway translation that adds levels), the encode error is still the
    request's: a 400 before any upstream call, no attempt counted, no endpoint marked."""
    monkeypatch.setitem(settings.UBERLLM, "MAX_JSON_DEPTH", 2000)
    response = post_chat(gateway, tenant.key, chat_body("top_k", nested(300)))
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert "cannot be encoded" in error["message"]
    request_id = response.headers["x-generation-id"]
    response = post_messages(gateway, tenant.key, messages_body("metadata", nested(300)))
    assert response.status_code == 400, response.text
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert emulator.log() == []
    wait_learnt()
    assert_no_mark()
    from billing.models import Activity

    row = Activity.unscoped_objects.get(request_id=request_id)
    assert (row.status, row.http_status, row.cost_usd) == ("error", 400, 0)
    assert row.attempts.count() == 0  # no attempt counted against any endpoint


# --- the upstream refuses what the request asked -----------------------------------------
@pytest.mark.parametrize("status", [400, 413, 422])
def test_an_upstream_4xx_the_request_caused_is_the_clients_error(gateway, tenant, emulator, status):
    for slug in ("alpha", "bravo", "charlie"):
        emulator.control(slug, status_override=status)
    response = post_chat(gateway, tenant.key, ORDINARY)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert f"status_override {status}" in error["message"]  # the provider's own words
    assert error["type"] == "invalid_request_error"
    messages = post_messages(gateway, tenant.key, messages_body("top_k", b"5"))
    assert messages.status_code == status, messages.text
    assert messages.json()["type"] == "error"
    wait_learnt()
    assert_no_mark()
    emulator.reset(profiles=True)
    ordinary = post_chat(gateway, tenant.key, ORDINARY)
    assert served_by(ordinary) == "alpha"


# --- done-when of the issue -------------------------------------------------------------
def test_a_hundred_nested_requests_leave_another_organisations_routing_as_it_was(
    gateway, tenant, emulator
):
    other = make_tenant("Other")
    ordinary = ORDINARY
    before = served_by(post_chat(gateway, other.key, ordinary))
    wait_learnt()
    learnt = health()
    emulator.reset()
    hostile = chat_body("top_k", nested(300))
    with httpx.Client(timeout=30) as http:
        for _ in range(100):
            headers = {"Authorization": f"Bearer {tenant.key}"}
            url = f"{gateway.api_url}/chat/completions"
            response = http.post(url, content=hostile, headers=headers)
            assert response.status_code == 400
            assert response.json()["error"]["param"] == "top_k"
    assert emulator.log() == []  # no upstream call
    wait_learnt()
    assert health() == learnt
    assert served_by(post_chat(gateway, other.key, ordinary)) == before == "alpha"


# --- the property: nothing tenant A sends changes tenant B's routing ------------------------
FIELDS = st.sampled_from(["top_k", "metadata", "logit_bias", "tools_extra", "seed"])
HOSTILE = st.one_of(
    st.tuples(st.just("nested"), FIELDS, st.integers(128, 1024), st.booleans()),
    st.tuples(st.just("upstream"), st.sampled_from([400, 413, 422]), st.just(0), st.booleans()),
)


def _send_hostile(gateway, key: str, emulator, case: tuple) -> int:
    kind, what, depth, on_messages = case
    if kind == "nested":
        body = (messages_body if on_messages else chat_body)(what, nested(depth))
    else:
        for slug in ("alpha", "bravo", "charlie"):
            emulator.control(slug, status_override=what)
        body = (messages_body if on_messages else chat_body)("top_k", b"5")
    response = (post_messages if on_messages else post_chat)(gateway, key, body)
    emulator.reset(profiles=True)
    return response.status_code


def test_no_request_of_one_tenant_changes_the_routing_of_another(gateway, tenant, emulator):
    other = make_tenant("Other")
    ordinary = ORDINARY
    expected = served_by(post_chat(gateway, other.key, ordinary))

    @hypothesis_settings(
        max_examples=30,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(cases=st.lists(HOSTILE, min_size=1, max_size=3))
    def check(cases: list[tuple]) -> None:
        wait_learnt()
        learnt = health()
        for case in cases:
            status = _send_hostile(gateway, tenant.key, emulator, case)
            assert 400 <= status < 500, (case, status)
        wait_learnt()
        assert health() == learnt, cases
        started = time.monotonic()
        assert served_by(post_chat(gateway, other.key, ordinary)) == expected, cases
        assert time.monotonic() - started < 5

    check()
