"""Change propagation: a revocation, a limit and a catalog edit made through one gateway
process are enforced by another within 1 s, though their caches would hold 60 s.

Two real uvicorn servers on free ports, sharing the test database and Redis (DB 13)."""

from __future__ import annotations

import os
from contextlib import closing

import httpx
import pytest
from django.conf import settings

from common.config import set_knob
from routing.config import live_config

from ..support import SubprocessGateway
from .helpers import chat, dashboard_post, dashboard_session, redis_available, status_within

REDIS_URL = os.environ.get("OPS_TEST_REDIS_URL", "redis://127.0.0.1:6379/13")
LONG_TTLS = {
    "UBERLLM_API_KEY_CACHE_TTL_S": "60",
    "UBERLLM_CATALOG_CACHE_TTL_S": "60",
}

pytestmark = pytest.mark.skipif(not redis_available(REDIS_URL), reason=f"no Redis at {REDIS_URL}")


def wait_subscribed(base_url: str) -> None:
    import time

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        checks = httpx.get(f"{base_url}/readyz").json()["checks"]
        if checks["events"]["detail"] == "subscribed":
            return
        time.sleep(0.05)
    raise AssertionError("the event listener did not subscribe")


@pytest.fixture
def two_gateways(market, tenant):
    """Base URLs of two gateway processes with 60 s caches and the event listener."""
    set_knob("SHARED_KEY_PREFIX", f"ops-{live_config().shared_key_prefix}")
    env = {"REDIS_URL": REDIS_URL, **LONG_TTLS}
    first, second = SubprocessGateway(env=env), SubprocessGateway(env=env)
    try:
        urls = []
        for gateway in (first.start(), second.start()):
            urls.append(f"http://127.0.0.1:{gateway.port}")
            wait_subscribed(urls[-1])
        yield urls
    finally:
        first.stop()
        second.stop()


def test_revocation_through_one_gateway_is_enforced_by_the_other_within_1s(two_gateways, tenant):
    first, second = two_gateways
    assert chat(second, tenant.key).status_code == 200  # the second caches the key for 60 s
    with closing(dashboard_session(first, tenant.user.username)) as session:
        dashboard_post(session, f"/keys/{tenant.api_key.id}/revoke/")
    assert status_within(second, tenant.key, 401) == 401


def test_a_monthly_limit_set_through_one_gateway_is_enforced_by_the_other_within_1s(
    two_gateways, tenant
):
    first, second = two_gateways
    assert chat(second, tenant.key).status_code == 200  # key and spend cached for 60 s
    with closing(dashboard_session(first, tenant.user.username)) as session:
        dashboard_post(session, f"/keys/{tenant.api_key.id}/limit/", {"monthly_limit_usd": "0"})
    assert status_within(second, tenant.key, 402) == 402


def test_a_catalog_edit_reaches_every_gateway_within_1s(two_gateways, tenant, market):
    first, second = two_gateways
    assert chat(first, tenant.key).status_code == 200
    assert chat(second, tenant.key).status_code == 200
    configured = settings.REDIS_URL
    settings.REDIS_URL = REDIS_URL  # this process publishes like an admin's would
    try:
        for endpoint in market.values():  # the admin disables the model's every endpoint
            endpoint.enabled = False
            endpoint.save()
    finally:
        settings.REDIS_URL = configured
    for gateway in (first, second):
        assert status_within(gateway, tenant.key, 404) == 404
