"""Provider credentials: encrypted at rest, write-only in the admin, bound to the host
they were entered for, only from UBERLLM_PROVIDER_KEY_* variables, never returned."""

from __future__ import annotations

import json
import logging

import httpx
import openai
import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ValidationError
from django.db import connection
from django.test import Client

from billing.models import Activity
from providers import credentials
from providers.credentials import authorization_for, origin_of
from providers.models import Endpoint
from providers.services import (
    catalog_export,
    catalog_import,
    credentials_rotate,
    endpoint_set_credential,
)
from routing.catalog import catalog_cache, load_catalog

from ..support import TEST_MODEL, catalog_for_tests, wait_finished_rows
from .loopback import RecordingServer

SECRET = "sk-prov-0123456789-very-secret"
MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture
def keys(settings):
    """Two fresh Fernet keys; the first is the one in use."""
    new, old = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.UBERLLM = {**settings.UBERLLM, "CREDENTIAL_KEYS": [old]}
    return new, old


def _use_keys(settings, *keys: str) -> None:
    settings.UBERLLM = {**settings.UBERLLM, "CREDENTIAL_KEYS": list(keys)}


def _alpha(base: str = "http://127.0.0.1:9") -> Endpoint:
    catalog_import(data=catalog_for_tests(base))
    return Endpoint.objects.select_related("provider", "model").get(provider__slug="alpha")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "name",
    [
        "DJANGO_SECRET_KEY",
        "DATABASE_URL",
        "uberllm_provider_key_x",
        "UBERLLM_PROVIDER_KEY_",
        "UBERLLM_PROVIDER_KEY_A-B",
    ],
)
def test_credential_env_outside_the_prefix_is_rejected(name):
    data = catalog_for_tests("http://127.0.0.1:9")
    data["models"][0]["endpoints"][0]["credential_env"] = name
    with pytest.raises(ValidationError, match="UBERLLM_PROVIDER_KEY_"):
        catalog_import(data=data)


@pytest.mark.django_db
def test_a_row_naming_another_variable_sends_nothing(monkeypatch, caplog):
    # A row written before the validator existed (or straight into the database).
    monkeypatch.setenv("DJANGO_SECRET_KEY", "the-django-secret")
    endpoint = _alpha()
    Endpoint.objects.filter(pk=endpoint.pk).update(credential_env="DJANGO_SECRET_KEY")
    endpoint.refresh_from_db()
    with caplog.at_level(logging.ERROR):
        assert authorization_for(endpoint) is None
    assert "the-django-secret" not in caplog.text and str(endpoint.pk) in caplog.text


@pytest.mark.django_db
def test_prefixed_env_variable_is_used(monkeypatch):
    monkeypatch.setenv("UBERLLM_PROVIDER_KEY_TEST_ALPHA", SECRET)
    assert authorization_for(_alpha()) == f"Bearer {SECRET}"


@pytest.mark.django_db
def test_stored_credential_is_encrypted_at_rest_and_wins_over_env(keys, monkeypatch):
    monkeypatch.setenv("UBERLLM_PROVIDER_KEY_TEST_ALPHA", "sk-from-env")
    endpoint = endpoint_set_credential(endpoint=_alpha(), secret=SECRET)
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM providers_endpoint")
        dump = repr(cursor.fetchall())
    assert endpoint.credential_encrypted in dump and SECRET not in dump
    assert authorization_for(Endpoint.objects.get(pk=endpoint.pk)) == f"Bearer {SECRET}"


@pytest.mark.django_db
def test_rotation_new_key_first_then_rotate_then_drop_the_old(keys, settings):
    new, old = keys
    endpoint = endpoint_set_credential(endpoint=_alpha(), secret=SECRET)
    _use_keys(settings, new)  # the old key removed too early: unusable, not sent
    assert authorization_for(endpoint) is None
    _use_keys(settings, new, old)
    assert authorization_for(endpoint) == f"Bearer {SECRET}"
    assert credentials_rotate() == 1
    _use_keys(settings, new)
    endpoint.refresh_from_db()
    assert authorization_for(endpoint) == f"Bearer {SECRET}"


@pytest.mark.django_db
def test_invalid_key_setting_is_a_configuration_error(settings):
    from django.core.exceptions import ImproperlyConfigured

    _use_keys(settings, "not-a-fernet-key")
    with pytest.raises(ImproperlyConfigured):
        credentials.seal(secret=SECRET, base_url="https://api.example.com/v1")


@pytest.mark.django_db
def test_credential_is_bound_to_the_host_it_was_entered_for(keys, caplog):
    endpoint = endpoint_set_credential(endpoint=_alpha("http://127.0.0.1:9"), secret=SECRET)
    # Same origin, other path: still sent.
    Endpoint.objects.filter(pk=endpoint.pk).update(base_url="http://127.0.0.1:9/other/v1")
    endpoint.refresh_from_db()
    assert authorization_for(endpoint) == f"Bearer {SECRET}"
    # Another host, port or scheme (a changed row): never sent.
    for moved in ("http://localhost:9/v1", "http://127.0.0.1:10/v1", "https://127.0.0.1:9/v1"):
        Endpoint.objects.filter(pk=endpoint.pk).update(base_url=moved)
        endpoint.refresh_from_db()
        with caplog.at_level(logging.ERROR):
            assert authorization_for(endpoint) is None, moved
    assert SECRET not in caplog.text


BASE_URLS = [
    "http://127.0.0.1:9/alpha/v1",
    "http://127.0.0.1:9/alpha/v1/",
    "https://api.example.com/v1",
    "https://API.Example.com:443/v1",
    "http://[::1]:8080/v1",
    "https://api.example.com:8443",
]


@pytest.mark.django_db
@pytest.mark.parametrize("base_url", BASE_URLS)
def test_catalog_never_pairs_a_credential_with_another_host(keys, settings, base_url):
    settings.UBERLLM = {**settings.UBERLLM, "ALLOW_PRIVATE_UPSTREAMS": True}
    endpoint = _alpha()
    Endpoint.objects.filter(pk=endpoint.pk).update(base_url=base_url)
    endpoint.refresh_from_db()
    endpoint_set_credential(endpoint=endpoint, secret=SECRET)
    route = next(r for r in load_catalog()[TEST_MODEL].endpoints if r.provider_slug == "alpha")
    assert route.authorization == f"Bearer {SECRET}"
    # The URL the upstream client will connect to, as the HTTP client itself parses it.
    sent_to = httpx.URL(route.url)
    port = sent_to.port or {"http": 80, "https": 443}[sent_to.scheme]
    host = f"[{sent_to.host}]" if ":" in sent_to.host else sent_to.host
    assert f"{sent_to.scheme}://{host}:{port}" == origin_of(base_url)


@pytest.mark.parametrize(
    "url",
    [
        "http://api.example.com@evil.example/v1",
        "http://evil.example\\@api.example.com/v1",
        "http://evil.example#@api.example.com/v1",
        "http://evil.example?@api.example.com/v1",
        "http://api.example.com /v1",
        "http://api.example.com:99999/v1",
    ],
)
def test_urls_parsers_disagree_on_are_rejected(url):
    from providers.validators import validate_upstream_url

    with pytest.raises(ValidationError):
        validate_upstream_url(url)


def test_stored_credential_reaches_its_host_only(keys, client, emulator, market, tenant):
    """Live: the emulator demands the key and gets it; the same endpoint moved (in the
    database) to another loopback host gets no Authorization header at all."""
    emulator.control("alpha", api_key=SECRET)
    alpha = market["alpha"]
    endpoint_set_credential(endpoint=alpha, secret=SECRET)
    Endpoint.objects.exclude(pk=alpha.pk).update(enabled=False)
    catalog_cache.invalidate()
    reply = client.chat.completions.create(model=TEST_MODEL, messages=MESSAGES)
    assert reply.model_extra["provider"] == "alpha"
    assert SECRET not in reply.model_dump_json()
    with RecordingServer(status=500) as other:
        Endpoint.objects.filter(pk=alpha.pk).update(base_url=f"{other.base_url}/v1")
        catalog_cache.invalidate()
        with pytest.raises(Exception):  # noqa: B017 (the only endpoint fails: any error)
            client.chat.completions.create(model=TEST_MODEL, messages=MESSAGES)
    assert other.requests, "the moved endpoint was called"
    assert all("authorization" not in headers for headers in other.requests)


@pytest.mark.django_db
def test_export_repr_and_models_api_never_show_the_credential(keys, settings):
    endpoint = endpoint_set_credential(endpoint=_alpha(), secret=SECRET)
    exported = json.dumps(catalog_export())
    assert SECRET not in exported and endpoint.credential_encrypted not in exported
    routes = load_catalog()[TEST_MODEL].endpoints
    assert any(r.authorization for r in routes)
    assert all(SECRET not in repr(r) and SECRET not in str(r) for r in routes)
    assert SECRET not in repr(endpoint) and SECRET not in str(endpoint)


def _admin_post_data(endpoint: Endpoint, **changes) -> dict:
    data = {
        "provider": endpoint.provider_id,
        "model": endpoint.model_id,
        "base_url": endpoint.base_url,
        "protocol": endpoint.protocol,
        "upstream_model": endpoint.upstream_model,
        "credential_env": endpoint.credential_env,
        "context_length": endpoint.context_length,
        "max_output_tokens": "",
        "supported_parameters": list(endpoint.supported_parameters),
        "price_input": endpoint.price_input,
        "price_cache_read": endpoint.price_cache_read,
        "price_cache_write": endpoint.price_cache_write,
        "price_output": endpoint.price_output,
        "cache_ttl_s": endpoint.cache_ttl_s,
        "enabled": "on",
        "credential": "",
    }
    data.update(changes)
    return data


@pytest.mark.django_db
def test_admin_credential_is_write_only(keys, admin_user, settings):
    settings.UBERLLM = {**settings.UBERLLM, "ALLOW_PRIVATE_UPSTREAMS": True}
    endpoint = _alpha()
    web = Client()
    web.force_login(admin_user)
    url = f"/admin/providers/endpoint/{endpoint.pk}/change/"

    response = web.post(url, _admin_post_data(endpoint, credential=SECRET))
    assert response.status_code == 302, response.content.decode()[:2000]
    endpoint.refresh_from_db()
    assert authorization_for(endpoint) == f"Bearer {SECRET}"
    page = web.get(url).content.decode()
    assert SECRET not in page and endpoint.credential_encrypted not in page
    assert "Leave blank to keep" in page
    model_page = web.get(f"/admin/providers/model/{endpoint.model_id}/change/").content.decode()
    assert SECRET not in model_page and endpoint.credential_encrypted not in model_page

    # Blank keeps it.
    assert web.post(url, _admin_post_data(endpoint)).status_code == 302
    endpoint.refresh_from_db()
    assert authorization_for(endpoint) == f"Bearer {SECRET}"

    # Another host without entering it again: refused, nothing changed.
    moved = _admin_post_data(endpoint, base_url="http://localhost:9/v1")
    response = web.post(url, moved)
    assert response.status_code == 200 and "enter the credential again" in response.text
    endpoint.refresh_from_db()
    assert endpoint.base_url == "http://127.0.0.1:9/alpha/v1"

    # Another host with the credential entered again: bound to the new host.
    assert web.post(url, {**moved, "credential": "sk-new"}).status_code == 302
    endpoint.refresh_from_db()
    assert authorization_for(endpoint) == "Bearer sk-new"

    # Removed.
    assert web.post(url, _admin_post_data(endpoint, remove_credential="on")).status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.credential_encrypted == "" and authorization_for(endpoint) is None


@pytest.mark.django_db
def test_admin_rejects_a_foreign_environment_variable(admin_user, settings):
    settings.UBERLLM = {**settings.UBERLLM, "ALLOW_PRIVATE_UPSTREAMS": True}
    endpoint = _alpha()
    web = Client()
    web.force_login(admin_user)
    response = web.post(
        f"/admin/providers/endpoint/{endpoint.pk}/change/",
        _admin_post_data(endpoint, credential_env="DJANGO_SECRET_KEY"),
    )
    assert response.status_code == 200 and "UBERLLM_PROVIDER_KEY_" in response.text
    endpoint.refresh_from_db()
    assert endpoint.credential_env == "UBERLLM_PROVIDER_KEY_TEST_ALPHA"


@pytest.mark.django_db
def test_rotate_command_and_deploy_check(keys, settings):
    from django.core.management import call_command

    from providers.checks import credential_keys_check

    new, old = keys
    endpoint = endpoint_set_credential(endpoint=_alpha(), secret=SECRET)
    _use_keys(settings, new, old)
    call_command("rotate_credentials")
    _use_keys(settings, new)
    endpoint.refresh_from_db()
    assert authorization_for(endpoint) == f"Bearer {SECRET}"
    settings.UBERLLM = {**settings.UBERLLM, "ALLOW_PRIVATE_UPSTREAMS": False}
    assert credential_keys_check() == []
    _use_keys(settings)
    assert [m.id for m in credential_keys_check()] == ["providers.W001"]


def test_no_log_record_carries_the_credential(keys, client, emulator, market, caplog):
    """Everything logged at DEBUG during a served call and a refused one (httpx,
    httpcore, uvicorn, the gateway, the upstream's 401) is free of the secret."""
    alpha = market["alpha"]
    endpoint_set_credential(endpoint=alpha, secret=SECRET)
    Endpoint.objects.exclude(pk=alpha.pk).update(enabled=False)
    catalog_cache.invalidate()
    with caplog.at_level(logging.DEBUG):
        emulator.control("alpha", api_key=SECRET)
        client.chat.completions.create(model=TEST_MODEL, messages=MESSAGES)
        emulator.control("alpha", api_key="sk-something-else")
        with pytest.raises(Exception):  # noqa: B017 (the upstream refuses the key)
            client.chat.completions.create(model=TEST_MODEL, messages=MESSAGES)
    assert len(caplog.records) > 10
    assert SECRET not in caplog.text
    assert all(SECRET not in repr(record.__dict__) for record in caplog.records)


def _echoing_key(headers: dict[str, str]) -> tuple[int, str, bytes]:
    """A careless provider: its 401 quotes the key it was sent, whole."""
    sent = headers.get("authorization", "")
    return (
        401,
        "application/json",
        json.dumps(
            {"error": {"message": f"Incorrect API key provided: {sent}. Check it."}}
        ).encode(),
    )


def _echoing_key_in_stream(headers: dict[str, str]) -> tuple[int, str, bytes]:
    """The same, as an error event inside a 200 stream."""
    error = {"error": {"message": f"key {headers.get('authorization', '')} is suspended"}}
    return 200, "text/event-stream", b"data: " + json.dumps(error).encode() + b"\n\n"


@pytest.mark.parametrize("reply", [_echoing_key, _echoing_key_in_stream])
def test_a_provider_echoing_the_credential_never_hands_it_to_the_customer(
    keys, client, market, tenant, reply
):
    """The provider's error text reaches the customer's error and the ledger, without the
    operator's key (found by fuzzing: it was passed on verbatim)."""
    alpha = market["alpha"]
    with RecordingServer(reply=reply) as provider:
        Endpoint.objects.filter(pk=alpha.pk).update(base_url=f"{provider.base_url}/v1")
        alpha.refresh_from_db()
        endpoint_set_credential(endpoint=alpha, secret=SECRET)
        Endpoint.objects.exclude(pk=alpha.pk).update(enabled=False)
        catalog_cache.invalidate()
        with pytest.raises(openai.APIStatusError) as failure:
            client.chat.completions.create(model=TEST_MODEL, messages=MESSAGES)
    assert provider.requests[0]["authorization"] == f"Bearer {SECRET}"  # it was sent
    shown = failure.value.response.text
    assert "upstream" in shown and "[redacted]" in shown and SECRET not in shown
    wait_finished_rows(1)
    row = Activity.unscoped_objects.get(organisation=tenant.organisation)
    stored = [row.error_message, *row.attempts.values_list("error_message", flat=True)]
    assert any("[redacted]" in text for text in stored)
    assert all(SECRET not in text for text in stored)
