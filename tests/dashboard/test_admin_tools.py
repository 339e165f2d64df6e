"""Catalog admin: units, supported_parameters checkboxes with defaults, price history,
endpoint health, probe spend; the demo's operator/customer split."""

from __future__ import annotations

import re
import time
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from billing.models import Activity, Attempt, PriceChange
from providers.admin_tools import DEFAULT_PARAMETERS, NARROW
from routing.models import ProbeResult, SpeedSample

from ..support import make_tenant
from .helpers import install_test_catalog, login

pytestmark = pytest.mark.django_db
D = Decimal


@pytest.fixture
def operator():
    return get_user_model().objects.create_user(
        "op", password="pw-123456789", is_staff=True, is_superuser=True
    )


def test_import_records_initial_prices_and_admin_edit_records_who(operator):
    market = install_test_catalog()
    alpha = market["alpha"]
    initial = PriceChange.objects.filter(endpoint=alpha)
    assert {c.field for c in initial} == {
        "price_input",
        "price_cache_read",
        "price_cache_write",
        "price_output",
    }
    assert all(c.old_price is None and c.changed_by == "" for c in initial)
    client = login(operator)
    form = client.get(f"/admin/providers/endpoint/{alpha.id}/change/")
    html = form.content.decode()
    assert "input ($/1M)" in html and "USD / 1M tokens" in html
    assert 'type="checkbox" name="supported_parameters" value="tools"' in html
    data = {
        "provider": alpha.provider_id,
        "model": alpha.model_id,
        "base_url": alpha.base_url,
        "protocol": alpha.protocol,
        "upstream_model": "",
        "credential_env": alpha.credential_env,
        "context_length": alpha.context_length,
        "max_output_tokens": "",
        "supported_parameters": ["tools", "temperature"],
        "price_input": "0.125",
        "price_cache_read": "0.01",
        "price_cache_write": "0",
        "price_output": "0.4",
        "cache_ttl_s": 300,
        "enabled": "on",
    }
    response = client.post(f"/admin/providers/endpoint/{alpha.id}/change/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    alpha.refresh_from_db()
    assert alpha.price_input == D("0.125")
    assert sorted(alpha.supported_parameters) == ["temperature", "tools"]
    change = PriceChange.objects.filter(endpoint=alpha, changed_by="op").get()
    assert (change.field, change.old_price, change.new_price) == (
        "price_input",
        D("0.1"),
        D("0.125"),
    )
    history = client.get(f"/admin/providers/endpoint/{alpha.id}/change/").content.decode()
    assert "Price history" in history and "<td>$0.1</td><td>$0.125</td><td>op</td>" in history


def test_new_endpoint_form_ticks_the_default_parameters(operator):
    install_test_catalog()
    html = login(operator).get("/admin/providers/endpoint/add/").content.decode()
    ticked = set(re.findall(r'name="supported_parameters" value="([a-z_]+)"[^>]* checked', html))
    offered = set(re.findall(r'name="supported_parameters" value="([a-z_]+)"', html))
    assert ticked == set(DEFAULT_PARAMETERS)
    assert {"tools", "tool_choice", "response_format", "max_tokens"} <= ticked
    assert {"logprobs", "top_logprobs"} <= offered - ticked


def test_model_page_inline_is_compact_with_units(operator):
    market = install_test_catalog()
    html = (
        login(operator)
        .get(f"/admin/providers/model/{market['alpha'].model_id}/change/")
        .content.decode()
    )
    assert "input ($/1M)" in html and "list input ($/1M)" in html
    assert (
        NARROW["base_url"] in html and "style=" not in html.split("<form")[1]
    )  # CSS classes: the CSP allows no inline styles


def test_endpoint_health_page(operator):
    market = install_test_catalog()
    alpha = market["alpha"]
    for ms in (100, 200, 300, 400, 1000):
        SpeedSample.objects.create(endpoint=alpha, bucket="<8k", ttft_ms=ms)
    SpeedSample.objects.create(endpoint=alpha, bucket="32k-128k", ttft_ms=2000, is_probe=True)
    tenant = make_tenant("Health")
    activity = Activity.objects.create(
        request_id="gen-h",
        organisation=tenant.organisation,
        model_slug="m",
        created_at=timezone.now(),
    )
    outcomes = [("success", 200), ("http_error", 429), ("cut", None), ("success", 200)]
    for i, (outcome, status) in enumerate(outcomes, start=1):
        Attempt.objects.create(
            activity=activity,
            attempt_no=i,
            endpoint=alpha,
            provider_slug="alpha",
            outcome=outcome,
            http_status=status,
            error_message="rate limited" if status == 429 else "",
        )
    ProbeResult.objects.create(
        cycle=1, endpoint=alpha, prompt_tokens=1000, status="ok", ttft_ms=150, cost_usd=D("0.0001")
    )
    response = login(operator).get(f"/admin/providers/endpoint/{alpha.id}/health/")
    assert response.status_code == 200
    health = response.context["health"]
    small = next(r for r in health["speed"] if r["bucket"] == "<8k")
    assert (small["p50_ms"], small["p90_ms"], small["samples"]) == (300, 1000, 5)
    big = next(r for r in health["speed"] if r["bucket"] == "32k-128k")
    assert (big["samples"], big["probes"]) == (1, 1)
    rates = health["rates"]
    assert (
        rates["total"],
        rates["errors_rate"],
        rates["rate_limited_rate"],
        rates["cut_rate"],
    ) == (4, 0.25, 0.25, 0.25)
    assert health["mark"].until is None and "http_error 429: rate limited" in health["mark"].why
    html = response.content.decode()
    assert 'id="rate-429">1 (25.0%)' in html and "$0.0001" in html
    assert "Usable now" in html
    # A live R2.7 mark in the shared store (what every gateway process reads).
    from asgiref.sync import async_to_sync

    from routing.shared import key, shared_kv

    async_to_sync(shared_kv().set)(key("unusable", alpha.id), f"{time.time() + 60!r}|2", 120)
    html = login(operator).get(f"/admin/providers/endpoint/{alpha.id}/health/").content.decode()
    assert "Unusable until" in html and "refusal streak 2" in html


def test_probe_spend_per_day(operator):
    market = install_test_catalog()
    for i, cost in enumerate(("0.0001", "0.0002")):
        ProbeResult.objects.create(
            cycle=i, endpoint=market["alpha"], prompt_tokens=1000, status="ok", cost_usd=D(cost)
        )
    old = ProbeResult.objects.create(
        cycle=9, endpoint=market["bravo"], prompt_tokens=1000, status="ok", cost_usd=D("0.5")
    )
    ProbeResult.objects.filter(id=old.id).update(created_at=timezone.now() - timedelta(days=2))
    response = login(operator).get("/admin/routing/proberesult/spend/")
    rows = response.context["rows"]
    assert [(r["model"], r["probes"], r["cost"]) for r in rows] == [
        ("test/model-a", 2, D("0.0003")),
        ("test/model-a", 1, D("0.5")),
    ]
    assert response.context["total"] == D("0.5003")
    assert response.context["today"] == D("0.0003")


def test_probe_spend_page_shows_todays_spend_against_the_daily_budget(operator, settings):
    market = install_test_catalog()
    ProbeResult.objects.create(
        cycle=1, endpoint=market["alpha"], prompt_tokens=1000, status="ok", cost_usd=D("0.75")
    )
    settings.UBERLLM = {**settings.UBERLLM, "PROBE_DAILY_BUDGET_USD": 0.5}
    html = login(operator).get("/admin/routing/proberesult/spend/").content.decode()
    assert 'id="probe-budget-amount"' in html and 'id="probe-budget-spent"' in html
    settings.UBERLLM = {**settings.UBERLLM, "PROBE_DAILY_BUDGET_USD": 25.0}
    html = login(operator).get("/admin/routing/proberesult/spend/").content.decode()
    assert 'id="probe-budget-amount"' in html and 'id="probe-budget-spent"' not in html
    settings.UBERLLM = {**settings.UBERLLM, "PROBE_DAILY_BUDGET_USD": 0}
    html = login(operator).get("/admin/routing/proberesult/spend/").content.decode()
    assert "no daily probe budget" in html


def test_demo_seeds_a_customer_and_a_separate_operator(tmp_path, settings):
    from billing.management.commands import seed_demo as seed

    seed.DEMO_KEY_FILE = tmp_path / "key.txt"
    key = seed.seed_demo(
        emulator_url="http://127.0.0.1:8100",
        password="demo-password",
        operator_password="operator-password",
    )
    users = get_user_model().objects
    customer, operator_user = users.get(username="demo"), users.get(username="operator")
    assert not customer.is_staff and not customer.is_superuser
    assert operator_user.is_superuser and not operator_user.memberships.exists()
    assert customer.memberships.get().role == "owner"
    page = login(customer).get("/").content.decode()
    assert 'id="admin-link"' not in page and "/admin/" not in page
    assert login(customer).get("/admin/").status_code == 302  # to the admin login
    assert login(operator_user).get("/admin/").status_code == 200
    lines = seed.summary_lines(
        base_url="http://127.0.0.1:8123",
        password="demo-password",
        operator_password="operator-password",
        key=key,
    )
    assert "http://127.0.0.1:8123/" in lines[0] and lines[-1].endswith(key)
