"""Account pages with the Django test client: the branded login, password reset by
e-mail (mail.outbox), the invitation that brings an existing user back after logging
in, and the operator's landing page at ``/``."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from django.utils import timezone

from billing.models import Attempt, Membership
from billing.services import invitation_create
from routing.models import SpeedSample

from ..support import make_tenant
from .helpers import finished_call, install_test_catalog, login

pytestmark = pytest.mark.django_db
PASSWORD = "pw-123456789"
NEW_PASSWORD = "a-new-one-5678-xyz"


def test_login_page_is_branded_with_a_reset_link():
    html = Client().get("/login/").content.decode()
    assert 'id="login-card"' in html and "dashboard.css" in html
    assert 'href="/password_reset/"' in html


def test_password_reset_by_email_then_login_with_the_new_password():
    install_test_catalog()
    tenant = make_tenant("Acme")
    tenant.user.email = "owner@acme.example"
    tenant.user.save()
    client = Client()
    response = client.post("/password_reset/", {"email": "owner@acme.example"})
    assert response.status_code == 302 and response["Location"] == "/password_reset/done/"
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["owner@acme.example"]
    link = re.search(r"https?://[^/]+(/reset/\S+/)", mail.outbox[0].body).group(1)
    form_url = client.get(link)["Location"]  # Django swaps the token for a session marker
    response = client.post(form_url, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert response["Location"] == "/reset/done/"
    assert "Your new password is set" in client.get("/reset/done/").content.decode()
    response = Client().post(
        "/login/", {"username": tenant.user.username, "password": NEW_PASSWORD}
    )
    assert response.status_code == 302 and response["Location"] == "/"


def test_password_reset_says_the_same_for_an_unknown_address():
    response = Client().post("/password_reset/", {"email": "nobody@example.com"})
    assert response["Location"] == "/password_reset/done/" and mail.outbox == []


def test_invitation_brings_an_existing_user_back_after_login():
    install_test_catalog()
    tenant = make_tenant("Acme")
    other = make_tenant("Other")
    _, token = invitation_create(
        organisation=tenant.organisation,
        email="x@example.com",
        role="member",
        invited_by=tenant.user,
    )
    invite = f"/invite/{token}/"
    html = Client().get(invite).content.decode()
    assert f'href="/login/?next={quote(invite)}"' in html and "open this link again" not in html
    client = Client()
    response = client.post(
        "/login/", {"username": other.user.username, "password": PASSWORD, "next": invite}
    )
    assert response.status_code == 302 and response["Location"] == invite
    assert "Accept and join" in client.get(invite).content.decode()


def _operator():
    return get_user_model().objects.create_user(
        "operator", password=PASSWORD, is_staff=True, is_superuser=True
    )


def test_operator_lands_on_the_overview():
    endpoints = install_test_catalog()
    tenant = make_tenant("Acme")
    alpha = endpoints["alpha"]
    call = finished_call(
        tenant, "gen-1", endpoint=alpha, prompt=1_000, completion=10, created_at=timezone.now()
    )
    Attempt.unscoped_objects.create(
        activity=call, attempt_no=1, provider_slug="alpha", endpoint_id=alpha.id, outcome="success"
    )
    SpeedSample.objects.create(endpoint=alpha, bucket="<8k", ttft_ms=120, prompt_tokens=1_000)
    response = login(_operator()).get("/", follow=True)
    html = response.content.decode()
    assert response.status_code == 200 and "Operator overview" in html
    assert "not a member of any organisation" not in html
    assert ">Usage<" not in html and ">API keys<" not in html  # no customer nav
    for endpoint in endpoints.values():
        assert f'data-endpoint="{endpoint.id}"' in html
    row = html.split(f'data-endpoint="{endpoints["alpha"].id}"')[1].split("</tr>")[0]
    assert "100.0%" in row and "120 ms" in row and "usable" in row
    assert f"/admin/providers/endpoint/{endpoints['alpha'].id}/health/" in row
    assert f'data-organisation="{tenant.organisation.slug}"' in html
    catalog = html.split('id="catalog"')[1].split("</table>")[0]
    assert "alpha" in catalog and "bravo" in catalog and "test/<wbr>model-<wbr>a" in catalog


def test_customers_keep_activity_and_staff_members_too():
    install_test_catalog()
    tenant = make_tenant("Acme")
    assert 'id="activity"' in login(tenant.user).get("/").content.decode()
    staff = _operator()
    Membership.unscoped_objects.create(user=staff, organisation=tenant.organisation, role="member")
    assert 'id="activity"' in login(staff).get("/").content.decode()


def test_operator_overview_is_for_staff_only():
    install_test_catalog()
    tenant = make_tenant("Acme")
    assert login(tenant.user).get("/operator/").status_code == 403
    assert Client().get("/operator/").status_code == 302
