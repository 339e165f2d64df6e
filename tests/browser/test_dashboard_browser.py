"""The dashboard in a real browser (Playwright + Debian's Chromium) against the live
gateway: log in, make a call with the openai client, find it on Activity, filter, open
its detail, look at Usage, create a key (shown once) and revoke it.

Screenshots go to test-artifacts/ (git-ignored). Skipped when Playwright or
/usr/bin/chromium is missing."""

from __future__ import annotations

import csv
import io
import os
import warnings
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings

from billing.models import Activity

from ..support import TEST_MODEL, wait_finished_rows

CHROMIUM = os.environ.get("UBERLLM_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts"
PASSWORD = "pw-123456789"  # tests.support.make_tenant's default


@pytest.fixture
def playwright_api():
    """Playwright's sync API, or a clean skip on a machine without it or Chromium."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    ARTIFACTS.mkdir(exist_ok=True)
    return sync_api


@contextmanager
def browser_page(sync_api):
    """A Chromium page. Playwright's sync API runs an event loop in this thread, where
    Django refuses database calls: open it only after the test's database work."""
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        page = context.new_page()
        page.set_default_timeout(10_000)
        problems: list[str] = []
        page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
        page.on(
            "console",
            lambda msg: msg.type == "error" and problems.append(f"console: {msg.text}"),
        )
        page.on("dialog", lambda dialog: dialog.accept())  # the revoke confirmation
        try:
            yield page, problems
        finally:
            context.close()
            browser.close()


def _shot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_dashboard_in_a_browser(playwright_api, gateway, client, tenant):
    base = gateway.base_url
    username = tenant.user.username
    stream = client.chat.completions.create(
        model=TEST_MODEL, messages=[{"role": "user", "content": "Hello from the browser test"}],
        stream=True, stream_options={"include_usage": True},
    )  # fmt: skip
    streamed_id = next(iter(stream)).id
    for _ in stream:
        pass
    reply = client.chat.completions.create(
        model=TEST_MODEL, messages=[{"role": "user", "content": "And once more"}]
    )
    provider = reply.model_extra["provider"]
    wait_finished_rows(2)
    streamed = Activity.objects.get(request_id=streamed_id)
    # The Usage page's TTFT chart counts successful streamed calls with a measured TTFT.
    ttft_provider = streamed.provider_slug if streamed.status == "success" and (
        streamed.ttft_ms is not None and streamed.prompt_bucket
    ) else None  # fmt: skip
    with browser_page(playwright_api) as (page, problems):
        _walk_through(page, base, username, gateway, streamed_id, reply.id, provider,
                      ttft_provider)  # fmt: skip
    assert problems == []


def _walk_through(page, base, username, gateway, streamed_id, reply_id, provider, ttft_provider):
    import openai

    # Log in.
    page.goto(f"{base}/")
    assert "/login/" in page.url
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")

    # Activity: both calls, with totals.
    row = page.locator(f'tr[data-request-id="{reply_id}"]')
    assert row.is_visible()
    assert provider in row.inner_text()
    assert page.locator(f'tr[data-request-id="{streamed_id}"]').is_visible()
    assert page.inner_text("#total-calls") == "2"
    _shot(page, "01-activity")

    # Filter: the provider and status menus narrow the table and keep their values.
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
    _shot(page, "02-activity-filtered")

    # The CSV export carries the filters and is streamed through the ASGI app.
    csv_href = page.get_attribute("#export-csv", "href")
    assert "request_id=" in csv_href
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        download = page.request.get(f"{base}{csv_href}")
    assert not [w for w in caught if "StreamingHttpResponse" in str(w.message)]  # not buffered
    assert download.ok and download.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(download.text())))
    assert [r["request_id"] for r in rows] == [reply_id]
    assert rows[0]["provider"] == provider

    # Detail: routing reason and each attempt.
    page.click(f'tr[data-request-id="{reply_id}"] a')
    page.wait_for_url(f"{base}/activity/{reply_id}/")
    assert page.locator("#attempts tbody tr").count() >= 1
    assert provider in page.inner_text("#attempts")
    _shot(page, "03-activity-detail")

    # Usage: charts drawn by the locally served Chart.js, tables filled.
    page.click("header nav >> text=Usage")
    page.wait_for_url(f"{base}/usage/")
    page.wait_for_function("() => window.Chart && Chart.getChart('chart-daily') !== undefined")
    assert page.evaluate("() => Chart.getChart('chart-models').data.labels") == [TEST_MODEL]
    if ttft_provider:
        assert page.locator(f'#ttft tr[data-provider="{ttft_provider}"]').is_visible()
        datasets = page.evaluate("() => Chart.getChart('chart-ttft').data.datasets")
        assert ttft_provider in [d["label"] for d in datasets]
    assert page.inner_text("#usage-calls") == "2"
    assert TEST_MODEL in page.inner_text("#per-model")
    _shot(page, "04-usage")

    # API keys: create one, shown once, works, then revoke it and it stops working.
    page.click("header nav >> text=API keys")
    page.fill("#create-key input[name=name]", "browser key")
    page.click("#create-key button[type=submit]")
    new_key = page.inner_text("#new-key").strip()
    assert new_key.startswith("ullm_")
    _shot(page, "05-key-created")
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
    _shot(page, "06-key-revoked")
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
    _shot(page, "07-members")
