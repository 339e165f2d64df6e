"""The dashboard in a real browser (Playwright + Debian's Chromium) against the live
gateway: log in, make a call with the openai client, find it on Activity (money format,
savings, columns visible at 1366 px), see a new call arrive live without a reload,
filter (rejected requests too), open its detail, look at Usage, create a key (shown
once) and revoke it; the same pages at 390 px (nav collapsed, Activity as cards, no
horizontal overflow); the operator's admin (endpoint health panel, compact inline).

Screenshots go to test-artifacts/ (git-ignored). Skipped when Playwright or
/usr/bin/chromium is missing."""

from __future__ import annotations

import csv
import io
import re
import warnings

import pytest
from django.utils import timezone

from billing.models import Activity
from billing.money import decimal_str

from ..support import TEST_MODEL, wait_finished_rows
from .helpers import PASSWORD, artifact_shot, browser_page, log_in, no_horizontal_overflow


def test_dashboard_in_a_browser(playwright_api, gateway, client, tenant):
    from billing.services import record_rejected_request

    base = gateway.base_url
    username = tenant.user.username
    stream = client.chat.completions.create(
        model=TEST_MODEL,
        messages=[{"role": "user", "content": "Hello from the browser test"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    streamed_id = next(iter(stream)).id
    for _ in stream:
        pass
    reply = client.chat.completions.create(
        model=TEST_MODEL, messages=[{"role": "user", "content": "And once more"}]
    )
    provider = reply.model_extra["provider"]
    wait_finished_rows(2)
    record_rejected_request(
        organisation_id=tenant.organisation.id,
        api_key_id=tenant.api_key.id,
        status=400,
        code="invalid_request_error",
        message="messages: must be a non-empty list",
        model_slug=TEST_MODEL,
        created_at=timezone.now(),
    )
    streamed = Activity.unscoped_objects.get(request_id=streamed_id)
    ttft_provider = (
        streamed.provider_slug
        if streamed.ttft_ms is not None and (streamed.prompt_bucket)
        else None
    )
    exact = decimal_str(Activity.unscoped_objects.get(request_id=reply.id).cost_usd)
    with browser_page(playwright_api) as (page, problems):
        _walk_through(
            page,
            base,
            username,
            gateway,
            client,
            streamed_id,
            reply.id,
            provider,
            ttft_provider,
            exact,
        )
    assert problems == []
    with browser_page(playwright_api, width=390, height=844) as (page, problems):
        _narrow(page, base, username, reply.id)
    assert problems == []


def _walk_through(
    page, base, username, gateway, client, streamed_id, reply_id, provider, ttft_provider, exact
):
    import openai

    log_in(page, base, username)

    # Activity: both calls, with totals; the customer sees no admin link.
    row = page.locator(f'tr[data-request-id="{reply_id}"]')
    assert row.is_visible()
    assert provider in row.inner_text()
    assert page.locator(f'tr[data-request-id="{streamed_id}"]').is_visible()
    assert page.inner_text("#total-calls") == "2"
    assert page.locator("#admin-link").count() == 0
    assert "/admin/" not in page.content()

    # Money: "$0.0000102" style, exact value on hover; savings against the list price.
    cost = row.locator("td.cost .money")
    assert re.fullmatch(r"\$0\.0*[1-9]\d{0,2}", cost.inner_text()), cost.inner_text()
    assert cost.get_attribute("title") == f"{exact} USD"
    saved = page.inner_text("#total-saved")
    assert re.fullmatch(r"\$0\.\d+ \d+%", saved), saved
    assert "below list" in row.locator("td.saved").get_attribute("title")
    assert page.locator("#estimated-note").count() == 0  # nothing is estimated

    # At 1366 px the columns that matter are on screen without scrolling.
    for header in ("Cost", "Saved vs list", "TTFT", "Status", "Key", "Routing"):
        box = page.locator("#activity thead th", has_text=header).first.bounding_box()
        assert box and box["x"] + box["width"] <= 1366, (header, box)
    assert no_horizontal_overflow(page)
    assert not page.locator("#activity th", has_text="Hedged").is_visible()
    page.check("#all-columns")  # the secondary columns on demand
    assert (
        page.locator(f'tr[data-request-id="{reply_id}"] td[data-label="Hedged"]').inner_text()
        == "no"
    )
    page.uncheck("#all-columns")
    artifact_shot(page, "01-activity-1366")

    # Live: a new call appears without a reload (WebSocket through the channel layer).
    page.wait_for_function("() => document.documentElement.dataset.live === 'socket'")
    page.evaluate("() => { window.__notReloaded = true; }")
    live = client.chat.completions.create(
        model=TEST_MODEL, messages=[{"role": "user", "content": "Live, please"}]
    )
    page.wait_for_selector(f'tr[data-request-id="{live.id}"]', timeout=15_000)
    assert page.evaluate("() => window.__notReloaded === true")
    page.wait_for_function("() => document.getElementById('total-calls').textContent === '3'")
    artifact_shot(page, "02-activity-live")

    # Rejected requests: status, error code, message, key; $0.
    page.select_option("#id_status", "rejected")
    page.click("#filters button[type=submit]")
    page.wait_for_url(lambda url: "status=rejected" in url)
    rejected = page.locator("#rejected tbody tr").first
    text = rejected.inner_text()
    assert "400" in text and "invalid_request_error" in text
    assert "messages: must be a non-empty list" in text and "key" in text and "$0" in text
    artifact_shot(page, "03-activity-rejected")

    # Filter: the provider and status menus narrow the table and keep their values.
    page.goto(f"{base}/")
    page.select_option("#id_provider", provider)
    page.select_option("#id_status", "success")
    page.click("#filters button[type=submit]")
    page.wait_for_url(lambda url: f"provider={provider}" in url)
    assert page.locator("#id_provider").input_value() == provider
    assert page.locator(f'tr[data-request-id="{reply_id}"]').is_visible()
    page.fill("#id_request_id", reply_id)
    page.click("#filters button[type=submit]")
    page.wait_for_url(lambda url: "request_id=" in url)
    assert page.locator("#activity tbody tr").count() == 1
    assert page.inner_text("#total-calls") == "1"

    # The CSV export carries the filters, is streamed through the ASGI app, money exact.
    csv_href = page.get_attribute("#export-csv", "href")
    assert "request_id=" in csv_href
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        download = page.request.get(f"{base}{csv_href}")
    assert not [w for w in caught if "StreamingHttpResponse" in str(w.message)]  # not buffered
    assert download.ok and download.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(download.text())))
    assert [r["request_id"] for r in rows] == [reply_id]
    assert rows[0]["provider"] == provider and rows[0]["cost_usd"] == exact

    # Detail: routing reason, each attempt, the savings sentence.
    page.click(f'tr[data-request-id="{reply_id}"] a')
    page.wait_for_url(f"{base}/activity/{reply_id}/")
    assert page.locator("#attempts tbody tr").count() >= 1
    assert provider in page.inner_text("#attempts")
    assert re.search(r"\$0\.\d+ · \d+% below list / ", page.inner_text("#savings-text"))
    artifact_shot(page, "04-activity-detail-1366")

    # Usage: charts drawn by the locally served Chart.js, tables filled.
    page.click("header nav >> text=Usage")
    page.wait_for_url(f"{base}/usage/")
    page.wait_for_function("() => window.Chart && Chart.getChart('chart-daily') !== undefined")
    assert page.evaluate("() => Chart.getChart('chart-models').data.labels") == [TEST_MODEL]
    if ttft_provider:
        assert page.locator(f'#ttft tr[data-provider="{ttft_provider}"]').is_visible()
        datasets = page.evaluate("() => Chart.getChart('chart-ttft').data.datasets")
        assert ttft_provider in [d["label"] for d in datasets]
    assert page.inner_text("#usage-calls") == "3"
    assert TEST_MODEL in page.inner_text("#per-model")
    assert page.locator("#per-provider tbody tr").count() >= 1
    assert "Acme key" in page.inner_text("#per-key")
    assert "%" in page.inner_text("#usage-saved")
    artifact_shot(page, "05-usage-1366")

    # API keys: create one, shown once, works, then revoke it and it stops working.
    page.click("header nav >> text=API keys")
    page.fill("#create-key input[name=name]", "browser key")
    page.click("#create-key button[type=submit]")
    new_key = page.inner_text("#new-key").strip()
    assert new_key.startswith("ullm_")
    artifact_shot(page, "06-key-created")
    with openai.OpenAI(base_url=gateway.api_url, api_key=new_key, max_retries=0) as other:
        assert other.chat.completions.create(
            model=TEST_MODEL, messages=[{"role": "user", "content": "hi"}]
        ).id
    page.goto(f"{base}/keys/")
    assert page.locator("#new-key").count() == 0
    assert new_key not in page.content()
    key_row = page.locator("#keys tbody tr", has_text="browser key")
    key_row.locator("button.danger").click()
    page.wait_for_selector(".messages li")
    assert "revoked" in page.locator("#keys tbody tr", has_text="browser key").inner_text()
    artifact_shot(page, "07-key-revoked")
    with (
        openai.OpenAI(base_url=gateway.api_url, api_key=new_key, max_retries=0) as other,
        pytest.raises(openai.AuthenticationError),
    ):
        other.chat.completions.create(
            model=TEST_MODEL, messages=[{"role": "user", "content": "hi"}]
        )

    # Members.
    page.click("header nav >> text=Members")
    assert username in page.inner_text("#members")
    artifact_shot(page, "08-members")


def _narrow(page, base, username, reply_id):
    """390 px: the nav collapses behind Menu, Activity rows become cards, nothing
    overflows sideways."""
    log_in(page, base, username)
    assert not page.locator("#main-nav").is_visible()
    assert page.locator("#nav-toggle").is_visible()
    header = page.locator("header").bounding_box()
    assert header["height"] < 80  # one line, not three
    card = page.locator(f'tr[data-request-id="{reply_id}"]')
    assert page.evaluate("(el) => getComputedStyle(el).display", card.element_handle()) == "flex"
    assert not page.locator("#activity thead").is_visible()
    assert not page.locator("#filters").is_visible()  # behind "Filters" on a phone
    assert not page.locator("#totals").is_visible()  # behind "Totals" on a phone
    assert card.locator("td.cost").inner_text().startswith("$")
    assert no_horizontal_overflow(page)
    artifact_shot(page, "11-activity-390")
    page.click("#nav-toggle")
    assert page.locator("#main-nav").is_visible()
    assert page.locator("header .who button", has_text="Log out").is_visible()
    artifact_shot(page, "12-nav-open-390")
    page.goto(f"{base}/activity/{reply_id}/")
    assert no_horizontal_overflow(page)
    artifact_shot(page, "13-activity-detail-390")
    page.goto(f"{base}/usage/")
    page.wait_for_function("() => window.Chart && Chart.getChart('chart-daily') !== undefined")
    artifact_shot(page, "14-usage-390")
    page.click("#nav-toggle")
    page.click("header nav >> text=API keys")
    page.wait_for_url(f"{base}/keys/")
    assert no_horizontal_overflow(page)
    artifact_shot(page, "15-keys-390")
    page.goto(f"{base}/members/")
    artifact_shot(page, "16-members-390")
    page.goto(f"{base}/usage/")
    page.wait_for_function("() => window.Chart && Chart.getChart('chart-daily') !== undefined")
    wide = page.evaluate(
        "() => [...document.querySelectorAll('main *')].filter("
        "el => el.getBoundingClientRect().right > window.innerWidth + 1).map("
        "el => el.tagName + '#' + el.id + '.' + el.className).slice(0, 5)"
    )
    assert wide == [] and no_horizontal_overflow(page), wide


def test_operator_admin_in_a_browser(playwright_api, gateway, client, market):
    """The operator (a superuser with no organisation): the compact endpoints inline,
    a price edit kept in the history with who made it, the endpoint health panel."""
    from decimal import Decimal

    from django.contrib.auth import get_user_model

    from routing.models import ProbeResult

    for i in range(3):
        stream = client.chat.completions.create(
            model=TEST_MODEL,
            messages=[{"role": "user", "content": f"health {i}"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        for _ in stream:
            pass
    wait_finished_rows(3)
    alpha = market["alpha"]
    ProbeResult.objects.create(
        cycle=1,
        endpoint=alpha,
        prompt_tokens=1000,
        status="ok",
        ttft_ms=140,
        cost_usd=Decimal("0.0001003"),
    )
    get_user_model().objects.create_user(
        "operator", password=PASSWORD, is_staff=True, is_superuser=True
    )
    base = gateway.base_url
    with browser_page(playwright_api) as (page, problems):
        page.goto(f"{base}/admin/login/")
        page.fill("#id_username", "operator")
        page.fill("#id_password", PASSWORD)
        page.click("input[type=submit]")
        page.wait_for_url(f"{base}/admin/")

        # The model page: endpoints inline fits the screen, prices carry their unit.
        page.goto(f"{base}/admin/providers/model/{alpha.model_id}/change/")
        inline = page.locator(".inline-group table").first
        box = inline.bounding_box()
        widths = page.evaluate(
            "() => [...document.querySelectorAll('.inline-group table tbody tr.has_original')[0]"
            ".children].map(td => td.className + ':' + Math.round(td.getBoundingClientRect().width)"
            " + ':' + td.innerHTML.length)"
        )
        assert box["x"] + box["width"] <= 1366, (box, widths)
        assert no_horizontal_overflow(page)
        assert "INPUT ($/1M)" in inline.inner_text().upper()
        artifact_shot(page, "21-admin-model-inline-1366")

        # A price edit: kept with who made it.
        page.goto(f"{base}/admin/providers/endpoint/{alpha.id}/change/")
        assert page.locator('input[name="supported_parameters"][value="tools"]').is_checked()
        page.fill("#id_price_input", "0.11")
        page.click("input[name=_continue]")
        page.wait_for_selector(".messagelist")
        history = page.inner_text(".field-price_history")
        assert "$0.1" in history and "0.11" in history and "operator" in history

        # Health panel: TTFT by bucket from the calls, rates, mark, last probes.
        page.goto(f"{base}/admin/providers/endpoint/{alpha.id}/health/")
        small = page.locator('#health-speed tr[data-bucket="<8k"]').inner_text()
        assert "ms" in small
        assert int(page.inner_text("#rate-total")) >= 1
        assert "Usable now" in page.inner_text("#health-mark")
        assert "$0.0001" in page.inner_text("#health-probes")
        assert "operator" in page.inner_text("#health-prices")
        artifact_shot(page, "22-admin-endpoint-health-1366")
        page.set_viewport_size({"width": 390, "height": 844})
        page.reload()
        artifact_shot(page, "23-admin-endpoint-health-390")

        page.set_viewport_size({"width": 1366, "height": 900})
        page.goto(f"{base}/admin/routing/proberesult/spend/")
        assert TEST_MODEL in page.inner_text("#probe-spend")
        artifact_shot(page, "24-admin-probe-spend")
    assert problems == []
