"""Bad input gets an OpenAI-shaped error with the right status: no 500, no upstream call."""

import httpx
import pytest

from billing.models import Activity
from billing.services import api_key_revoke

from ..support import TEST_MODEL

pytestmark = pytest.mark.django_db(transaction=True)
OK_MESSAGES = [{"role": "user", "content": "hi"}]


def _post(gateway, key, content: bytes | None = None, json=None, headers=None):
    headers = {"Authorization": f"Bearer {key}", **(headers or {})}
    return httpx.post(
        f"{gateway.api_url}/chat/completions",
        content=content,
        json=json,
        headers=headers,
        timeout=30,
    )


def _assert_error(response: httpx.Response, status: int, words: str) -> None:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert {"message", "type", "code", "param"} <= error.keys()
    assert words.lower() in error["message"].lower()


CASES = [
    ("malformed json", b'{"model": "x", "messages": [', 400, "not valid JSON"),
    ("not an object", b"[1, 2]", 400, "JSON object"),
    ("model wrong type", {"model": 5, "messages": OK_MESSAGES}, 400, "'model'"),
    ("empty messages", {"model": TEST_MODEL, "messages": []}, 400, "non-empty"),
    ("messages not list", {"model": TEST_MODEL, "messages": "hi"}, 400, "non-empty"),
    ("bad role", {"model": TEST_MODEL, "messages": [{"role": "x", "content": "a"}]}, 400, "role"),
    (
        "negative max_tokens",
        {"model": TEST_MODEL, "messages": OK_MESSAGES, "max_tokens": -1},
        400,
        "max_tokens",
    ),
    (
        "string max_tokens",
        {"model": TEST_MODEL, "messages": OK_MESSAGES, "max_tokens": "10"},
        400,
        "integer",
    ),
    # Digits beyond 64 bits were refused as "must be an integer" (found by fuzzing).
    (
        "huge max_tokens",
        b'{"model": "%s", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1%s}'
        % (TEST_MODEL.encode(), b"0" * 30),
        400,
        "too large",
    ),
    (
        "stream not bool",
        {"model": TEST_MODEL, "messages": OK_MESSAGES, "stream": "yes"},
        400,
        "stream",
    ),
    ("unknown model", {"model": "nobody/none", "messages": OK_MESSAGES}, 404, "unknown model"),
    ("unknown suffix", {"model": TEST_MODEL + ":turbo", "messages": OK_MESSAGES}, 400, "suffix"),
    (
        "provider not object",
        {"model": TEST_MODEL, "messages": OK_MESSAGES, "provider": []},
        400,
        "provider",
    ),
    (
        "unknown provider slug",
        {"model": TEST_MODEL, "messages": OK_MESSAGES, "provider": {"only": ["nobody"]}},
        400,
        "nobody",
    ),
    (
        "bad sort",
        {"model": TEST_MODEL, "messages": OK_MESSAGES, "provider": {"sort": "vibes"}},
        400,
        "sort",
    ),
]


@pytest.mark.parametrize(("name", "body", "status", "words"), CASES, ids=[c[0] for c in CASES])
def test_bad_request_bodies(gateway, tenant, emulator, name, body, status, words):
    if isinstance(body, bytes):
        response = _post(gateway, tenant.key, content=body)
    else:
        response = _post(gateway, tenant.key, json=body)
    _assert_error(response, status, words)
    assert emulator.log() == []
    assert not Activity.unscoped_objects.exists()


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer nope", "Bearer ullm_AAAAAAAA_" + "x" * 40, "Basic abc"],
    ids=["missing", "garbage", "unknown prefix", "wrong scheme"],
)
def test_bad_keys_get_401(gateway, emulator, market, authorization):
    headers = {"Authorization": authorization} if authorization else {}
    response = httpx.post(
        f"{gateway.api_url}/chat/completions",
        headers=headers,
        timeout=10,
        json={"model": TEST_MODEL, "messages": OK_MESSAGES},
    )
    _assert_error(response, 401, "API key")
    assert emulator.log() == []


@pytest.mark.parametrize("scheme", ["bearer", "BEARER"])
def test_the_auth_scheme_is_case_insensitive(gateway, tenant, emulator, scheme):
    """RFC 9110 11.1: ``bearer <key>`` was a 401 (found by fuzzing)."""
    response = httpx.post(
        f"{gateway.api_url}/chat/completions",
        headers={"Authorization": f"{scheme} {tenant.key}"},
        json={"model": TEST_MODEL, "messages": OK_MESSAGES},
        timeout=10,
    )
    assert response.status_code == 200


def test_wrong_secret_with_real_prefix_gets_401(gateway, tenant, emulator):
    forged = tenant.key[:-4] + ("AAAA" if not tenant.key.endswith("AAAA") else "BBBB")
    response = _post(gateway, forged, json={"model": TEST_MODEL, "messages": OK_MESSAGES})
    _assert_error(response, 401, "API key")


def test_revoked_key_gets_401(gateway, tenant, emulator):
    ok = _post(gateway, tenant.key, json={"model": TEST_MODEL, "messages": OK_MESSAGES})
    assert ok.status_code == 200
    api_key_revoke(api_key=tenant.api_key)
    response = _post(gateway, tenant.key, json={"model": TEST_MODEL, "messages": OK_MESSAGES})
    _assert_error(response, 401, "revoked")
    assert len(emulator.log()) == 1


def test_20_mb_body_gets_413(gateway, tenant, emulator):
    big = b'{"model": "%s", "messages": [{"role": "user", "content": "' % TEST_MODEL.encode()
    big += b"a" * (20 * 1024 * 1024) + b'"}]}'
    _assert_error(_post(gateway, tenant.key, content=big), 413, "larger than")
    assert emulator.log() == []


def test_get_on_chat_endpoint_is_405(gateway, tenant):
    response = httpx.get(
        f"{gateway.api_url}/chat/completions", headers={"Authorization": f"Bearer {tenant.key}"}
    )
    _assert_error(response, 405, "POST")
