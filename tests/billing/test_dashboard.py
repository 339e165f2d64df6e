"""The dashboard: Activity filters, totals, pagination and CSV; Usage; API keys with spend
and limits; members; the staff spend report. Real database, Django test client."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from billing import auth
from billing.models import Activity, ApiKey, Membership
from billing.selectors import month_start
from billing.services import api_key_create, member_add

from ..support import make_tenant

pytestmark = pytest.mark.django_db

D = Decimal
JAN = datetime(2025, 1, 10, 12, 0, tzinfo=UTC)


def _row(tenant, request_id: str, *, api_key=None, **fields) -> Activity:
    values = {
        "model_slug": "m/x",
        "provider_slug": "alpha",
        "status": "success",
        "http_status": 200,
        "created_at": JAN,
        "prompt_tokens": 100,
        "cached_tokens": 10,
        "completion_tokens": 20,
        "cost_usd": D("0.001"),
        "ttft_ms": 300,
        "total_ms": 900,
        "attempt_count": 1,
        "routing_reason": "cheapest fast-enough",
        "prompt_bucket": "<8k",
        "stream": True,
    }
    values.update(fields)
    return Activity.objects.create(
        request_id=request_id,
        organisation=tenant.organisation,
        api_key=api_key or tenant.api_key,
        **values,
    )


def _login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _member(tenant, username: str = "plain", role: str = "member"):
    return member_add(organisation=tenant.organisation, username=username, role=role)


@pytest.fixture
def orgs():
    """Two organisations with known calls. A has two keys, two models, three providers."""
    a, b = make_tenant("OrgA"), make_tenant("OrgB")
    a.second_key, _ = api_key_create(organisation=a.organisation, name="ci")
    _row(a, "gen-a1", created_at=JAN, cost_usd=D("0.0010"), prompt_tokens=100)
    _row(
        a,
        "gen-a2",
        created_at=JAN + timedelta(days=1),
        model_slug="m/y",
        provider_slug="bravo",
        cost_usd=D("0.0020"),
        prompt_tokens=200,
        cached_tokens=50,
        completion_tokens=40,
    )
    _row(
        a,
        "gen-a3",
        created_at=JAN + timedelta(days=2),
        api_key=a.second_key,
        cost_usd=D("0.0040"),
        prompt_tokens=400,
        completion_tokens=80,
    )
    _row(
        a,
        "gen-a4",
        created_at=JAN + timedelta(days=3),
        status="error",
        http_status=502,
        provider_slug="charlie",
        cost_usd=D(0),
        completion_tokens=0,
        attempt_count=4,
    )
    _row(
        b, "gen-b1", created_at=JAN, cost_usd=D("9.0"), model_slug="m/secret", provider_slug="zulu"
    )
    return a, b


def _ids(response) -> set[str]:
    return {a.request_id for a in response.context["page"]}


def _csv(response) -> list[dict]:
    body = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(body)))


# --- Activity: filters, totals, pagination, CSV ------------------------------------------


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, {"gen-a1", "gen-a2", "gen-a3", "gen-a4"}),
        ({"date_from": "2025-01-11", "date_to": "2025-01-12"}, {"gen-a2", "gen-a3"}),
        ({"date_to": "2025-01-10"}, {"gen-a1"}),  # inclusive of the whole day
        ({"date_from": "2025-01-13"}, {"gen-a4"}),
        ({"model": "m/y"}, {"gen-a2"}),
        ({"provider": "charlie"}, {"gen-a4"}),
        ({"status": "error"}, {"gen-a4"}),
        ({"status": "success", "model": "m/x"}, {"gen-a1", "gen-a3"}),
        ({"request_id": "gen-a3"}, {"gen-a3"}),
    ],
)
def test_filters_narrow_rows_and_totals(orgs, params, expected):
    a, _ = orgs
    response = _login(a.user).get("/", params)
    assert response.status_code == 200
    assert _ids(response) == expected
    rows = list(Activity.unscoped_objects.filter(request_id__in=expected))
    totals = response.context["totals"]
    assert totals["calls"] == len(expected)
    assert totals["cost"] == sum((r.cost_usd for r in rows), D(0))
    assert totals["prompt"] == sum(r.prompt_tokens for r in rows)
    assert totals["cached"] == sum(r.cached_tokens for r in rows)
    assert totals["completion"] == sum(r.completion_tokens for r in rows)


def test_filter_by_key(orgs):
    a, _ = orgs
    client = _login(a.user)
    assert _ids(client.get("/", {"api_key": a.second_key.id})) == {"gen-a3"}
    response = client.get("/", {"api_key": a.api_key.id})
    assert _ids(response) == {"gen-a1", "gen-a2", "gen-a4"}
    assert response.context["totals"]["cost"] == D("0.0030")


def test_totals_equal_rows_shown_and_csv(orgs):
    a, _ = orgs
    client = _login(a.user)
    params = {"model": "m/x"}
    page = client.get("/", params)
    html = page.content.decode()
    shown = list(page.context["page"])
    totals = page.context["totals"]
    assert totals["calls"] == len(shown) == 3
    assert totals["cost"] == sum((r.cost_usd for r in shown), D(0)) == D("0.0050")
    assert 'id="total-cost"><span class="money" title="0.005 USD"' in html
    assert ">$0.005</span>" in html and 'id="total-calls">3<' in html
    rows = _csv(client.get("/activity.csv", params))
    assert len(rows) == totals["calls"]
    assert sum(D(r["cost_usd"]) for r in rows) == totals["cost"]
    assert sum(int(r["input_tokens"]) for r in rows) == totals["prompt"]
    assert sum(int(r["cached_tokens"]) for r in rows) == totals["cached"]
    assert sum(int(r["output_tokens"]) for r in rows) == totals["completion"]


def test_csv_export_content_and_scope(orgs):
    a, _ = orgs
    response = _login(a.user).get("/activity.csv")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = _csv(response)
    newest_first = ["gen-a4", "gen-a3", "gen-a2", "gen-a1"]
    assert [r["request_id"] for r in rows] == newest_first
    first = rows[-1]
    assert first["created_at_utc"] == "2025-01-10T12:00:00+00:00"
    assert first["model"] == "m/x" and first["provider"] == "alpha"
    assert first["api_key"] == "OrgA key" and first["status"] == "success"
    assert (first["input_tokens"], first["cached_tokens"], first["output_tokens"]) == (
        "100",
        "10",
        "20",
    )
    assert D(first["cost_usd"]) == D("0.001")
    assert (first["ttft_ms"], first["total_ms"], first["attempts"]) == ("300", "900", "1")
    assert first["routing_reason"] == "cheapest fast-enough"
    assert rows[0]["status"] == "error" and rows[0]["http_status"] == "502"
    assert {r["hedged"] for r in rows} == {"False"}
    body = "\n".join(",".join(r.values()) for r in rows)
    assert "gen-b1" not in body and "m/secret" not in body and "zulu" not in body


def test_csv_is_streamed_in_chunks_and_complete(orgs):
    a, _ = orgs
    for i in range(25):
        _row(a, f"gen-bulk-{i:02d}", created_at=JAN + timedelta(minutes=i))
    # Equal timestamps must not lose or repeat rows across chunk boundaries.
    for i in range(5):
        _row(a, f"gen-same-{i}", created_at=JAN + timedelta(days=5))
    from billing import selectors

    queryset = selectors.activity_list(organisation_id=a.organisation.id)
    ids = [row[0] for row in selectors.activity_csv_rows(queryset, chunk_size=4)]
    assert len(ids) == len(set(ids)) == 34
    assert ids == list(queryset.values_list("request_id", flat=True))


def test_csv_neutralises_spreadsheet_formulas(orgs):
    a, _ = orgs
    evil, _ = api_key_create(organisation=a.organisation, name='=HYPERLINK("http://x")')
    _row(a, "gen-evil", api_key=evil)
    rows = _csv(_login(a.user).get("/activity.csv", {"request_id": "gen-evil"}))
    assert rows[0]["api_key"] == '\'=HYPERLINK("http://x")'


def test_invalid_filter_shows_nothing_and_csv_is_400(orgs):
    a, _ = orgs
    client = _login(a.user)
    response = client.get("/", {"date_from": "not-a-date"})
    assert response.status_code == 200 and _ids(response) == set()
    assert response.context["totals"]["calls"] == 0
    assert "filter-errors" in response.content.decode()
    assert client.get("/activity.csv", {"status": "bogus"}).status_code == 400


def test_pagination_keeps_filters(orgs):
    a, _ = orgs
    for i in range(60):
        _row(a, f"gen-p{i:02d}", model_slug="m/paged", created_at=JAN + timedelta(minutes=i))
    client = _login(a.user)
    first = client.get("/", {"model": "m/paged"})
    html = first.content.decode()
    assert first.context["totals"]["calls"] == 60 and len(first.context["page"]) == 50
    assert 'href="?model=m%2Fpaged&amp;page=2"' in html
    second = client.get("/", {"model": "m/paged", "page": 2})
    assert len(second.context["page"]) == 10
    assert all(a.model_slug == "m/paged" for a in second.context["page"])
    assert 'href="?model=m%2Fpaged&amp;page=1"' in second.content.decode()
    # The CSV link carries the filters but not the page.
    assert 'href="/activity.csv?model=m%2Fpaged"' in second.content.decode()


def test_activity_page_shows_the_columns(orgs):
    a, _ = orgs
    html = _login(a.user).get("/", {"request_id": "gen-a4"}).content.decode()
    for header in (
        "Model",
        "Provider",
        "Input",
        "Output",
        "Cost",
        "Saved vs list",
        "TTFT",
        "Status",
        "Routing",
        "Key",
    ):
        assert f">{header}</th>" in html
    # Secondary columns are there, hidden until "All columns" is ticked.
    for header in ("Cached", "Total", "Attempts", "Hedged"):
        assert f'class="extra">{header}</th>' in html or f'extra">{header}</th>' in html
    assert "charlie" in html and "error (502)" in html and "cheapest fast-enough" in html
    assert '<td data-label="Hedged" class="extra">no</td>' in html


def test_activity_detail_shows_routing_and_attempts(orgs):
    from billing.models import Attempt

    a, _ = orgs
    activity = Activity.unscoped_objects.get(request_id="gen-a4")
    Attempt.objects.create(
        activity=activity,
        attempt_no=1,
        provider_slug="alpha",
        outcome="http_error",
        http_status=502,
        reason="cheapest",
    )
    Attempt.objects.create(
        activity=activity, attempt_no=2, provider_slug="bravo", outcome="timeout", reason="retry"
    )
    html = _login(a.user).get("/activity/gen-a4/").content.decode()
    assert "cheapest fast-enough" in html and "http_error" in html and "timeout" in html
    assert "<th>Hedged</th><td>no</td>" in html


def test_hedged_calls_are_marked(orgs):
    from billing.models import Attempt

    a, _ = orgs
    hedged = _row(a, "gen-hedged", hedged=True, prompt_bucket=">128k")
    Attempt.objects.create(
        activity=hedged, attempt_no=1, provider_slug="alpha", outcome="cancelled", hedge_leg=True
    )
    client = _login(a.user)
    row = client.get("/", {"request_id": "gen-hedged"}).content.decode()
    assert '<td data-label="Hedged" class="extra">yes</td>' in row
    assert _csv(client.get("/activity.csv", {"request_id": "gen-hedged"}))[0]["hedged"] == "True"
    detail = client.get("/activity/gen-hedged/").content.decode()
    assert "<th>Hedged</th><td>yes</td>" in detail and ">hedge</span>" in detail


# --- Tenant isolation on every page and filter ---------------------------------------------


def test_filters_cannot_reach_another_organisation(orgs):
    a, b = orgs
    client = _login(a.user)
    by_key = client.get("/", {"api_key": b.api_key.id})
    assert _ids(by_key) == set() and by_key.context["totals"]["calls"] == 0
    assert client.get("/activity.csv", {"api_key": b.api_key.id}).status_code == 400
    by_id = client.get("/", {"request_id": "gen-b1"})
    assert _ids(by_id) == set() and by_id.context["totals"]["cost"] == 0
    assert _csv(client.get("/activity.csv", {"request_id": "gen-b1"})) == []
    assert client.get("/activity/gen-b1/").status_code == 404
    for param in ("model", "provider"):  # B's values are not even choices
        value = {"model": "m/secret", "provider": "zulu"}[param]
        assert _ids(client.get("/", {param: value})) == set()
    page = client.get("/").content.decode()
    assert "m/secret" not in page and "zulu" not in page and "OrgB key" not in page


def test_usage_page_is_scoped(orgs):
    a, _ = orgs
    response = _login(a.user).get("/usage/", {"date_from": "2025-01-01", "date_to": "2025-01-31"})
    html = response.content.decode()
    assert response.context["totals"]["cost"] == D("0.0070")
    assert "m/secret" not in html and "zulu" not in html


def test_keys_page_is_scoped_and_limit_of_other_org_is_404(orgs):
    a, b = orgs
    client = _login(a.user)
    html = client.get("/keys/").content.decode()
    assert b.api_key.prefix not in html and "OrgB key" not in html
    response = client.post(f"/keys/{b.api_key.id}/limit/", {"monthly_limit_usd": "1"})
    assert response.status_code == 404
    assert ApiKey.unscoped_objects.get(id=b.api_key.id).monthly_limit_usd is None


def test_members_page_is_scoped(orgs):
    a, b = orgs
    _member(b, "b-member")
    client = _login(a.user)
    html = client.get("/members/").content.decode()
    assert "orga-owner" in html and "orgb-owner" not in html and "b-member" not in html
    b_membership = Membership.unscoped_objects.get(user=b.user)
    assert client.post(f"/members/{b_membership.id}/remove/").status_code == 404
    assert client.post(f"/members/{b_membership.id}/role/", {"role": "member"}).status_code == 404
    assert Membership.unscoped_objects.filter(id=b_membership.id, role="owner").exists()


@pytest.mark.parametrize("url", ["/", "/usage/", "/keys/", "/members/", "/activity.csv"])
def test_every_page_needs_login_and_an_organisation(url):
    assert Client().get(url).status_code == 302
    loner = get_user_model().objects.create_user("loner", password="pw-123456789")
    assert _login(loner).get(url).status_code == 403


# --- Usage -----------------------------------------------------------------------------------


def test_usage_per_day_and_per_model(orgs):
    a, _ = orgs
    response = _login(a.user).get("/usage/", {"date_from": "2025-01-09", "date_to": "2025-01-12"})
    assert response.status_code == 200
    days = {
        row["day"].isoformat(): (row["calls"], row["cost"]) for row in response.context["per_day"]
    }
    assert days == {
        "2025-01-09": (0, D(0)),
        "2025-01-10": (1, D("0.0010")),
        "2025-01-11": (1, D("0.0020")),
        "2025-01-12": (1, D("0.0040")),
    }
    models = {
        r["model_slug"]: (r["calls"], r["cost"], r["prompt"]) for r in response.context["per_model"]
    }
    assert models == {"m/x": (2, D("0.0050"), 500), "m/y": (1, D("0.0020"), 200)}
    dearest_first = [r["model_slug"] for r in response.context["per_model"]]
    assert dearest_first == ["m/x", "m/y"]
    html = response.content.decode()
    data = html.split('<script id="usage-data" type="application/json">')[1].split("</script>")[0]
    chart = json.loads(data)  # what the page hands to Chart.js
    assert chart["days"] == ["2025-01-09", "2025-01-10", "2025-01-11", "2025-01-12"]
    assert chart["dailyCost"] == [0.0, 0.001, 0.002, 0.004]
    assert 'id="usage-data"' in html and "vendor/chartjs/chart.umd.min.js" in html
    day_row = '<tr data-day="2025-01-11"><td data-label="Day (UTC)">2025-01-11</td>'
    assert day_row + '<td class="num" data-label="Calls">1</td>' in html


def test_usage_ttft_medians_per_bucket_and_provider(orgs):
    a, b = orgs
    day = JAN + timedelta(days=20)
    for i, ms in enumerate([100, 300, 200]):
        _row(a, f"gen-t-a-small-{i}", created_at=day, ttft_ms=ms)
    for i, ms in enumerate([1000, 3000]):
        _row(a, f"gen-t-a-big-{i}", created_at=day, ttft_ms=ms, prompt_bucket="32k-128k")
    _row(a, "gen-t-b-small", created_at=day, ttft_ms=500, provider_slug="bravo")
    # Counted: not streamed, failed (a TTFT was measured). Not: no TTFT, another org.
    _row(a, "gen-t-nostream", created_at=day, ttft_ms=1, stream=False)
    _row(a, "gen-t-error", created_at=day, ttft_ms=1, status="error")
    _row(a, "gen-t-none", created_at=day, ttft_ms=None)
    _row(b, "gen-t-other", created_at=day, ttft_ms=1)
    response = _login(a.user).get("/usage/", {"date_from": "2025-01-30", "date_to": "2025-01-31"})
    rows = {r["provider"]: r["cells"] for r in response.context["ttft_rows"]}
    assert set(rows) == {"alpha", "bravo"}
    # Every call that measured a TTFT counts (streamed or not, whatever its outcome):
    # alpha <8k is [1, 1, 100, 200, 300]; nearest-rank p50 = 100, p90 = 300.
    assert rows["alpha"] == [
        {"median_ms": 100, "p90_ms": 300, "calls": 5},
        None,
        {"median_ms": 1000, "p90_ms": 3000, "calls": 2},
        None,
    ]
    assert rows["bravo"] == [{"median_ms": 500, "p90_ms": 500, "calls": 1}, None, None, None]
    chart = response.context["chart"]
    assert chart["buckets"] == ["<8k", "8k-32k", "32k-128k", ">128k"]
    assert {
        "provider": "alpha",
        "medians": [100, None, 1000, None],
        "p90s": [300, None, 3000, None],
    } in chart["ttft"]


def test_usage_defaults_to_the_last_30_days():
    a = make_tenant("Recent")
    now = datetime.now(UTC)
    _row(a, "gen-now", created_at=now, cost_usd=D("0.5"))
    _row(a, "gen-old", created_at=now - timedelta(days=45), cost_usd=D("7"))
    response = _login(a.user).get("/usage/")
    assert len(response.context["per_day"]) == 30
    assert response.context["totals"]["cost"] == D("0.5")


# --- API keys: spend, last used, monthly limit ----------------------------------------------


def test_keys_page_shows_spend_and_last_used():
    a = make_tenant("Spend")
    now = datetime.now(UTC)
    _row(a, "gen-m1", created_at=now, cost_usd=D("0.25"))
    _row(a, "gen-m2", created_at=month_start(now), cost_usd=D("0.50"))
    _row(a, "gen-old", created_at=month_start(now) - timedelta(seconds=1), cost_usd=D("2"))
    ApiKey.unscoped_objects.filter(id=a.api_key.id).update(
        last_used_at=datetime(2025, 3, 4, 5, 6, tzinfo=UTC)
    )
    unused, _ = api_key_create(organisation=a.organisation, name="unused")
    response = _login(a.user).get("/keys/")
    keys = {k.id: k for k in response.context["keys"]}
    assert keys[a.api_key.id].spend_month == D("0.75")
    assert keys[a.api_key.id].spend_total == D("2.75")
    assert keys[a.api_key.id].calls_total == 3
    assert keys[unused.id].spend_month == 0 and keys[unused.id].spend_total == 0
    html = response.content.decode()
    assert "$0.75" in html and "$2.75" in html and "2025-03-04 05:06" in html
    assert "never" in html


def test_owner_sets_and_clears_monthly_limit():
    a = make_tenant("Limits")
    auth._cache[a.api_key.prefix] = (float("inf"), None)  # a stale gateway cache entry
    client = _login(a.user)
    response = client.post(f"/keys/{a.api_key.id}/limit/", {"monthly_limit_usd": "12.50"})
    assert response.status_code == 302
    assert ApiKey.unscoped_objects.get(id=a.api_key.id).monthly_limit_usd == D("12.50")
    assert a.api_key.prefix not in auth._cache  # the gateway sees the new limit at once
    assert 'value="12.50"' in client.get("/keys/").content.decode()
    client.post(f"/keys/{a.api_key.id}/limit/", {"monthly_limit_usd": ""})
    assert ApiKey.unscoped_objects.get(id=a.api_key.id).monthly_limit_usd is None
    client.post(f"/keys/{a.api_key.id}/limit/", {"monthly_limit_usd": "-1"})
    assert ApiKey.unscoped_objects.get(id=a.api_key.id).monthly_limit_usd is None


def test_member_cannot_edit_limit_create_or_revoke_keys():
    a = make_tenant("Plain")
    client = _login(_member(a))
    assert client.get("/keys/").status_code == 200
    assert (
        client.post(f"/keys/{a.api_key.id}/limit/", {"monthly_limit_usd": "1"}).status_code == 403
    )
    assert client.post("/keys/", {"name": "x"}).status_code == 403
    assert client.post(f"/keys/{a.api_key.id}/revoke/").status_code == 403
    key = ApiKey.unscoped_objects.get(id=a.api_key.id)
    assert key.monthly_limit_usd is None and key.revoked_at is None
    assert ApiKey.unscoped_objects.filter(organisation=a.organisation).count() == 1
    assert "monthly_limit_usd" not in client.get("/keys/").content.decode()


def test_new_key_is_shown_once():
    a = make_tenant("Once")
    client = _login(a.user)
    response = client.post("/keys/", {"name": "deploy"}, follow=True)
    key = response.context["new_key"]["key"]
    assert key.startswith("ullm_") and key in response.content.decode()
    assert key not in client.get("/keys/").content.decode()
    assert client.post("/keys/", {"name": ""}).status_code == 400


# --- Members -----------------------------------------------------------------------------------


# Inviting members: tests/trust/test_invitations.py.


def test_owner_changes_roles_and_removes_members():
    a = make_tenant("Team")
    plain = _member(a, "plain")
    membership = Membership.unscoped_objects.get(user=plain)
    client = _login(a.user)
    client.post(f"/members/{membership.id}/role/", {"role": "owner"})
    assert Membership.unscoped_objects.get(id=membership.id).role == "owner"
    client.post(f"/members/{membership.id}/role/", {"role": "member"})
    assert Membership.unscoped_objects.get(id=membership.id).role == "member"
    client.post(f"/members/{membership.id}/remove/")
    assert not Membership.unscoped_objects.filter(id=membership.id).exists()


def test_last_owner_cannot_be_removed_or_demoted():
    a = make_tenant("Solo")
    owner = Membership.unscoped_objects.get(user=a.user)
    client = _login(a.user)
    response = client.post(f"/members/{owner.id}/remove/", follow=True)
    assert "last owner" in response.content.decode()
    response = client.post(f"/members/{owner.id}/role/", {"role": "member"}, follow=True)
    assert "at least one owner" in response.content.decode()
    assert Membership.unscoped_objects.get(id=owner.id).role == "owner"
    # With a second owner, the first may step down.
    second = Membership.unscoped_objects.get(user=_member(a, "second", role="owner"))
    client.post(f"/members/{owner.id}/role/", {"role": "member"})
    assert Membership.unscoped_objects.get(id=owner.id).role == "member"
    assert _login(second.user).post(f"/members/{second.id}/remove/").status_code == 302
    assert Membership.unscoped_objects.filter(id=second.id).exists()  # now the last owner


def test_member_cannot_manage_members():
    a = make_tenant("Team")
    plain = _member(a, "plain")
    owner = Membership.unscoped_objects.get(user=a.user)
    client = _login(plain)
    assert client.get("/members/").status_code == 200
    assert (
        client.post(
            "/members/", {"username": "x", "password": "pw-123456789", "role": "owner"}
        ).status_code
        == 403
    )
    assert client.post(f"/members/{owner.id}/remove/").status_code == 403
    mine = Membership.unscoped_objects.get(user=plain)
    assert client.post(f"/members/{mine.id}/role/", {"role": "owner"}).status_code == 403
    assert Membership.unscoped_objects.get(id=mine.id).role == "member"
    assert not get_user_model().objects.filter(username="x").exists()


# --- Staff admin -------------------------------------------------------------------------------


def test_admin_shows_every_organisations_spend(orgs):
    a, b = orgs
    now = datetime.now(UTC)
    _row(b, "gen-b-now", created_at=now, cost_usd=D("1.5"))
    staff = get_user_model().objects.create_user(
        "staff", password="pw-123456789", is_staff=True, is_superuser=True
    )
    client = _login(staff)
    changelist = client.get("/admin/billing/organisation/")
    assert changelist.status_code == 200
    html = changelist.content.decode()
    assert "$10.50" in html and "$1.50" in html and "$0.007" in html
    report = client.get("/admin/billing/organisation/spend/")
    assert report.status_code == 200
    rows = {org.slug: org for org in report.context["rows"]}
    assert rows[b.organisation.slug].spend_month == D("1.5")
    assert rows[b.organisation.slug].spend_total == D("10.5")
    assert rows[a.organisation.slug].spend_total == D("0.007")
    assert report.context["totals"]["spend_total"] == D("10.507")
    page = report.content.decode()  # one dollar sign: "$10.51", never "$$10.51"
    assert "$$" not in page and "$10.51" in page and "$0.007" in page
    # Customers (not staff) never reach it.
    assert _login(a.user).get("/admin/billing/organisation/spend/").status_code == 302
    assert client.get("/admin/billing/activity/").status_code == 200
    assert client.get("/admin/billing/apikey/").status_code == 200
    assert client.get(f"/admin/billing/organisation/{a.organisation.id}/change/").status_code == 200


def test_usage_range_is_bounded_and_bad_dates_are_errors(orgs):
    a, _ = orgs
    client = _login(a.user)
    wide = client.get("/usage/", {"date_from": "2020-01-01", "date_to": "2025-01-31"})
    assert len(wide.context["per_day"]) == 366 and wide.context["clamped"]
    assert wide.context["per_day"][-1]["day"].isoformat() == "2025-01-31"
    for params in ({"date_to": "9999-12-31"}, {"date_from": "2025-02-01", "date_to": "2025-01-01"}):
        assert client.get("/usage/", params).status_code == 200
        activity = client.get("/", params)
        assert activity.status_code == 200 and activity.context["totals"]["calls"] == 0
