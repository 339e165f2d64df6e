"""Per-key monthly spend limits (billing.limits), on real ledger rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from asgiref.sync import async_to_sync
from django.utils import timezone

from billing import limits
from billing.auth import KeyPrincipal, _load, forget_cached_key
from billing.models import Activity, ApiKey
from billing.selectors import month_start
from billing.services import api_key_create

from ..support import TEST_MODEL, make_tenant

# The limit check reads the ledger from the thread pool (another connection), so the
# rows must be committed.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fresh_spend_cache():
    limits.forget_key_spend()
    yield
    limits.forget_key_spend()


def _spend(tenant, request_id: str, cost: str, *, api_key=None, created_at=None) -> None:
    Activity.objects.create(
        request_id=request_id, organisation=tenant.organisation,
        api_key=api_key or tenant.api_key, model_slug="m/x", status="success",
        cost_usd=Decimal(cost), created_at=created_at or timezone.now(),
    )  # fmt: skip


def _principal(api_key: ApiKey, limit: str | None) -> KeyPrincipal:
    ApiKey.objects.filter(id=api_key.id).update(
        monthly_limit_usd=None if limit is None else Decimal(limit)
    )
    return _load(api_key.prefix)


check = async_to_sync(limits.key_over_monthly_limit)


def test_no_limit_never_blocks():
    tenant = make_tenant("NoLimit")
    _spend(tenant, "gen-1", "1000")
    assert check(_principal(tenant.api_key, None)) is None


def test_blocks_when_this_months_spend_reaches_the_limit():
    tenant = make_tenant("Limited")
    principal = _principal(tenant.api_key, "1.00")
    _spend(tenant, "gen-1", "0.60")
    assert check(principal) is None
    _spend(tenant, "gen-2", "0.40")  # exactly the limit: blocked
    limits.forget_key_spend(tenant.api_key.id)
    message = check(principal)
    assert message is not None
    assert "monthly spend limit of $1.00" in message and "spent $1.00" in message


def test_only_this_calendar_month_and_this_key_count():
    tenant = make_tenant("Months")
    other_key, _ = api_key_create(organisation=tenant.organisation, name="other")
    start = month_start()
    _spend(tenant, "gen-last-month", "50", created_at=start - timedelta(seconds=1))
    _spend(tenant, "gen-other-key", "50", api_key=other_key)
    _spend(tenant, "gen-first-second", "0.30", created_at=start)
    principal = _principal(tenant.api_key, "0.50")
    assert check(principal) is None
    _spend(tenant, "gen-now", "0.20")
    limits.forget_key_spend()
    assert check(principal) is not None
    # Another organisation's rows never count, even on a key id it cannot own.
    other = make_tenant("Other")
    _spend(other, "gen-other-org", "99")
    assert check(_principal(other.api_key, "100")) is None


def test_spend_is_cached_for_a_few_seconds():
    tenant = make_tenant("Cached")
    principal = _principal(tenant.api_key, "1")
    assert check(principal) is None  # spend 0 cached
    _spend(tenant, "gen-big", "5")
    assert check(principal) is None  # still the cached figure: no query per request
    _, month, spend = limits._cache[tenant.api_key.id]
    limits._cache[tenant.api_key.id] = (0.0, month, spend)  # let the entry expire
    assert check(principal) is not None


def test_zero_limit_blocks_every_call():
    tenant = make_tenant("Zero")
    assert check(_principal(tenant.api_key, "0")) is not None


def test_month_start_is_utc():
    moment = datetime(2026, 3, 1, 0, 30, tzinfo=UTC).astimezone(
        timezone.get_fixed_timezone(-120)
    )  # still February in UTC-2
    assert month_start(moment) == datetime(2026, 3, 1, tzinfo=UTC)


def test_gateway_answers_402_when_the_key_is_over_its_limit(client, tenant):
    import openai

    ApiKey.objects.filter(id=tenant.api_key.id).update(monthly_limit_usd=Decimal("0.01"))
    forget_cached_key(tenant.api_key.prefix)
    _spend(tenant, "gen-spent", "0.02")
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(
            model=TEST_MODEL, messages=[{"role": "user", "content": "hi"}]
        )
    assert caught.value.status_code == 402
    error = caught.value.response.json()["error"]
    assert "monthly spend limit" in error["message"]
    assert Activity.objects.filter(organisation=tenant.organisation).count() == 1  # no call made
