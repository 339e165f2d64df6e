"""Organisation A never sees organisation B's activity or keys, on any page or API."""

import httpx
import pytest
from django.test import Client
from django.utils import timezone

from billing.models import Activity, ApiKey
from billing.selectors import for_organisation

from ..support import make_tenant

pytestmark = pytest.mark.django_db


def _activity(tenant, request_id: str) -> Activity:
    return Activity.objects.create(
        request_id=request_id,
        organisation=tenant.organisation,
        api_key=tenant.api_key,
        model_slug="m/x",
        status="success",
        created_at=timezone.now(),
    )


@pytest.fixture
def two_tenants():
    a, b = make_tenant("OrgA"), make_tenant("OrgB")
    _activity(a, "gen-aaa")
    _activity(b, "gen-bbb")
    return a, b


def _logged_in(tenant) -> Client:
    client = Client()
    client.force_login(tenant.user)
    return client


def test_activity_page_shows_only_own_calls(two_tenants):
    a, _ = two_tenants
    page = _logged_in(a).get("/").content.decode()
    assert "gen-aaa" in page and "gen-bbb" not in page


def test_other_orgs_activity_detail_is_404(two_tenants):
    a, _ = two_tenants
    client = _logged_in(a)
    assert client.get("/activity/gen-aaa/").status_code == 200
    assert client.get("/activity/gen-bbb/").status_code == 404


def test_keys_page_and_revoke_are_scoped(two_tenants):
    a, b = two_tenants
    client = _logged_in(a)
    page = client.get("/keys/").content.decode()
    assert a.api_key.prefix in page and b.api_key.prefix not in page
    assert client.post(f"/keys/{b.api_key.id}/revoke/").status_code == 404
    assert ApiKey.unscoped_objects.get(id=b.api_key.id).revoked_at is None


def test_scoping_fails_closed():
    assert list(for_organisation(Activity, None)) == []


@pytest.mark.django_db(transaction=True)
def test_generation_api_is_scoped(gateway_server, emulator):
    a, b = make_tenant("OrgA"), make_tenant("OrgB")
    _activity(a, "gen-aaa")
    _activity(b, "gen-bbb")
    url = f"{gateway_server.api_url}/generation"
    headers = {"Authorization": f"Bearer {a.key}"}
    own = httpx.get(url, params={"id": "gen-aaa"}, headers=headers)
    assert own.status_code == 200 and own.json()["data"]["id"] == "gen-aaa"
    other = httpx.get(url, params={"id": "gen-bbb"}, headers=headers)
    assert other.status_code == 404
    assert "error" in other.json()
    assert httpx.get(url, params={"id": "gen-aaa"}).status_code == 401


def test_dashboard_requires_login(two_tenants):
    response = Client().get("/")
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_member_cannot_manage_keys(two_tenants):
    from billing.services import member_add

    a, _ = two_tenants
    member = member_add(organisation=a.organisation, username="plain", role="member")
    client = Client()
    client.force_login(member)
    assert client.post("/keys/", {"name": "x"}).status_code == 403
    assert client.post(f"/keys/{a.api_key.id}/revoke/").status_code == 403
