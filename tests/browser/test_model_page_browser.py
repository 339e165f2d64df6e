"""The public model page and a call's kept bodies in Chromium: no table wider than its
box at 1366 px, nothing scrolling sideways at 390 px. Rendered by the Django test
client and served to Chromium as tests/browser/test_layout_browser.py does; the
screenshots go to docs/img/ (referenced from docs/dashboard.md)."""

from __future__ import annotations

import orjson
import pytest
from django.test import Client
from django.utils import timezone

from billing.bodies import CallBodies
from billing.models import Attempt
from billing.services import call_bodies_store, organisation_set_body_logging
from routing.model_page import forget_model_pages
from routing.models import SpeedSample

from ..dashboard.helpers import finished_call, install_test_catalog, login
from ..support import TEST_MODEL, make_tenant
from .helpers import ORIGIN, browser_page, docs_shot, no_horizontal_overflow, overflowing, serve

pytestmark = pytest.mark.django_db
MODEL_PAGE = f"/models/{TEST_MODEL}"
REQUEST = {
    "model": TEST_MODEL,
    "messages": [
        {"role": "system", "content": "You are terse."},
        {
            "role": "user",
            "content": "Summarise the attached incident report in three bullet points; "
            "its API key was sk-proj-abcdefghijklmnopqrstuvwxyz0123.",
        },
    ],
    "max_tokens": 300,
}
REPLY = {
    "object": "chat.completion",
    "choices": [
        {
            "message": {
                "role": "assistant",
                "content": "- Outage 09:12-09:40 UTC\n- Cause: an expired certificate\n"
                "- Fix: rotation automated",
            }
        }
    ],
}


def _json(value: dict) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def _pages() -> dict[str, str]:
    forget_model_pages()
    endpoints = install_test_catalog()
    for endpoint, bucket, ttft in (
        ("alpha", "<8k", 420),
        ("bravo", "<8k", 310),
        ("alpha", "32k-128k", 2400),
    ):
        SpeedSample.objects.create(endpoint=endpoints[endpoint], bucket=bucket, ttft_ms=ttft)
    tenant = make_tenant("Acme")
    organisation_set_body_logging(
        organisation=tenant.organisation, log_bodies=True, retention_days=7
    )
    call = finished_call(
        tenant,
        "gen-bodies",
        endpoint=endpoints["alpha"],
        prompt=1200,
        completion=80,
        created_at=timezone.now(),
    )
    for no, (provider, outcome, status) in enumerate(
        [("bravo", "http_error", 503), ("alpha", "success", 200)], start=1
    ):
        Attempt.objects.create(
            activity=call,
            attempt_no=no,
            endpoint=endpoints[provider],
            provider_slug=provider,
            outcome=outcome,
            http_status=status,
            reason="cheapest fast-enough" if no == 1 else "retry",
        )
    bodies = CallBodies(
        tenant.organisation.id, call.request_id, _json(REQUEST), _json(REPLY), call.created_at
    )
    call_bodies_store(bodies=[bodies])
    pages = {path: Client().get(path).content.decode() for path in ("/models/", MODEL_PAGE)}
    pages["/activity/gen-bodies/"] = (
        login(tenant.user).get("/activity/gen-bodies/").content.decode()
    )
    return pages


def test_model_page_and_call_bodies_fit(playwright_api):
    pages = _pages()
    with browser_page(playwright_api) as (page, _):
        page.route(f"{ORIGIN}/**", serve(pages))
        for path, shot in ((MODEL_PAGE, "model-page-1366"), ("/activity/gen-bodies/", None)):
            page.goto(f"{ORIGIN}{path}")
            assert overflowing(page) == [] and no_horizontal_overflow(page), path
            if shot:
                docs_shot(page, shot)
        page.locator("#bodies").scroll_into_view_if_needed()
        docs_shot(page, "call-bodies-1366")
    with browser_page(playwright_api, width=390, height=844, touch=True) as (page, _):
        page.route(f"{ORIGIN}/**", serve(pages))
        for path in pages:
            page.goto(f"{ORIGIN}{path}")
            assert no_horizontal_overflow(page), path
