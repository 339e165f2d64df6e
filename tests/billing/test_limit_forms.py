"""Limits set on the dashboard: a key's limits at creation, the organisation's limits
and alert webhook (owners only), this month's spend alerts listed (issue 12)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

from billing.alerts import spend_alert_raise
from billing.models import ApiKey, Organisation, SpendAlert
from billing.selectors import month_start
from billing.services import member_add
from providers.models import Model

from ..dashboard.helpers import install_test_catalog
from ..support import make_tenant

pytestmark = pytest.mark.django_db


def _login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_key_is_created_with_its_limits():
    install_test_catalog()  # the allowed models must be catalog slugs
    Model.objects.create(slug="test/model-b", name="Test model B")
    a = make_tenant("Create")
    expires = (timezone.now() + timedelta(days=30)).astimezone(UTC).replace(microsecond=0)
    response = _login(a.user).post(
        "/keys/",
        {
            "name": "ci",
            "monthly_limit_usd": "20",
            "daily_limit_usd": "2.50",
            "expires_at": expires.strftime("%Y-%m-%dT%H:%M"),
            "allowed_models": "test/model-a, test/model-b",
            "rate_limit_rpm": "60",
            "rate_limit_tpm": "100000",
            "max_concurrent": "4",
        },
        follow=True,
    )
    assert response.status_code == 200 and response.context["new_key"]
    key = ApiKey.unscoped_objects.get(organisation=a.organisation, name="ci")
    assert (key.monthly_limit_usd, key.daily_limit_usd) == (Decimal("20"), Decimal("2.50"))
    assert key.expires_at == expires.replace(second=0)
    assert key.allowed_models == ["test/model-a", "test/model-b"]
    assert (key.rate_limit_rpm, key.rate_limit_tpm, key.max_concurrent) == (60, 100000, 4)
    html = _login(a.user).get("/keys/").content.decode()
    limits = "monthly $20.00 · daily $2.50 · 60 rpm · 100,000 tpm · 4 at once"
    assert f"{limits} · models: test/model-a, test/model-b" in html


def test_a_key_without_limits_has_none():
    a = make_tenant("Plain")
    assert _login(a.user).post("/keys/", {"name": "free"}).status_code == 303
    key = ApiKey.unscoped_objects.get(organisation=a.organisation, name="free")
    assert key.monthly_limit_usd is None and key.daily_limit_usd is None
    assert key.allowed_models == [] and key.expires_at is None
    assert key.rate_limit_rpm is key.rate_limit_tpm is key.max_concurrent is None


@pytest.mark.parametrize(
    "field,value",
    [
        ("monthly_limit_usd", "-1"),
        ("rate_limit_rpm", "0"),
        ("max_concurrent", "x"),
        ("expires_at", "2001-01-01T00:00"),
        ("allowed_models", "not a slug"),
    ],
)
def test_bad_limits_are_refused_with_400(field, value):
    a = make_tenant("Bad")
    response = _login(a.user).post("/keys/", {"name": "k", field: value})
    assert response.status_code == 400
    assert not ApiKey.unscoped_objects.filter(organisation=a.organisation, name="k").exists()


def test_owners_set_the_organisations_limits_members_cannot(settings, monkeypatch):
    monkeypatch.setitem(settings.UBERLLM, "ALLOW_PRIVATE_UPSTREAMS", True)
    a = make_tenant("Org")
    response = _login(a.user).post(
        "/keys/organisation-limits/",
        {
            "monthly_limit_usd": "100",
            "daily_limit_usd": "",
            "alert_webhook_url": "http://127.0.0.1:9/hook",
        },
    )
    assert response.status_code == 302
    org = Organisation.objects.get(id=a.organisation.id)
    assert (org.monthly_limit_usd, org.daily_limit_usd) == (Decimal("100"), None)
    assert org.alert_webhook_url == "http://127.0.0.1:9/hook"
    member = member_add(organisation=a.organisation, username="m", role="member")
    response = _login(member).post("/keys/organisation-limits/", {"monthly_limit_usd": "1"})
    assert response.status_code == 403
    assert Organisation.objects.get(id=a.organisation.id).monthly_limit_usd == Decimal("100")


def test_a_webhook_to_an_internal_address_is_refused(settings, monkeypatch):
    monkeypatch.setitem(settings.UBERLLM, "ALLOW_PRIVATE_UPSTREAMS", False)
    a = make_tenant("Hook")
    response = _login(a.user).post(
        "/keys/organisation-limits/", {"alert_webhook_url": "http://169.254.169.254/latest/"}
    )
    assert response.status_code == 400
    assert Organisation.objects.get(id=a.organisation.id).alert_webhook_url == ""


def test_alerts_of_this_month_are_shown_once_each(django_capture_on_commit_callbacks):
    a = make_tenant("Alerts")
    common = dict(
        organisation_id=a.organisation.id,
        api_key_id=a.api_key.id,
        scope=f"key:{a.api_key.id}",
        period="month",
        period_start=month_start(),
        limit_usd=Decimal("10"),
    )
    with django_capture_on_commit_callbacks(execute=False) as queued:
        assert spend_alert_raise(**common, threshold=80, spent_usd=Decimal("8.1")) is not None
        assert spend_alert_raise(**common, threshold=80, spent_usd=Decimal("8.5")) is None
    assert len(queued) == 1  # one delivery task queued
    old = dict(common, period_start=datetime(2020, 1, 1, tzinfo=UTC))
    spend_alert_raise(**old, threshold=100, spent_usd=Decimal("10"))
    SpendAlert.unscoped_objects.filter(period_start=old["period_start"]).update(
        created_at=datetime(2020, 1, 5, tzinfo=UTC)
    )
    html = _login(a.user).get("/keys/").content.decode()
    assert html.count('data-threshold="80"') == 1 and 'data-threshold="100"' not in html
    assert "used 80% of its monthly limit of $10.00" in html
