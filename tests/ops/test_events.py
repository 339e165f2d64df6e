"""Change propagation: a revocation, a limit and a catalog edit made through one gateway
process are enforced by another within 1 s, though their caches would hold 60 s.

Two real uvicorn servers on free ports, sharing the test database and Redis (DB 13)."""

from __future__ import annotations

import os
import re
import time
from contextlib import closing

import httpx
import pytest
from django.conf import settings

from ..support import TEST_MODEL, SubprocessGateway

REDIS_URL = os.environ.get("OPS_TEST_REDIS_URL", "redis://127.0.0.1:6379/13")
LONG_TTLS = {
    "UBERLLM_API_KEY_CACHE_TTL_S": "60",
    "UBERLLM_KEY_SPEND_CACHE_TTL_S": "60",
    "UBERLLM_CATALOG_CACHE_TTL_S": "60",
}


def redis_available() -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(REDIS_URL, socket_connect_timeout=0.5).ping())
    except redis.RedisError:
        return False


pytestmark = pytest.mark.skipif(not redis_available(), reason=f"no Redis at {REDIS_URL}")


@pytest.fixture
def two_gateways(market, tenant):
    settings.UBERLLM["SHARED_KEY_PREFIX"] = f"ops-{settings.UBERLLM['SHARED_KEY_PREFIX']}"
    env = {"REDIS_URL": REDIS_URL, **LONG_TTLS}
    first, second = SubprocessGateway(env=env), SubprocessGateway(env=env)
    try:
        for gateway in (first.start(), second.start()):
            wait_subscribed(f"http://127.0.0.1:{gateway.port}")
        yield first, second
    finally:
        first.stop()
        second.stop()


def wait_subscribed(base_url: str) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        checks = httpx.get(f"{base_url}/readyz").json()["checks"]
        if checks["events"]["detail"] == "subscribed":
            return
        time.sleep(0.05)
    raise AssertionError("the event listener did not subscribe")


def chat(gateway: SubprocessGateway, key: str) -> int:
    body = {"model": TEST_MODEL, "messages": [{"role": "user", "content": "hi"}]}
    headers = {"Authorization": f"Bearer {key}"}
    return httpx.post(f"{gateway.api_url}/chat/completions", json=body, headers=headers,
                      timeout=10).status_code  # fmt: skip


def status_within_one_second(gateway: SubprocessGateway, key: str, expected: int) -> int:
    """Poll until ``expected`` or 1 s has passed; returns the last status."""
    deadline = time.monotonic() + 1.0
    status = chat(gateway, key)
    while status != expected and time.monotonic() < deadline:
        time.sleep(0.02)
        status = chat(gateway, key)
    return status


def dashboard_session(gateway: SubprocessGateway, username: str) -> httpx.Client:
    """A logged-in dashboard session on ``gateway`` (real login form, CSRF included)."""
    client = httpx.Client(base_url=f"http://127.0.0.1:{gateway.port}", timeout=10)
    page = client.get("/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    form = {"username": username, "password": "pw-123456789", "csrfmiddlewaretoken": token}
    assert client.post("/login/", data=form).status_code == 302
    return client


def dashboard_post(client: httpx.Client, path: str, data: dict | None = None) -> None:
    form = {**(data or {}), "csrfmiddlewaretoken": client.cookies["csrftoken"]}
    response = client.post(path, data=form)
    assert response.status_code in (200, 302), response.text[:500]


def test_revocation_through_one_gateway_is_enforced_by_the_other_within_1s(two_gateways, tenant):
    first, second = two_gateways
    assert chat(second, tenant.key) == 200  # the second caches the key for 60 s
    session = dashboard_session(first, tenant.user.username)
    with closing(session):
        dashboard_post(session, f"/keys/{tenant.api_key.id}/revoke/")
    assert status_within_one_second(second, tenant.key, 401) == 401


def test_a_monthly_limit_set_through_one_gateway_is_enforced_by_the_other_within_1s(
    two_gateways, tenant
):
    first, second = two_gateways
    assert chat(second, tenant.key) == 200  # the key and its spend cached for 60 s
    session = dashboard_session(first, tenant.user.username)
    with closing(session):
        dashboard_post(session, f"/keys/{tenant.api_key.id}/limit/", {"monthly_limit_usd": "0"})
    assert status_within_one_second(second, tenant.key, 402) == 402


def test_a_catalog_edit_reaches_every_gateway_within_1s(two_gateways, tenant, market):
    first, second = two_gateways
    assert chat(first, tenant.key) == 200 and chat(second, tenant.key) == 200
    configured = settings.REDIS_URL
    settings.REDIS_URL = REDIS_URL  # this process publishes like an admin's would
    try:
        for endpoint in market.values():  # the admin disables the model's every endpoint
            endpoint.enabled = False
            endpoint.save()
    finally:
        settings.REDIS_URL = configured
    for gateway in (first, second):
        assert status_within_one_second(gateway, tenant.key, 404) == 404
