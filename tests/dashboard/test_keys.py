"""API keys on the dashboard (issue 42, "Keys"): post/redirect/get with a one-time
creation token (a reload never makes a second key; the secret is shown once, after the
redirect), roles (owners and admins manage keys, members create them when the
organisation allows it), every setting editable and shown, and allowed models checked
against the catalog with suggestions. Real database, Django's test client; the last test
calls the live gateway with a key edited on the page."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import openai
import pytest
from django.utils import timezone

from billing import auth
from billing.models import ApiKey, Organisation
from billing.services import member_add
from providers.models import Model

from ..support import TEST_MODEL, make_tenant
from .helpers import install_test_catalog, login

pytestmark = pytest.mark.django_db
FLASH = "deepseek/deepseek-v4.1-flash"


def _keys(tenant) -> list[ApiKey]:
    return list(ApiKey.unscoped_objects.filter(organisation=tenant.organisation))


def _create(client, name: str, **fields):
    """GET the page, then POST its create form with its own creation token."""
    page = client.get("/keys/")
    token = page.context["form"]["creation_token"].value()
    return client.post("/keys/", {"name": name, "creation_token": token, **fields}), token


def test_creating_then_reloading_makes_one_key_and_shows_the_secret_once():
    a = make_tenant("Prg")
    client = login(a.user)
    created, token = _create(client, "deploy")
    assert created.status_code == 303 and created["Location"] == "/keys/"
    page = client.get("/keys/")
    secret = page.context["new_key"]["key"]
    assert secret.startswith("ullm_") and secret in page.content.decode()
    assert secret not in client.get("/keys/").content.decode()  # shown once
    # The browser's reload of the POST re-sends the same form: no second key.
    again = client.post("/keys/", {"name": "deploy", "creation_token": token}, follow=True)
    assert [k.name for k in _keys(a)].count("deploy") == 1
    html = again.content.decode()
    assert "already created by this form" in html and secret not in html
    # A fresh page has a fresh token: a second key on purpose is one more key.
    _create(client, "deploy")
    assert [k.name for k in _keys(a)].count("deploy") == 2


def test_a_stale_secret_is_not_shown(monkeypatch):
    from billing.views import keys

    a = make_tenant("Stale")
    client = login(a.user)
    _create(client, "late")
    monkeypatch.setattr(keys, "NEW_KEY_MAX_AGE_S", -1)
    assert client.get("/keys/").context["new_key"] is None


def test_roles_decide_who_creates_edits_and_revokes_keys():
    a = make_tenant("Roles")
    admin = login(member_add(organisation=a.organisation, username="adm", role="admin"))
    member = login(member_add(organisation=a.organisation, username="mem", role="member"))
    assert _create(admin, "by-admin")[0].status_code == 303
    by_admin = ApiKey.unscoped_objects.get(name="by-admin")
    settings_url = f"/keys/{by_admin.id}/settings/"
    assert admin.post(settings_url, {f"k{by_admin.id}-daily_limit_usd": "3"}).status_code == 302
    assert ApiKey.unscoped_objects.get(id=by_admin.id).daily_limit_usd == Decimal("3")
    org_limits = {"monthly_limit_usd": "5", "members_create_keys": "on"}
    assert admin.post("/keys/organisation-limits/", org_limits).status_code == 403  # owners'

    assert _create(member, "by-member")[0].status_code == 403
    assert "create-key" not in member.get("/keys/").content.decode()
    assert login(a.user).post("/keys/organisation-limits/", org_limits).status_code == 302
    assert Organisation.objects.get(id=a.organisation.id).members_create_keys is True
    assert _create(member, "by-member")[0].status_code == 303  # now allowed
    assert member.post(settings_url, {f"k{by_admin.id}-daily_limit_usd": "9"}).status_code == 403
    assert member.post(f"/keys/{by_admin.id}/revoke/").status_code == 403
    assert admin.post(f"/keys/{by_admin.id}/revoke/").status_code == 302
    assert ApiKey.unscoped_objects.get(id=by_admin.id).revoked_at is not None


def test_every_setting_is_editable_after_creation_and_shown():
    install_test_catalog()
    a = make_tenant("Edit")
    key = a.api_key
    auth._cache[key.prefix] = (float("inf"), None)  # a stale gateway cache entry
    expires = (timezone.now() + timedelta(days=7)).replace(second=0, microsecond=0)
    p = f"k{key.id}-"
    response = login(a.user).post(
        f"/keys/{key.id}/settings/",
        {
            p + "monthly_limit_usd": "20",
            p + "daily_limit_usd": "2.50",
            p + "expires_at": expires.strftime("%Y-%m-%dT%H:%M"),
            p + "allowed_models": TEST_MODEL,
            p + "rate_limit_rpm": "60",
            p + "rate_limit_tpm": "100000",
            p + "max_concurrent": "4",
        },
    )
    assert response.status_code == 302
    key.refresh_from_db()
    assert (key.monthly_limit_usd, key.daily_limit_usd) == (Decimal("20"), Decimal("2.50"))
    assert key.expires_at == expires and key.allowed_models == [TEST_MODEL]
    assert (key.rate_limit_rpm, key.rate_limit_tpm, key.max_concurrent) == (60, 100_000, 4)
    assert key.prefix not in auth._cache  # the gateway reads the new settings at once
    html = login(a.user).get("/keys/").content.decode()
    assert (
        f"monthly $20.00 · daily $2.50 · 60 rpm · 100,000 tpm · 4 at once · models: {TEST_MODEL}"
        in html
    )
    assert f"until {expires:%Y-%m-%d %H:%M}" in html
    assert f'value="{expires:%Y-%m-%dT%H:%M}"' in html  # the Edit form holds every setting
    # Emptied fields clear the settings.
    login(a.user).post(f"/keys/{key.id}/settings/", {p + "expires_at": ""})
    key.refresh_from_db()
    assert key.monthly_limit_usd is None and key.allowed_models == [] and key.expires_at is None


def test_an_expired_key_keeps_its_expiry_when_other_settings_change():
    a = make_tenant("Expired")
    past = (timezone.now() - timedelta(days=1)).replace(second=0, microsecond=0)
    ApiKey.unscoped_objects.filter(id=a.api_key.id).update(expires_at=past)
    p = f"k{a.api_key.id}-"
    login(a.user).post(
        f"/keys/{a.api_key.id}/settings/",
        {
            p + "expires_at": past.strftime("%Y-%m-%dT%H:%M"),
            p + "daily_limit_usd": "1",
        },
    )
    key = ApiKey.unscoped_objects.get(id=a.api_key.id)
    assert key.expires_at == past and key.daily_limit_usd == Decimal("1")


def test_allowed_models_are_checked_against_the_catalog_with_suggestions():
    Model.objects.create(slug=FLASH, name="DeepSeek V4.1 Flash")
    a = make_tenant("Typo")
    client = login(a.user)
    refused, _ = _create(client, "typo", allowed_models="deepseek/deepseek-v4.1-flsh")
    assert refused.status_code == 400
    html = refused.content.decode()
    assert f"did you mean {FLASH}?" in html
    assert not ApiKey.unscoped_objects.filter(name="typo").exists()
    unknown, _ = _create(client, "typo", allowed_models="nothing/like-it")
    assert "not in the catalog (GET /api/v1/models" in unknown.content.decode()
    p = f"k{a.api_key.id}-"
    edit = {p + "allowed_models": "deepseek/deepseek-v4.1-flsh"}
    page = client.post(f"/keys/{a.api_key.id}/settings/", edit, follow=True)
    assert f"did you mean {FLASH}?" in page.content.decode()
    assert ApiKey.unscoped_objects.get(id=a.api_key.id).allowed_models == []
    assert _create(client, "ok", allowed_models=FLASH)[0].status_code == 303


def test_an_alias_in_allowed_models_names_the_model_to_allow():
    """Allowed models are catalog slugs; an alias (issue 45) is refused with its model."""
    from providers.models import ModelAlias

    flash = Model.objects.create(slug=FLASH, name="DeepSeek V4.1 Flash")
    ModelAlias.objects.create(name="claude-sonnet-4-5", model=flash)
    a = make_tenant("Alias")
    refused, _ = _create(login(a.user), "alias", allowed_models="claude-sonnet-4-5")
    assert refused.status_code == 400
    assert f"is an alias of {FLASH}: allow {FLASH}" in refused.content.decode()


@pytest.mark.django_db(transaction=True)
def test_a_key_edited_on_the_page_is_enforced_by_the_gateway_at_once(gateway, tenant, client):
    Model.objects.create(slug=FLASH, name="DeepSeek V4.1 Flash")
    message = [{"role": "user", "content": "hi"}]
    assert client.chat.completions.create(model=TEST_MODEL, messages=message).id
    p = f"k{tenant.api_key.id}-"
    page = login(tenant.user).post(
        f"/keys/{tenant.api_key.id}/settings/", {p + "allowed_models": FLASH}
    )
    assert page.status_code == 302
    with pytest.raises(openai.PermissionDeniedError, match=FLASH):
        client.chat.completions.create(model=TEST_MODEL, messages=message)
