"""The newcomer's path in Chromium against the live gateway, in one browser session, as
a new customer walks it (issue 42): log in on the branded page; create an API key and
reload the page (no second key, the secret gone); call the gateway with the openai SDK
and that key (calls that succeed and one the gateway refuses); Activity at 1366 px (no
sideways scroll, no clipped column) and on a 390 px phone in the same session (no
sideways scroll, at least 6 calls wholly on the first screen); a call's page; the
rejected request's page; Usage; the monthly statement and its CSV.

Every step asserts what the customer should see, and leaves a viewport screenshot at
docs/img/newcomer-<n>-<step>.png (README.md and docs/dashboard.md show them)."""

from __future__ import annotations

import csv
import io
import time
from decimal import Decimal

import pytest
from django.db.models import Sum
from django.utils import timezone

from billing.models import Activity, ApiKey, RejectedRequest

from ..support import TEST_MODEL, wait_finished_rows
from .helpers import (
    PASSWORD,
    browser_page,
    calls_on_first_screen,
    docs_shot,
    no_horizontal_overflow,
    on_db,
    overflowing,
    phone_page,
)

pytestmark = pytest.mark.django_db(transaction=True)
KEY_NAME = "My first key"
MISSPELT = "test/model-aa"  # a model the catalog lacks: the gateway refuses the call
CALLS = 8  # enough for a full phone screen of Activity (≥ 6)


def _keys(organisation_id: int) -> list[str]:
    return list(
        ApiKey.unscoped_objects.filter(organisation_id=organisation_id).values_list(
            "name", flat=True
        )
    )


def _rejected(organisation_id: int, timeout: float = 10.0) -> RejectedRequest:
    """The refused call's row (written beside the request, so it may land just after)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = RejectedRequest.unscoped_objects.filter(organisation_id=organisation_id).first()
        if row is not None:
            return row
        time.sleep(0.02)
    raise AssertionError("the refused call was not recorded as a rejected request")


def _spend(organisation_id: int) -> Decimal:
    return Activity.unscoped_objects.filter(organisation_id=organisation_id).aggregate(
        total=Sum("cost_usd")
    )["total"]


def _calls(api_url: str, key: str) -> tuple[list[str], str, int, str]:
    """CALLS calls with the openai SDK (the last one streamed), then one with a misspelt
    model: (the calls' ids, the provider that served the first, the refusal's status
    and message)."""
    import openai

    ids, provider = [], ""
    with openai.OpenAI(base_url=api_url, api_key=key, max_retries=0) as sdk:
        for i in range(CALLS - 1):
            reply = sdk.chat.completions.create(
                model=TEST_MODEL, messages=[{"role": "user", "content": f"Question {i + 1}"}]
            )
            assert reply.choices[0].message.content
            ids.append(reply.id)
            provider = provider or reply.model_extra["provider"]
        stream = sdk.chat.completions.create(
            model=TEST_MODEL,
            messages=[{"role": "user", "content": "And a streamed one"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
        ids.append(chunks[0].id)
        with pytest.raises(openai.APIStatusError) as refused:
            sdk.chat.completions.create(
                model=MISSPELT, messages=[{"role": "user", "content": "Typo in the model"}]
            )
    assert 400 <= refused.value.status_code < 500
    return ids, provider, refused.value.status_code, refused.value.message


def test_the_newcomer_path(playwright_api, gateway, tenant):
    base = gateway.base_url
    org = tenant.organisation.id
    assert _keys(org) == ["Acme key"]  # the one make_tenant made; none is ours yet
    with browser_page(playwright_api) as (page, problems):
        # 1. The branded login page; a new customer lands on an empty Activity.
        page.goto(f"{base}/")
        page.wait_for_url(lambda url: "/login/" in url)
        assert page.inner_text("#login-card h1") == "Log in to UberLLM"
        assert page.locator("#forgot-password").is_visible()
        page.fill("#id_username", tenant.user.username)
        page.fill("#id_password", PASSWORD)
        docs_shot(page, "newcomer-1-login")
        page.click("#login-card button[type=submit]")
        page.wait_for_url(f"{base}/")
        assert tenant.user.username in page.inner_text("header .who")
        assert "No calls yet." in page.inner_text("#activity")

        # 2. A key: created (its secret shown once, after the redirect), then a reload
        # shows no secret and makes no second key.
        page.click("header nav >> text=API keys")
        page.wait_for_url(f"{base}/keys/")
        page.fill("#create-key input[name=name]", KEY_NAME)
        page.click("#create-key button[type=submit]")
        page.wait_for_selector("#new-key")
        assert page.url == f"{base}/keys/"  # redirected: the form is not the page shown
        key = page.inner_text("#new-key").strip()
        assert key.startswith("ullm_")
        assert "shown only once" in page.inner_text("#new-key-panel")
        assert page.locator("#keys tbody tr", has_text=KEY_NAME).count() == 1
        # The picture in the docs shows the key's shape, not a string secret scanners flag.
        page.eval_on_selector(
            "#new-key", "el => el.textContent = el.textContent.slice(0, 14) + '…'"
        )
        docs_shot(page, "newcomer-2-key-created")
        reloaded = page.reload()
        assert reloaded.request.method == "GET"  # post/redirect/get: nothing re-posted
        assert page.locator("#new-key").count() == 0
        assert key not in page.content()
        assert page.locator("#keys tbody tr[data-key-id]").count() == 2
        assert page.locator("#keys tbody tr", has_text=KEY_NAME).count() == 1
        assert sorted(on_db(_keys, org)) == sorted(["Acme key", KEY_NAME])

        # Real calls with that key: CALLS served, one refused (a misspelt model).
        ids, provider, status, message = _calls(gateway.api_url, key)
        on_db(wait_finished_rows, CALLS)
        rejected = on_db(_rejected, org)
        assert rejected.http_status == status and rejected.model_slug == MISSPELT
        spend = on_db(_spend, org)
        assert spend > 0

        # 3. Activity at 1366 px: every call with the new key, nothing clipped.
        page.click("header nav >> text=Activity")
        page.wait_for_url(f"{base}/")
        assert page.locator("#activity tr.call").count() == CALLS
        assert page.inner_text("#total-calls") == str(CALLS)
        for request_id in ids:
            row = page.locator(f'tr[data-request-id="{request_id}"]')
            assert row.locator("td.c-key").inner_text() == KEY_NAME
            assert row.locator("td.c-status").inner_text() == "success"
            assert row.locator("td.c-cost").inner_text().startswith("$0.0")
        assert overflowing(page) == []
        assert no_horizontal_overflow(page)
        docs_shot(page, "newcomer-3-activity-1366")

        # 4. The same session on a 390 px phone: ≥ 6 calls wholly on the first screen.
        with phone_page(page, problems) as phone:
            phone.goto(f"{base}/")
            assert phone.evaluate("() => window.innerWidth") == 390
            assert phone.locator("#activity tr.call").count() == CALLS
            assert not phone.locator("#totals").is_visible()  # folded behind "Totals"
            assert f"{CALLS} calls" in phone.inner_text("#totals-summary")
            shown = calls_on_first_screen(phone)
            assert shown >= 6, shown
            assert no_horizontal_overflow(phone)
            docs_shot(phone, "newcomer-4-activity-390")

        # 5. A call's page: who served it, each attempt, what it cost and saved.
        page.click(f'tr[data-request-id="{ids[0]}"] td.c-time a')
        page.wait_for_url(f"{base}/activity/{ids[0]}/")
        assert ids[0] in page.inner_text("h1")
        assert page.locator("#attempts tbody tr").count() >= 1
        assert provider in page.inner_text("#attempts")
        assert "below list" in page.inner_text("#savings-text")
        assert no_horizontal_overflow(page)
        docs_shot(page, "newcomer-5-call")

        # 6. The refused call: among the rejected requests, and its own page.
        page.goto(f"{base}/?status=rejected")
        row = page.locator(f'#rejected tr[data-rejected-id="{rejected.id}"]')
        assert str(status) in row.inner_text() and MISSPELT in row.inner_text()
        assert row.locator('td[data-label="Key"]').inner_text() == KEY_NAME
        row.locator("a.rejected-link").click()
        page.wait_for_url(f"{base}/activity/rejected/{rejected.id}/")
        assert page.inner_text("#rejected-status") == str(status)
        assert page.inner_text("#rejected-model") == MISSPELT
        assert page.inner_text("#rejected-key") == KEY_NAME
        shown = page.inner_text("#rejected-message")
        assert f"Unknown model '{MISSPELT}'" in shown and shown in message  # as the SDK said
        assert page.inner_text("#rejected-code") == rejected.code
        assert "not billed" in page.inner_text("main")
        docs_shot(page, "newcomer-6-rejected-call")

        # 7. Usage: the calls counted, the charts drawn, the key's line.
        page.click("header nav >> text=Usage")
        page.wait_for_url(f"{base}/usage/")
        page.wait_for_function("() => window.Chart && Chart.getChart('chart-daily') !== undefined")
        assert page.inner_text("#usage-calls") == str(CALLS)
        assert page.evaluate("() => Chart.getChart('chart-models').data.labels") == [TEST_MODEL]
        assert KEY_NAME in page.inner_text("#per-key")
        assert provider in page.inner_text("#per-provider")
        assert no_horizontal_overflow(page)
        docs_shot(page, "newcomer-7-usage")

        # 8. This month's statement: the calls and the ledger's exact spend, page and CSV.
        page.click("header nav >> text=Statement")
        page.wait_for_url(f"{base}/statement/")
        month = timezone.now().strftime("%Y-%m")
        assert page.inner_text("h1") == f"Statement {timezone.now():%B %Y}"
        assert page.inner_text("#line-calls td") == str(CALLS)
        exact = page.get_attribute("#line-spend_usd td", "data-exact")
        assert Decimal(exact) == spend
        assert page.inner_text("#line-spend_usd td").startswith("$0.0")
        assert TEST_MODEL in page.inner_text("#statement-models")
        assert no_horizontal_overflow(page)
        docs_shot(page, "newcomer-8-statement")
        href = page.get_attribute("#statement-csv", "href")
        assert href == f"/statement.csv?month={month}"
        download = page.request.get(f"{base}{href}")
        assert download.ok and download.headers["content-type"].startswith("text/csv")
        lines = {row[0]: row[1] for row in csv.reader(io.StringIO(download.text())) if row}
        assert lines["month"] == month and lines["calls"] == str(CALLS)
        assert Decimal(lines["spend_usd"]) == spend
    assert problems == []
