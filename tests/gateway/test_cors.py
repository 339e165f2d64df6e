"""CORS on the API (common/cors.py) over real HTTP: preflights on every API path,
Access-Control-Allow-Origin on JSON, SSE and error answers, nothing on the dashboard or
for requests without Origin, and the origins setting (a list echoes the origin and
varies on it; an empty list turns CORS off). The browser side: tests/browser/
test_api_cors_browser.py."""

import httpx
import pytest
from django.conf import settings

from ..support import TEST_MODEL

pytestmark = pytest.mark.django_db(transaction=True)
ORIGIN = "https://app.example"
PREFLIGHT = {
    "Origin": ORIGIN,
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization,content-type,x-stainless-os",
}
CHAT = {"model": TEST_MODEL, "messages": [{"role": "user", "content": "Hi"}]}


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/chat/completions",
        "/v1/chat/completions",
        "/api/v1/responses",
        "/v1/responses",
        "/api/v1/messages",
        "/api/v1/models",
        "/v1/models/test/model-a/endpoints",
        "/api/v1/generation",
        "/api/v1/no-such-path",
    ],
)
def test_preflight_answered_on_every_api_path(gateway, path):
    reply = httpx.options(f"{gateway.base_url}{path}", headers=PREFLIGHT)
    assert reply.status_code == 204 and reply.content == b""
    assert reply.headers["access-control-allow-origin"] == "*"
    assert reply.headers["access-control-allow-methods"] == "GET, POST, OPTIONS"
    assert (
        reply.headers["access-control-allow-headers"] == PREFLIGHT["Access-Control-Request-Headers"]
    )
    assert reply.headers["access-control-max-age"] == "7200"
    assert "access-control-allow-credentials" not in reply.headers


def test_options_without_origin_is_unchanged(gateway):
    reply = httpx.options(f"{gateway.api_url}/chat/completions")
    assert reply.status_code == 405 and reply.json()["error"]["message"] == "Use POST."
    assert "access-control-allow-origin" not in reply.headers


def _post(gateway, key: str, body: dict, origin: str | None = ORIGIN) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"}
    if origin:
        headers["Origin"] = origin
    return httpx.post(f"{gateway.api_url}/chat/completions", json=body, headers=headers)


def test_answers_carry_the_origin_header(gateway, tenant, emulator):
    whole = _post(gateway, tenant.key, CHAT)
    streamed = _post(gateway, tenant.key, {**CHAT, "stream": True})
    invalid = _post(gateway, tenant.key, {**CHAT, "temperature": 9})
    unauthorised = _post(gateway, "ullm_wrong", CHAT)
    statuses = [r.status_code for r in (whole, streamed, invalid, unauthorised)]
    assert statuses == [200, 200, 400, 401]
    assert streamed.headers["content-type"] == "text/event-stream"
    for reply in (whole, streamed, invalid, unauthorised):
        assert reply.headers["access-control-allow-origin"] == "*"
        assert reply.headers["access-control-expose-headers"] == "x-generation-id, retry-after"
    models = httpx.get(f"{gateway.base_url}/v1/models", headers={"Origin": ORIGIN})
    assert models.headers["access-control-allow-origin"] == "*"


def test_no_header_without_origin_nor_on_the_dashboard(gateway, tenant, emulator):
    assert "access-control-allow-origin" not in _post(gateway, tenant.key, CHAT, None).headers
    login = httpx.get(f"{gateway.base_url}/login/", headers={"Origin": ORIGIN})
    assert login.status_code == 200 and "access-control-allow-origin" not in login.headers
    preflight = httpx.options(f"{gateway.base_url}/login/", headers=PREFLIGHT)
    assert "access-control-allow-origin" not in preflight.headers


def test_an_origins_list_echoes_the_allowed_one(gateway, tenant, emulator, monkeypatch):
    monkeypatch.setitem(settings.UBERLLM, "CORS_ALLOWED_ORIGINS", [ORIGIN, "http://x.test"])
    allowed = httpx.options(f"{gateway.api_url}/responses", headers=PREFLIGHT)
    assert allowed.status_code == 204
    assert allowed.headers["access-control-allow-origin"] == ORIGIN
    assert allowed.headers["vary"] == "Origin"
    other = {**PREFLIGHT, "Origin": "https://evil.example"}
    refused = httpx.options(f"{gateway.api_url}/chat/completions", headers=other)
    assert refused.status_code == 405 and "access-control-allow-origin" not in refused.headers
    reply = _post(gateway, tenant.key, CHAT)
    assert reply.headers["access-control-allow-origin"] == ORIGIN
    assert "Origin" in reply.headers["vary"]
    assert (
        "access-control-allow-origin"
        not in _post(gateway, tenant.key, CHAT, "https://evil.example").headers
    )


def test_an_empty_list_turns_cors_off(gateway, monkeypatch):
    monkeypatch.setitem(settings.UBERLLM, "CORS_ALLOWED_ORIGINS", [])
    reply = httpx.options(f"{gateway.api_url}/chat/completions", headers=PREFLIGHT)
    assert reply.status_code == 405 and "access-control-allow-origin" not in reply.headers
