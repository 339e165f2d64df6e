"""Prepaid credits through the live gateway (issue 42): the balance is one more budget
of the quota store of the run (Redis with REDIS_URL, else process memory), so
concurrent streams can never overdraw it; 402 when it cannot cover a request;
GET /api/v1/credits in OpenRouter's shape."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import httpx
import pytest

from billing.models import Activity, Organisation
from billing.services import credit_entry_create, organisation_set_prepaid

from ..support import TEST_MODEL, wait_background_idle, wait_finished_rows

pytestmark = pytest.mark.django_db(transaction=True)
HI = [{"role": "user", "content": "Say hello."}]


def _headers(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _post(gateway, key: str, **body) -> httpx.Response:
    body = {"model": TEST_MODEL, "messages": HI, **body}
    return httpx.post(
        f"{gateway.api_url}/chat/completions", json=body, headers=_headers(key), timeout=30
    )


def _stream(gateway, key: str, n: int) -> int:
    """One streamed call of up to 5,000 tokens; every fourth is dropped after its first
    chunk (a cancelled call, billed what it delivered). Returns the HTTP status."""
    body = {"model": TEST_MODEL, "messages": HI, "stream": True, "max_tokens": 5000}
    url = f"{gateway.api_url}/chat/completions"
    with httpx.stream("POST", url, json=body, headers=_headers(key), timeout=30) as reply:
        for i, _ in enumerate(reply.iter_raw()):
            if n % 4 == 0 and i == 1:
                break
        return reply.status_code


def _credits(gateway, key: str) -> dict:
    reply = httpx.get(f"{gateway.api_url}/credits", headers=_headers(key), timeout=10)
    assert reply.status_code == 200, reply.text
    return reply.json()["data"]


def _prepaid(tenant, credits: str) -> None:
    organisation_set_prepaid(organisation=tenant.organisation, prepaid=True)
    if Decimal(credits):
        credit_entry_create(organisation=tenant.organisation, amount_usd=Decimal(credits))


def test_twenty_concurrent_streams_never_take_the_balance_below_zero(gateway, tenant, emulator):
    _prepaid(tenant, "0.01")
    for slug in ("alpha", "bravo", "charlie"):  # 5,000 tokens: ~$0.002 at alpha
        emulator.control(slug, default_output_tokens=5000, output_tokens_per_s=50_000)
    with ThreadPoolExecutor(20) as pool:
        statuses = list(pool.map(lambda n: _stream(gateway, tenant.key, n), range(20)))
    assert set(statuses) <= {200, 402}, statuses
    assert statuses.count(200) >= 1 and statuses.count(402) >= 1, statuses
    rows = wait_finished_rows(statuses.count(200))
    wait_background_idle()
    spent = sum((r.cost_usd for r in rows), Decimal(0))
    assert Decimal(0) < spent <= Decimal("0.01"), spent
    data = _credits(gateway, tenant.key)
    assert Decimal(data["exact"]["total_usage"]) == spent
    assert Decimal(data["exact"]["balance"]) == Decimal("0.01") - spent >= 0
    # Every reservation was settled: what is left can still be used.
    from asgiref.sync import async_to_sync

    from billing import limits
    from billing.auth import _load

    budgets = async_to_sync(limits.spent_now)(_load(tenant.api_key.prefix))
    ((budget, store_spent, reserved),) = budgets
    assert budget.period == "credit" and reserved == 0
    assert spent <= store_spent <= spent + Decimal("0.000000001") * 20


def test_a_balance_that_cannot_cover_the_request_is_a_402(gateway, tenant):
    _prepaid(tenant, "0")
    reply = _post(gateway, tenant.key, max_tokens=100)
    assert reply.status_code == 402
    error = reply.json()["error"]
    assert error["type"] == "insufficient_quota" and error["code"] == "insufficient_quota"
    assert error["message"].startswith("Insufficient credits: the organisation's prepaid")
    assert "balance is $0.00" in error["message"]
    assert not Activity.unscoped_objects.exists()  # nothing reached a provider
    credit_entry_create(organisation=tenant.organisation, amount_usd=Decimal("1"))
    assert _post(gateway, tenant.key, max_tokens=100).status_code == 200  # at once
    wait_finished_rows(1)


def test_post_paid_organisations_keep_working_without_credits(gateway, tenant):
    assert not Organisation.objects.get(id=tenant.organisation.id).prepaid
    assert _post(gateway, tenant.key, max_tokens=50).status_code == 200
    (row,) = wait_finished_rows(1)
    wait_background_idle()
    data = _credits(gateway, tenant.key)
    # Post-paid with no limit: credits are the usage (what is left to spend: unlimited,
    # ``limit_remaining: null``), as the openrouter reads document (docs/api.md).
    assert data["prepaid"] is False and data["limit_remaining"] is None
    assert data["total_credits"] == data["total_usage"] == float(row.cost_usd) > 0


def test_credits_is_openrouter_shaped_and_needs_a_key(gateway, tenant):
    _prepaid(tenant, "12.5")
    credit_entry_create(
        organisation=tenant.organisation, amount_usd=Decimal("-2.5"), kind="adjustment"
    )
    data = _credits(gateway, tenant.key)
    assert data["total_credits"] == 10.0 and data["total_usage"] == 0.0
    assert data["exact"] == {"total_credits": "10", "total_usage": "0", "balance": "10"}
    assert httpx.get(f"{gateway.api_url}/credits", timeout=10).status_code == 401
