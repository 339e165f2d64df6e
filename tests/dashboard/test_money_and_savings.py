"""Money formatting, savings (defined in billing/savings.py) through the real ledger, and
how both show on Activity, the call detail and Usage."""

from __future__ import annotations

from decimal import Decimal

import pytest

from billing import selectors
from billing.money import decimal_str, usd_short
from billing.savings import forget_reference_prices

from ..support import make_tenant
from .helpers import finished_call, install_test_catalog, login

pytestmark = pytest.mark.django_db
D = Decimal


@pytest.mark.parametrize(
    ("value", "short", "exact"),
    [
        ("0.0000102000", "$0.0000102", "0.0000102"),
        ("0.0000201900000000000", "$0.0000202", "0.00002019"),
        ("0.00310", "$0.0031", "0.0031"),
        ("0.5", "$0.50", "0.5"),
        ("1234.5", "$1,234.50", "1234.5"),
        ("150012", "$150,012.00", "150012"),
        ("0", "$0", "0"),
        ("-0.0213", "-$0.0213", "-0.0213"),
    ],
)
def test_money_format(value, short, exact):
    assert usd_short(D(value)) == short
    assert decimal_str(D(value)) == exact


@pytest.fixture
def market_and_tenant():
    forget_reference_prices()
    return install_test_catalog(), make_tenant("Saver")


def test_savings_are_stored_at_finish_from_prices_in_force(market_and_tenant):
    market, tenant = market_and_tenant
    # Served by bravo: 10,000 input (2,000 cached) + 1,000 output tokens.
    row = finished_call(
        tenant, "gen-s1", endpoint=market["bravo"], prompt=10_000, cached=2_000, completion=1_000
    )
    # Paid: 8000*0.20 + 2000*0.02 + 1000*0.60 = 2240 / 1M.
    assert row.cost_usd == D("0.00224")
    # List: 8000*0.50 + 2000*0.05 + 1000*1.50 = 5600 / 1M.
    assert row.list_cost_usd == D("0.0056")
    # Cheapest-input route (alpha): 8000*0.10 + 2000*0.01 + 1000*0.40 = 1220 / 1M.
    assert row.cheapest_cost_usd == D("0.00122")
    assert row.reference_prices["cheapest_input"]["provider"] == "alpha"
    # A later price change does not rewrite this call.
    model = market["bravo"].model
    model.list_price_input = D("9")
    model.save()
    row.refresh_from_db()
    assert row.list_cost_usd == D("0.0056")
    later = finished_call(
        tenant, "gen-s2", endpoint=market["bravo"], prompt=1_000_000, completion=0
    )
    assert later.list_cost_usd == D("9")  # the new price, in force at that call


def test_savings_on_activity_detail_and_usage(market_and_tenant):
    market, tenant = market_and_tenant
    finished_call(
        tenant, "gen-s1", endpoint=market["bravo"], prompt=10_000, cached=2_000, completion=1_000
    )
    client = login(tenant.user)
    page = client.get("/")
    html = page.content.decode()
    totals = page.context["totals"]
    assert totals["savings"].vs_list == D("0.00336")  # 0.0056 - 0.00224
    assert round(totals["savings"].vs_list_percent) == 60
    assert totals["savings"].vs_cheapest == D("-0.00102")  # paid more than alpha
    assert 'id="total-saved"><span class="money" title="0.00336 USD"' in html
    assert "$0.00336 · 60% below list / $0.00102 above the cheapest-input route" in html
    detail = client.get("/activity/gen-s1/").content.decode()
    assert "$0.00336 · 60% below list" in detail and "cheapest-input route alpha" in detail
    usage = client.get("/usage/", {"date_from": "2025-01-01", "date_to": "2025-01-31"})
    day = next(r for r in usage.context["per_day"] if r["calls"])
    assert day["savings"].vs_list == D("0.00336")
    assert usage.context["chart"]["dailySaved"][9] == pytest.approx(0.00336)


def test_footnote_only_when_something_is_estimated(market_and_tenant):
    market, tenant = market_and_tenant
    finished_call(tenant, "gen-exact", endpoint=market["alpha"], prompt=100, completion=10)
    client = login(tenant.user)
    assert 'id="estimated-note"' not in client.get("/").content.decode()
    finished_call(
        tenant, "gen-est", endpoint=market["alpha"], prompt=100, completion=10, usage_estimated=True
    )
    assert 'id="estimated-note"' in client.get("/").content.decode()


def test_thousands_separators_and_hedged_no(market_and_tenant):
    market, tenant = market_and_tenant
    finished_call(tenant, "gen-big", endpoint=market["alpha"], prompt=150_012, completion=933_381)
    html = login(tenant.user).get("/").content.decode()
    assert '<td data-label="Input" class="num c-in">150,012</td>' in html
    assert "933,381" in html and 'id="total-prompt">150,012<' in html
    assert '<td data-label="Hedged" class="extra">no</td>' in html


def test_usage_per_provider_key_and_exports(market_and_tenant):
    market, tenant = market_and_tenant
    finished_call(tenant, "gen-a", endpoint=market["alpha"], prompt=1_000, completion=100)
    finished_call(tenant, "gen-b", endpoint=market["bravo"], prompt=1_000, completion=100)
    finished_call(tenant, "gen-b2", endpoint=market["bravo"], prompt=1_000, completion=100)
    client = login(tenant.user)
    params = {"date_from": "2025-01-01", "date_to": "2025-01-31"}
    usage = client.get("/usage/", params)
    providers = {r["provider_slug"]: r["calls"] for r in usage.context["per_provider"]}
    assert providers == {"alpha": 1, "bravo": 2}
    assert [(r["api_key__name"], r["calls"]) for r in usage.context["per_key"]] == [
        ("Saver key", 3)
    ]
    csv_text = client.get("/usage.csv", {**params, "by": "provider"}).content.decode()
    lines = csv_text.strip().splitlines()
    assert lines[0].startswith("provider,calls,input_tokens")
    # bravo: 1000*0.20 + 100*0.60 = 260 per call, twice: exact in the CSV.
    assert "bravo,2,2000,0,200,0.00052," in csv_text
    ttft = client.get("/usage.csv", {**params, "by": "ttft"}).content.decode()
    assert "alpha,<8k,1,120,120" in ttft
    assert client.get("/usage.csv", {"by": "nope"}).status_code == 400


def test_selector_totals_ignore_rows_without_reference(market_and_tenant):
    market, tenant = market_and_tenant
    finished_call(tenant, "gen-1", endpoint=market["alpha"], prompt=1_000, completion=0)
    from billing.models import Activity

    Activity.objects.create(
        request_id="gen-old",
        organisation=tenant.organisation,
        model_slug="x",
        cost_usd=D("5"),
        status="success",
        created_at=selectors.month_start(),
    )
    totals = selectors.activity_totals(
        selectors.activity_list(organisation_id=tenant.organisation.id)
    )
    assert totals["cost"] == D("5.0001")
    assert totals["savings"].vs_list == D("0.0004")  # 0.0005 list - 0.0001 paid, old row out
