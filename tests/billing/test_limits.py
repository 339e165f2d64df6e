"""The quota store (billing.quota) and the budgets of a key (billing.limits): reserve,
settle, expiry of reservations, seeding from the ledger. The in-process store always;
the Redis store too when REDIS_URL is set (the same contract)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.utils import timezone

from billing import limits
from billing.auth import KeyPrincipal, _load
from billing.models import Activity, ApiKey
from billing.quota import Budget, LocalQuota, RateLimits, RedisQuota, Ticket
from billing.services import api_key_create

from ..support import make_tenant

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fresh_store(monkeypatch):
    limits.forget_key_spend()
    monkeypatch.setitem(settings.UBERLLM, "SHARED_KEY_PREFIX", f"ullm-test-limits-{time.time_ns()}")
    yield
    limits.forget_key_spend()


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _budget(name: str, limit_nano: int) -> Budget:
    prefix = settings.UBERLLM["SHARED_KEY_PREFIX"]
    return Budget(
        key=f"{prefix}:spend:{name}",
        scope="key:1",
        period="month",
        period_start=datetime(2026, 11, 1, tzinfo=UTC),
        limit_nano=limit_nano,
        expire_at=int(time.time()) + 3600,
    )


def _ticket(rid: str, budgets, amount: int, rates=None, tokens: int = 0) -> Ticket:
    return Ticket(
        request_id=rid, budgets=tuple(budgets), reserved_nano=amount, rates=rates, tokens=tokens
    )


def stores():
    found = [pytest.param("local", id="local")]
    if settings.REDIS_URL:
        found.append(pytest.param("redis", id="redis"))
    return found


def _store(kind: str, clock=None):
    return LocalQuota(clock or time.time) if kind == "local" else RedisQuota(settings.REDIS_URL)


run = async_to_sync


@pytest.mark.parametrize("kind", stores())
def test_reservations_never_pass_the_limit_and_settle_to_the_real_cost(kind):
    store = _store(kind)
    budget = _budget("a", 1000)
    assert run(store.admit)(_ticket("r1", [budget], 600), {}).kind == "seed"
    assert run(store.admit)(_ticket("r1", [budget], 600), {0: 100}) is None  # 100 spent
    refused = run(store.admit)(_ticket("r2", [budget], 400), {})
    assert (refused.kind, refused.remaining_nano) == ("budget", 300)
    assert run(store.admit)(_ticket("r3", [budget], 300), {}) is None  # exactly fits
    assert run(store.settle)(_ticket("r1", [budget], 600), 50, 0) == [150]
    assert run(store.spent)((budget,)) == [(150, 300)]
    assert run(store.settle)(_ticket("r3", [budget], 300), 0, 0) == [150]  # failed: $0
    assert run(store.spent)((budget,)) == [(150, 0)]


@pytest.mark.parametrize("kind", stores())
def test_a_refusal_by_one_budget_reserves_in_none(kind):
    store = _store(kind)
    roomy, tight = _budget("roomy", 10_000), _budget("tight", 500)
    seeds = {0: 0, 1: 0}
    assert run(store.admit)(_ticket("r1", [roomy, tight], 600), seeds).budget_index == 1
    assert run(store.spent)((roomy, tight)) == [(0, 0), (0, 0)]


def test_an_unsettled_reservation_expires():
    """A process that died mid-call holds its reservation SPEND_RESERVATION_TTL_S at most."""
    clock = Clock()
    store = LocalQuota(clock)
    store.reservation_ttl_s = 900
    budget = _budget("crash", 1000)
    assert run(store.admit)(_ticket("dead", [budget], 1000), {0: 0}) is None
    assert run(store.admit)(_ticket("next", [budget], 1), {}).kind == "budget"
    clock.now += 899
    assert run(store.admit)(_ticket("next", [budget], 1), {}).kind == "budget"
    clock.now += 2
    assert run(store.admit)(_ticket("next", [budget], 1), {}) is None
    # The late settlement still adds the real cost (the money was spent).
    assert run(store.settle)(_ticket("dead", [budget], 1000), 700, 0) == [700]


@pytest.mark.skipif(not settings.REDIS_URL, reason="needs REDIS_URL")
def test_an_unsettled_reservation_expires_in_redis():
    store = RedisQuota(settings.REDIS_URL)
    store.reservation_ttl_s = 0.2
    budget = _budget("crash", 1000)
    assert run(store.admit)(_ticket("dead", [budget], 1000), {0: 0}) is None
    assert run(store.admit)(_ticket("next", [budget], 1), {}).kind == "budget"
    time.sleep(0.3)  # the reservation's deadline (Redis TIME) has passed
    assert run(store.admit)(_ticket("next", [budget], 1), {}) is None


@pytest.mark.parametrize("kind", stores())
def test_concurrent_admissions_share_one_budget(kind):
    """200 admissions at once on one event loop (Redis: concurrent scripts; local: the
    lock): exactly limit / amount get through."""
    store = _store(kind)
    budget = _budget("burst", 10_000)

    async def burst():
        await store.admit(_ticket("seed", [budget], 0), {0: 0})
        return await asyncio.gather(
            *(store.admit(_ticket(f"r{i}", [budget], 300), {}) for i in range(200))
        )

    results = run(burst)()
    assert sum(r is None for r in results) == 10_000 // 300


@pytest.mark.parametrize("kind", stores())
def test_rate_windows_and_in_flight_slots(kind):
    store = _store(kind)
    prefix = settings.UBERLLM["SHARED_KEY_PREFIX"]
    rates = RateLimits(
        rpm=2,
        tpm=100,
        concurrent=1,
        rpm_key=f"{prefix}:rpm",
        tpm_key=f"{prefix}:tpm",
        concurrent_key=f"{prefix}:inflight",
        window_reset_s=30.2,
    )
    assert run(store.admit)(_ticket("a", [], 0, rates, tokens=60), {}) is None
    refused = run(store.admit)(_ticket("b", [], 0, rates, tokens=10), {})
    assert (refused.kind, refused.retry_after_s) == ("concurrency", 1)
    run(store.settle)(_ticket("a", [], 0, rates, tokens=60), 0, -30)  # 30 tokens in all
    refused = run(store.admit)(_ticket("c", [], 0, rates, tokens=71), {})
    assert (refused.kind, refused.retry_after_s) == ("tpm", 31)
    assert run(store.admit)(_ticket("d", [], 0, rates, tokens=70), {}) is None
    run(store.settle)(_ticket("d", [], 0, rates, tokens=70), 0, 0)
    assert run(store.admit)(_ticket("e", [], 0, rates), {}).kind == "rpm"


# --- A key's budgets -------------------------------------------------------------------


def _spend(tenant, request_id: str, cost: str, *, api_key=None, created_at=None) -> None:
    Activity.objects.create(
        request_id=request_id,
        organisation=tenant.organisation,
        api_key=api_key or tenant.api_key,
        model_slug="m/x",
        status="success",
        cost_usd=Decimal(cost),
        created_at=created_at or timezone.now(),
    )


def _principal(api_key: ApiKey, **fields) -> KeyPrincipal:
    ApiKey.unscoped_objects.filter(id=api_key.id).update(**fields)
    return _load(api_key.prefix)


admit = async_to_sync(limits.admit)


def test_no_limit_makes_no_store_call():
    tenant = make_tenant("NoLimit")
    assert admit(_principal(tenant.api_key), "gen-1", worst_usd=Decimal(5), tokens=10) is None
    assert limits._store is None


def test_the_period_is_seeded_from_this_months_ledger_of_this_key_only():
    tenant = make_tenant("Months")
    other_key, _ = api_key_create(organisation=tenant.organisation, name="other")
    start = limits.budgets_for(_principal(tenant.api_key, monthly_limit_usd=1))[0].period_start
    _spend(tenant, "gen-last-month", "50", created_at=start - timedelta(seconds=1))
    _spend(tenant, "gen-other-key", "50", api_key=other_key)
    _spend(tenant, "gen-this-month", "0.70", created_at=start)
    principal = _principal(tenant.api_key, monthly_limit_usd=Decimal("1.00"))
    admit(principal, "gen-a", worst_usd=Decimal("0.30"), tokens=1)  # fits exactly
    with pytest.raises(limits.QuotaRefused) as refused:
        admit(principal, "gen-b", worst_usd=Decimal("0.000000001"), tokens=1)
    assert refused.value.status == 402
    assert "$0.00 remaining this month" in refused.value.message


def test_daily_and_organisation_budgets_apply_too():
    tenant = make_tenant("Daily")
    tenant.organisation.monthly_limit_usd = Decimal("3")
    tenant.organisation.save()
    yesterday = timezone.now() - timedelta(days=1)
    if yesterday.month == timezone.now().month:
        _spend(tenant, "gen-yesterday", "1", created_at=yesterday)
    principal = _principal(tenant.api_key, daily_limit_usd=Decimal("2"))
    budgets = limits.budgets_for(principal)
    assert [(b.scope.split(":")[0], b.period) for b in budgets] == [
        ("key", "day"),
        ("org", "month"),
    ]
    with pytest.raises(limits.QuotaRefused) as refused:
        admit(principal, "gen-a", worst_usd=Decimal("2.5"), tokens=1)
    assert "daily spend limit of $2.00" in refused.value.message


def test_worst_case_is_priced_at_the_dearest_endpoint():
    class Route:
        def __init__(self, i, c, w, o):
            self.prices = {
                "input": Decimal(i),
                "cache_read": Decimal(c),
                "cache_write": Decimal(w),
                "output": Decimal(o),
            }

    routes = [Route("1", "0.1", "0", "2"), Route("0.5", "0.1", "3", "1")]
    # 1,000 prompt + 100 output: 1.0x1000+2x100 = 1,200 vs 3x1000+1x100 = 3,100 per 1M.
    assert limits.worst_case_usd(routes, 1000, 100) == Decimal("0.0031")


def test_month_start_is_utc():
    moment = datetime(2026, 3, 1, 0, 30, tzinfo=UTC)
    start, period_id, _ = limits._period_bounds("month", moment)
    assert (start, period_id) == (datetime(2026, 3, 1, tzinfo=UTC), "202603")
    start, period_id, end = limits._period_bounds("day", moment)
    assert period_id == "20260301" and end - start.timestamp() == 86400
