"""Rejected requests (service, selector, page, CSV) and /api/v1/activity (cursor
pagination, money as exact strings, clean OpenAI-shaped 400s)."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client

from billing import selectors
from billing.forms import ActivityFilterForm
from billing.models import Activity, RejectedRequest
from billing.services import record_rejected_request

from ..support import make_tenant
from .helpers import JAN, login

pytestmark = pytest.mark.django_db


def _reject(tenant, **fields) -> RejectedRequest:
    values = {
        "organisation_id": tenant.organisation.id,
        "api_key_id": tenant.api_key.id,
        "status": 400,
        "code": "invalid_request_error",
        "message": "messages is required",
        "model_slug": "test/model-a",
        "created_at": JAN,
    }
    values.update(fields)
    return record_rejected_request(**values)


def test_rejected_service_and_selector_are_scoped():
    a, b = make_tenant("RejA"), make_tenant("RejB")
    _reject(a)
    _reject(
        a,
        status=402,
        code="spend_limit",
        message="monthly limit reached",
        created_at=JAN + timedelta(days=2),
    )
    _reject(b, message="B's secret error")
    record_rejected_request(
        organisation_id=None,
        api_key_id=None,
        status=401,
        code="invalid_api_key",
        message="x",
        created_at=JAN,
    )
    rows = list(selectors.rejected_list(organisation_id=a.organisation.id))
    assert [(r.http_status, r.code) for r in rows] == [
        (402, "spend_limit"),
        (400, "invalid_request_error"),
    ]
    assert selectors.rejected_list(organisation_id=None).count() == 0
    form = ActivityFilterForm(
        {"status": "rejected", "date_from": "2025-01-11"}, organisation_id=a.organisation.id
    )
    assert form.is_valid() and form.rejected
    filtered = selectors.rejected_list(organisation_id=a.organisation.id, filters=form.filters())
    assert [r.http_status for r in filtered] == [402]


def test_rejected_filter_on_activity_page_and_csv():
    a, b = make_tenant("RejA"), make_tenant("RejB")
    _reject(a, message="messages: field required")
    _reject(b, message="B-only error")
    client = login(a.user)
    page = client.get("/", {"status": "rejected"})
    html = page.content.decode()
    assert page.status_code == 200 and 'id="rejected"' in html
    assert "messages: field required" in html and "invalid_request_error" in html
    assert "RejA key" in html and "B-only error" not in html
    assert 'id="total-rejected">1<' in html
    rows = list(
        csv.DictReader(
            io.StringIO(
                b"".join(
                    client.get("/activity.csv", {"status": "rejected"}).streaming_content
                ).decode()
            )
        )
    )
    assert [(r["http_status"], r["code"], r["api_key"]) for r in rows] == [
        ("400", "invalid_request_error", "RejA key")
    ]
    # The normal view does not list them as calls.
    assert 'id="rejected"' not in client.get("/").content.decode()


def test_rejected_detail_page_shows_the_request_to_its_organisation_only():
    a, b = make_tenant("RejA"), make_tenant("RejB")
    rejected = _reject(
        a,
        status=404,
        code="model_not_found",
        message="No model deepseek/deepseek-v4",
        model_slug="deepseek/deepseek-v4",
        param="model",
    )
    client = login(a.user)
    url = f"/activity/rejected/{rejected.id}/"
    assert f'href="{url}"' in client.get("/", {"status": "rejected"}).content.decode()
    page = client.get(url)
    html = page.content.decode()
    assert page.status_code == 200
    for text in (
        'id="rejected-time">2025-01-10 12:00:00<',
        'id="rejected-key">RejA key<',
        'id="rejected-model" class="wrap">deepseek/deepseek-v4<',
        'id="rejected-status">404<',
        'id="rejected-code">model_not_found<',
        "No model deepseek/deepseek-v4",
        'id="rejected-param">model<',
    ):
        assert text in html, text
    assert login(b.user).get(url).status_code == 404
    assert client.get("/activity/rejected/999999/").status_code == 404


def _api(tenant, **params):
    return Client().get("/api/v1/activity", params, HTTP_AUTHORIZATION=f"Bearer {tenant.key}")


def _calls(tenant, count: int) -> None:
    for i in range(count):
        Activity.objects.create(
            request_id=f"gen-{i:03d}",
            organisation=tenant.organisation,
            api_key=tenant.api_key,
            model_slug="m/x",
            status="success",
            cost_usd=Decimal("0.0000201900"),
            created_at=JAN + timedelta(minutes=i // 2),  # pairs share a timestamp
        )


# The API authenticates in the gateway's thread pool: the rows must be committed.
api_db = pytest.mark.django_db(transaction=True)


@api_db
def test_api_activity_cursor_pagination_and_decimals():
    tenant = make_tenant("Api")
    _calls(tenant, 7)
    seen, cursor, pages = [], None, 0
    while True:
        body = _api(tenant, limit=3, **({"cursor": cursor} if cursor else {})).json()
        pages += 1
        seen += [row["id"] for row in body["data"]]
        if not body["has_more"]:
            assert body["next_cursor"] is None
            break
        cursor = body["next_cursor"]
    assert pages == 3
    assert seen == [f"gen-{i:03d}" for i in reversed(range(7))]  # newest first, no repeat
    body = _api(tenant, limit=1).json()
    assert body["data"][0]["total_cost"] == "0.00002019"
    assert body["totals"]["total_cost"] == "0.00014133"
    assert body["totals"]["calls"] == 7


@api_db
@pytest.mark.parametrize(
    ("params", "param", "words"),
    [
        ({"date_from": "2025-13-45"}, "date_from", "Enter a valid date"),
        ({"limit": "0"}, "limit", "from 1 to 500"),
        ({"cursor": "!!!"}, "cursor", "Invalid cursor"),
    ],
)
def test_api_bad_input_is_a_clean_openai_error(params, param, words):
    tenant = make_tenant("Api")
    response = _api(tenant, **params)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == param and words in error["message"]
    assert error["type"] == "invalid_request_error"
    assert "ErrorDetail" not in error["message"] and "{" not in error["message"]


@api_db
def test_api_needs_a_key():
    response = Client().get("/api/v1/activity")
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"


@api_db
def test_api_lists_rejected_requests_scoped_and_paginated():
    a, b = make_tenant("Api"), make_tenant("Other")
    _calls(a, 2)
    for i in range(5):
        _reject(a, created_at=JAN + timedelta(minutes=i // 2), param="model" if i == 4 else "")
    _reject(b, message="B's secret error")
    assert all(row["kind"] == "call" for row in _api(a).json()["data"])
    seen, cursor = [], None
    while True:
        body = _api(a, status="rejected", limit=2, **({"cursor": cursor} if cursor else {})).json()
        seen += body["data"]
        if not body["has_more"]:
            break
        cursor = body["next_cursor"]
    assert body["totals"]["rejected"] == 5 and body["totals"]["calls"] == 0
    assert len({row["id"] for row in seen}) == 5
    assert {row["kind"] for row in seen} == {"rejected"}
    assert "B's secret error" not in str(seen)
    newest = seen[0]
    assert newest["id"].startswith("rej-") and newest["param"] == "model"
    assert (newest["http_status"], newest["code"], newest["total_cost"]) == (
        400,
        "invalid_request_error",
        "0",
    )
    assert [row["created_at"] for row in seen] == sorted(
        (row["created_at"] for row in seen), reverse=True
    )
    assert seen[-1]["param"] is None
