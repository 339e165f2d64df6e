"""The dashboard's layout in Chromium, measured: at 1366 px no table is wider than its
box (no clipped column) and no model name is cut; at 390 px on a touch phone Activity
shows at least 6 calls on the first screen (totals folded behind a toggle), the cost
hint speaks of touch, nothing scrolls sideways; one colour per provider on every Usage
chart; the attempts' HTTP column filled for every attempt.

The pages are rendered by the Django test client (real templates, real rows) and handed
to Chromium through a routed origin with the static files from the finders: no live
server. Screenshots go to docs/img/ (referenced from docs/dashboard.md)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from billing.models import Activity, Attempt
from billing.services import api_key_create
from providers.models import Endpoint, Model

from ..dashboard.helpers import JAN, finished_call, install_test_catalog, login
from ..support import make_tenant
from .helpers import (
    ORIGIN,
    browser_page,
    calls_on_first_screen,
    docs_shot,
    no_horizontal_overflow,
    overflowing,
    serve,
)

pytestmark = pytest.mark.django_db
LONG_MODEL = "meta-llama/llama-4-maverick-17b-128e-instruct-fp8"
# As long as Activity.routing_reason holds (128 characters; PostgreSQL enforces it).
LONG_REASON = (
    "cheapest fast-enough: swiftinfer p50 0.41 s for <8k within 1.5x of the fastest; "
    "novacloud skipped (unusable until 12:04)"
)
# Every colour each provider has on the Usage charts (spend per provider, TTFT).
PROVIDER_COLOURS_JS = """() => {
    const out = {};
    const add = (p, c) => (out[p] = out[p] || new Set()).add(c);
    const bars = Chart.getChart('chart-providers').data;
    bars.labels.forEach((p, i) => add(p, bars.datasets[0].backgroundColor[i]));
    const ttft = Chart.getChart('chart-ttft');
    if (ttft) ttft.data.datasets.forEach(d => add(d.label, d.backgroundColor));
    return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, [...v]]));
}"""
PAGES = ("/", "/keys/", "/usage/?date_from=2025-01-01&date_to=2025-01-31", "/activity/gen-0/")


def _long_endpoint(endpoint: Endpoint) -> Endpoint:
    """A second model with a long slug, served by the same provider."""
    model = Model.objects.get(pk=endpoint.model_id)
    model.pk, model.slug, model.name = None, LONG_MODEL, "Llama 4 Maverick"
    model.save()
    copy = Endpoint.objects.get(pk=endpoint.pk)
    copy.pk, copy.model = None, model
    copy.save()
    return copy


def _data() -> dict[str, str]:
    """Twelve calls on two providers, three keys with every limit, attempts of every
    kind; the rendered pages by path."""
    endpoints = install_test_catalog()
    tenant = make_tenant("Acme")
    long = _long_endpoint(endpoints["alpha"])
    for i in range(12):
        endpoint = [endpoints["alpha"], endpoints["bravo"], long][i % 3]
        finished_call(
            tenant,
            f"gen-{i}",
            endpoint=endpoint,
            prompt=123_456 + i,
            cached=1_024,
            completion=4_567,
            created_at=JAN,
        )
    Activity.unscoped_objects.update(routing_reason=LONG_REASON)
    first = Activity.unscoped_objects.get(request_id="gen-0")
    attempts = [("bravo", "connect_error", None), ("bravo", "http_error", 429)]
    for no, (provider, outcome, status) in enumerate([*attempts, ("alpha", "success", None)]):
        Attempt.unscoped_objects.create(
            activity=first,
            attempt_no=no + 1,
            provider_slug=provider,
            outcome=outcome,
            http_status=status,
            reason="retry",
        )
    limits = {
        "monthly_limit_usd": Decimal("250"),
        "daily_limit_usd": Decimal("25"),
        "rate_limit_rpm": 600,
        "rate_limit_tpm": 2_000_000,
        "max_concurrent": 20,
        "allowed_models": [LONG_MODEL, endpoints["alpha"].model.slug],
    }
    for name in ("Production backend (eu-west-1)", "Staging", "Data science notebooks"):
        api_key_create(organisation=tenant.organisation, name=name, **limits)
    client = login(tenant.user)
    pages = {}
    for path in PAGES:
        response = client.get(path)
        assert response.status_code == 200, path
        pages[path] = response.content.decode()
    return pages


def test_layout_at_1366_px(playwright_api):
    pages = _data()
    with browser_page(playwright_api) as (page, _):
        page.route(f"{ORIGIN}/**", serve(pages))
        for path, shot in (("/", "activity-1366"), ("/keys/", "keys-1366")):
            page.goto(f"{ORIGIN}{path}")
            assert overflowing(page) == [], path
            assert no_horizontal_overflow(page), path
            docs_shot(page, shot)
        page.goto(f"{ORIGIN}/")
        assert page.locator("#totals").is_visible()  # unfolded on a wide screen
        assert page.locator(".on-hover").first.is_visible()
        routing = page.locator("#activity thead th", has_text="Routing").bounding_box()
        assert routing["x"] + routing["width"] <= 1366
        assert LONG_MODEL in page.locator("#activity td.c-model").first.inner_text()

        page.goto(f"{ORIGIN}/activity/gen-0/")
        http = page.locator("#attempts td.http").all_inner_texts()
        assert http == ["—conn", "429", "200"]
        docs_shot(page, "call-attempts-1366")

        page.goto(f"{ORIGIN}{PAGES[2]}")
        page.wait_for_function("() => window.Chart && Chart.getChart('chart-providers')")
        colours = page.evaluate(PROVIDER_COLOURS_JS)
        assert set(colours) >= {"alpha", "bravo"}, colours
        assert all(len(set(c)) == 1 for c in colours.values()), colours
        assert colours["alpha"] != colours["bravo"]


def test_layout_on_a_phone(playwright_api):
    pages = _data()
    with browser_page(playwright_api, width=390, height=844, touch=True) as (page, _):
        page.route(f"{ORIGIN}/**", serve(pages))
        page.goto(f"{ORIGIN}/")
        assert page.evaluate("() => matchMedia('(hover: none)').matches")
        assert not page.locator("#totals").is_visible()  # folded
        assert page.locator("#totals-summary").is_visible()
        docs_shot(page, "activity-390")
        calls = calls_on_first_screen(page)
        assert calls >= 6, calls
        assert no_horizontal_overflow(page)
        assert page.locator(".on-touch").first.is_visible()
        assert not page.locator(".on-hover").first.is_visible()
        assert "hover" not in page.inner_text(".toolbar").lower()
        page.click("#totals-summary")
        assert page.locator("#total-calls").inner_text() == "12"
        docs_shot(page, "activity-390-totals")
        for path in ("/keys/", "/activity/gen-0/"):
            page.goto(f"{ORIGIN}{path}")
            assert no_horizontal_overflow(page), path
