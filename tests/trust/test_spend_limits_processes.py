"""Hard limits and rate limits are shared by every gateway process: two real uvicorn
processes on the same database and Redis (db 11 unless SPEND_TEST_REDIS_URL says
otherwise), calls spread over both at once."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pytest

from billing.models import Activity, ApiKey

from ..ops.helpers import chat, redis_available
from ..support import SubprocessGateway, wait_finished_rows

REDIS_URL = os.environ.get("SPEND_TEST_REDIS_URL", "redis://127.0.0.1:6379/11")
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not redis_available(REDIS_URL), reason=f"no Redis at {REDIS_URL}"),
]


@pytest.fixture
def two_gateways(market, tenant):
    env = {"REDIS_URL": os.environ.get("SPEND_TEST_SUBPROCESS_REDIS_URL", REDIS_URL)}
    first, second = SubprocessGateway(env=env), SubprocessGateway(env=env)
    try:
        yield [f"http://127.0.0.1:{g.start().port}" for g in (first, second)]
    finally:
        first.stop()
        second.stop()


@pytest.fixture
def uniform_prices(market):
    """Every endpoint at alpha's prices (before the processes load the catalog): a call
    then reserves about what it costs."""
    from providers.models import Endpoint

    Endpoint.objects.update(price_input=Decimal("0.10"), price_output=Decimal("0.40"))


def test_a_key_limit_holds_across_two_processes(uniform_prices, two_gateways, tenant, emulator):
    limit = Decimal("0.01")
    ApiKey.unscoped_objects.filter(id=tenant.api_key.id).update(monthly_limit_usd=limit)
    for slug in ("alpha", "bravo", "charlie"):  # $0.002 a call at alpha
        emulator.control(slug, default_output_tokens=5000, output_tokens_per_s=200_000)
    with ThreadPoolExecutor(16) as pool:
        replies = list(
            pool.map(lambda i: chat(two_gateways[i % 2], tenant.key, max_tokens=5000), range(16))
        )
    statuses = [r.status_code for r in replies]
    assert set(statuses) <= {200, 402} and statuses.count(402) >= 1, statuses
    rows = wait_finished_rows(statuses.count(200))
    assert sum(r.cost_usd for r in rows) <= limit
    assert statuses.count(200) <= 4  # one budget for both processes, not one each


def test_requests_per_minute_are_counted_across_processes(two_gateways, tenant):
    ApiKey.unscoped_objects.filter(id=tenant.api_key.id).update(rate_limit_rpm=3)
    left = 60 - time.time() % 60
    if left < 4:
        time.sleep(left + 0.05)
    statuses = [chat(two_gateways[i % 2], tenant.key).status_code for i in range(4)]
    assert statuses == [200, 200, 200, 429]
    assert Activity.unscoped_objects.count() <= 3
