"""``GET /api/v1/activity?include_rejected=true``: calls and refused requests in one
cursor-paginated listing, newest first (docs/dashboard.md, "API: GET /api/v1/activity")."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client

from ..support import make_tenant
from .helpers import JAN
from .test_rejected_and_api import _api, _calls, _reject

pytestmark = pytest.mark.django_db(transaction=True)  # the API authenticates in a thread


def _all_pages(tenant, limit: int, **params) -> tuple[list[dict], dict]:
    rows, cursor = [], None
    while True:
        page = _api(tenant, limit=limit, **params, **({"cursor": cursor} if cursor else {}))
        assert page.status_code == 200, page.content
        body = page.json()
        rows += body["data"]
        if not body["has_more"]:
            assert body["next_cursor"] is None
            return rows, body["totals"]
        cursor = body["next_cursor"]


def _order_key(row: dict) -> tuple:
    return (row["created_at"], row["kind"] == "call", int(row["id"].split("-")[-1]))


@pytest.mark.parametrize("limit", [1, 2, 3, 5, 100])
def test_calls_and_rejections_come_in_one_listing_each_once_newest_first(limit):
    a, b = make_tenant("Mixed"), make_tenant("Other")
    _calls(a, 7)  # minutes 0, 0, 1, 1, 2, 2, 3
    for i in range(5):  # minutes 0, 0, 1, 1, 2: instants shared with calls
        _reject(a, created_at=JAN + timedelta(minutes=i // 2))
    _reject(b, message="B's secret error")
    rows, totals = _all_pages(a, limit, include_rejected="true")
    assert len(rows) == 12 and len({(r["kind"], r["id"]) for r in rows}) == 12
    assert rows == sorted(rows, key=_order_key, reverse=True)
    assert [r["kind"] for r in rows[:3]] == ["call", "call", "call"]  # minute 3, then 2
    assert "B's secret error" not in str(rows)
    assert (totals["calls"], totals["rejected"]) == (7, 5)
    assert totals["total_cost"] == "0.00014133"


def test_without_it_or_false_only_calls_are_listed():
    tenant = make_tenant("Mixed")
    _calls(tenant, 2)
    _reject(tenant)
    for params in ({}, {"include_rejected": "false"}):
        rows, totals = _all_pages(tenant, 10, **params)
        assert {r["kind"] for r in rows} == {"call"} and "rejected" not in totals


def test_filters_apply_to_both_and_a_provider_selects_no_rejection():
    tenant = make_tenant("Mixed")
    _calls(tenant, 2)
    _reject(tenant, model_slug="m/x")
    _reject(tenant, model_slug="m/other")
    rows, totals = _all_pages(tenant, 10, include_rejected="true", model="m/x")
    assert [r["kind"] for r in rows].count("rejected") == 1 and totals["rejected"] == 1
    rows, totals = _all_pages(tenant, 10, include_rejected="true", request_id="gen-001")
    assert [r["id"] for r in rows] == ["gen-001"] and totals["rejected"] == 0


def test_a_calls_only_cursor_is_understood():
    tenant = make_tenant("Mixed")
    _calls(tenant, 3)
    _reject(tenant, created_at=JAN - timedelta(days=1))
    first = _api(tenant, limit=1).json()
    rows, _ = _all_pages(tenant, 10, include_rejected="true", cursor=first["next_cursor"])
    assert [r["kind"] for r in rows] == ["call", "call", "rejected"]


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"include_rejected": "maybe"}, "true or false"),
        ({"include_rejected": "true", "status": "success"}, "no call status"),
        ({"include_rejected": "true", "cursor": "!!!"}, "Invalid cursor"),
    ],
)
def test_bad_input_is_a_clean_400(params, words):
    tenant = make_tenant("Mixed")
    response = _api(tenant, **params)
    assert response.status_code == 400
    assert words in response.json()["error"]["message"]


def test_status_rejected_wins_over_include_rejected():
    tenant = make_tenant("Mixed")
    _calls(tenant, 2)
    _reject(tenant)
    rows, totals = _all_pages(tenant, 10, include_rejected="true", status="rejected")
    assert [r["kind"] for r in rows] == ["rejected"] and totals["calls"] == 0


def test_the_openapi_schema_names_the_parameter():
    assert "include_rejected" in Client().get("/api/v1/openapi.json").content.decode()
