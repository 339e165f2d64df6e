"""The Activity headline's money, labelled honestly (issue 42, "Money"): the premium over
the cheapest-input route is shown with what it bought (first tokens sooner than the
cheapest route's own calls of the same model and size), and "saved" against both the
list price and the cheapest-input route. Real ledger, real database, the dashboard over
Django's test client."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from billing import selectors
from billing.savings import forget_reference_prices

from ..support import make_tenant
from .helpers import finished_call, install_test_catalog, login

pytestmark = pytest.mark.django_db
NOW = datetime.now(UTC)


@pytest.fixture
def market_and_tenant():
    forget_reference_prices()
    return install_test_catalog(), make_tenant("Speedy")


def _call(tenant, request_id: str, endpoint, ttft_ms: int, bucket: str = "32k-128k"):
    return finished_call(
        tenant,
        request_id,
        endpoint=endpoint,
        prompt=60_000,
        completion=500,
        ttft_ms=ttft_ms,
        prompt_bucket=bucket,
        created_at=NOW,
    )


def test_the_premium_says_what_it_bought(market_and_tenant):
    market, tenant = market_and_tenant
    _call(tenant, "gen-cheap", market["alpha"], ttft_ms=15_000)  # the cheapest-input route
    fast = [
        _call(tenant, f"gen-fast-{n}", market["bravo"], ttft_ms=ms)
        for n, ms in enumerate((1_000, 2_000))
    ]
    far = _call(tenant, "gen-huge", market["bravo"], ttft_ms=3_000, bucket=">128k")
    premium = selectors.speed_premium(organisation_id=tenant.organisation.id)
    paid = sum(row.cost_usd - row.cheapest_cost_usd for row in (*fast, far))
    assert (premium.calls, premium.paid) == (3, paid) and paid > 0
    # Measured against the cheapest route's own calls of that model and bucket; the
    # >128k call has none to compare with.
    assert (premium.measured_calls, premium.unmeasured) == (2, 1)
    assert premium.ttft_saved_ms == (15_000 - 1_000) + (15_000 - 2_000)

    html = login(tenant.user).get("/").content.decode()
    assert 'id="vs-cheapest-label">Paid above the cheapest-input route<' in html
    value = html.split('id="total-saved-cheapest">')[1].split("</div>")[0]
    assert ">$0." in value and "-$" not in value  # an amount paid, not a negative saving
    assert "paid for speed on 3 calls: first tokens 27.00 s sooner in all (13.50 s a call)" in html
    assert "speed not measured for 1," in html
    assert "Saved vs list price" in html and "official list price" in html


def test_saved_against_the_cheapest_route_reads_as_saved(market_and_tenant):
    market, tenant = market_and_tenant
    _call(tenant, "gen-cheap", market["alpha"], ttft_ms=900)
    html = login(tenant.user).get("/").content.decode()
    assert 'id="vs-cheapest-label">Saved vs the cheapest-input route<' in html
    assert 'id="premium-bought"' not in html  # no premium, nothing to explain


def test_the_premium_reads_only_the_last_month_and_the_filters(market_and_tenant):
    market, tenant = market_and_tenant
    old = NOW - timedelta(days=40)
    finished_call(
        tenant,
        "gen-old",
        endpoint=market["bravo"],
        prompt=60_000,
        completion=500,
        ttft_ms=1_000,
        prompt_bucket="32k-128k",
        created_at=old,
    )
    _call(tenant, "gen-new", market["bravo"], ttft_ms=1_000)
    premium = selectors.speed_premium(organisation_id=tenant.organisation.id)
    assert premium.calls == 1 and premium.since == (NOW - timedelta(days=30)).date()
    other = selectors.ActivityFilters(provider="alpha")
    assert selectors.speed_premium(organisation_id=tenant.organisation.id, filters=other).calls == 0
    assert premium.paid > Decimal(0)
