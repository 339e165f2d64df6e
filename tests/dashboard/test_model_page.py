"""The public model pages (docs/dashboard.md, "Model pages"): no login, each provider's
prices, TTFT by prompt size and uptime, linked from the dashboard, and nothing of any
organisation on them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from billing.models import Activity, Attempt
from routing.model_page import PAGE_TTL_S, forget_model_pages
from routing.models import SpeedSample

from ..support import TEST_MODEL, make_tenant
from .helpers import install_test_catalog, login

pytestmark = pytest.mark.django_db
PAGE = f"/models/{TEST_MODEL}"


def _attempts(tenant, endpoint, outcomes: list[str]) -> None:
    """Calls of ``tenant`` served (or not) by ``endpoint``, a minute ago."""
    now = timezone.now() - timedelta(minutes=1)
    for n, outcome in enumerate(outcomes):
        activity = Activity.objects.create(
            request_id=f"gen-{tenant.organisation.slug}-{endpoint.id}-{n}",
            organisation=tenant.organisation,
            api_key=tenant.api_key,
            model_slug=TEST_MODEL,
            provider_slug=endpoint.provider.slug,
            status="success" if outcome == "success" else "error",
            error_message="Acme-secret-error" if outcome != "success" else "",
            routing_reason="Acme-secret-reason",
            created_at=now,
        )
        Attempt.objects.create(
            activity=activity,
            attempt_no=1,
            endpoint=endpoint,
            provider_slug=endpoint.provider.slug,
            outcome=outcome,
            http_status=None if outcome == "success" else 500,
            error_message="Acme-secret-error" if outcome != "success" else "",
        )


@pytest.fixture(autouse=True)
def fresh_pages():
    forget_model_pages()  # each test's catalog and measurements, not a page cached before


@pytest.fixture
def measured():
    endpoints = install_test_catalog()
    tenant = make_tenant("Acme")
    for ttft_ms in (300, 400, 500):
        SpeedSample.objects.create(
            endpoint=endpoints["alpha"], bucket="<8k", ttft_ms=ttft_ms, prompt_tokens=900
        )
    SpeedSample.objects.create(
        endpoint=endpoints["bravo"], bucket="32k-128k", ttft_ms=2500, prompt_tokens=60_000
    )
    _attempts(tenant, endpoints["alpha"], ["success", "success", "success", "http_error"])
    _attempts(tenant, endpoints["bravo"], ["success"])
    return endpoints, tenant


def test_the_model_page_needs_no_login_and_shows_prices_ttft_and_uptime(measured):
    response = Client().get(PAGE)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Test model A" in html and TEST_MODEL in html
    for provider in ("alpha", "bravo", "charlie"):
        assert f'data-provider="{provider}"' in html
    # alpha: input 0.10, output 0.40, cache read 0.01 (USD per 1M), exact.
    assert "$0.1<" in html and "$0.4<" in html and "$0.01<" in html
    assert "400 ms" in html and "n=3" in html  # alpha's p50 in <8k over three samples
    assert "2.50 s" in html  # bravo's one sample at 32k-128k
    assert "not measured" in html  # charlie has none
    assert "75%" in html and "100%" in html and "no calls" in html  # uptime, last day


def test_the_model_page_shows_nothing_of_any_organisation(measured):
    _, tenant = measured
    html = Client().get(PAGE).content.decode()
    for private in (
        "Acme",
        tenant.organisation.slug,
        tenant.api_key.name,
        tenant.api_key.prefix,
        "Acme-secret",
        "gen-",
    ):
        assert private not in html


def test_the_list_links_every_model_and_an_unknown_one_is_a_404(measured):
    listing = Client().get("/models/")
    assert listing.status_code == 200
    assert f'href="{PAGE}"' in listing.content.decode()
    assert Client().get("/models/nobody/nothing").status_code == 404


def test_a_disabled_endpoint_is_not_offered(measured):
    endpoints, _ = measured
    endpoints["charlie"].enabled = False
    endpoints["charlie"].save()
    html = Client().get(PAGE).content.decode()
    assert 'data-provider="charlie"' not in html and 'data-provider="alpha"' in html


def test_the_dashboard_links_the_models(measured):
    _, tenant = measured
    html = login(tenant.user).get("/").content.decode()
    assert 'href="/models/"' in html
    call = Activity.objects.for_organisation(tenant.organisation).first()
    detail = login(tenant.user).get(f"/activity/{call.request_id}/").content.decode()
    assert f'href="{PAGE}"' in detail


def test_a_post_is_refused(measured):
    assert Client().post(PAGE).status_code == 405


def test_the_page_is_read_at_most_once_per_ttl(measured, django_assert_num_queries):
    assert Client().get(PAGE).status_code == 200
    with django_assert_num_queries(0):
        assert Client().get(PAGE).status_code == 200  # served from the short cache
    assert PAGE_TTL_S <= 60
