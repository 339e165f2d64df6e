"""Catalog import/export, validation, and the admin."""

import json
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from providers.models import Endpoint, Model, Provider
from providers.services import catalog_export, catalog_import
from providers.validators import validate_upstream_url

from ..support import catalog_for_tests, endpoint_admin_form

pytestmark = pytest.mark.django_db


def test_import_export_roundtrip(tmp_path):
    counts = catalog_import(data=catalog_for_tests("http://127.0.0.1:9"))
    assert counts == {"providers": 3, "models": 1, "aliases": 0, "endpoints": 3}
    exported = catalog_export()
    path = tmp_path / "catalog.json"
    call_command("export_catalog", output=str(path))
    assert json.loads(path.read_text()) == exported
    Endpoint.objects.all().delete()
    call_command("import_catalog", str(path))
    assert catalog_export() == exported
    bravo = Endpoint.objects.get(provider__slug="bravo")
    assert bravo.price_input == Decimal("0.2") and bravo.price_cache_read == Decimal("0.02")


def test_import_is_idempotent():
    catalog_import(data=catalog_for_tests("http://127.0.0.1:9"))
    catalog_import(data=catalog_for_tests("http://127.0.0.1:9"))
    assert (Provider.objects.count(), Model.objects.count(), Endpoint.objects.count()) == (3, 1, 3)


def test_negative_price_rejected():
    data = catalog_for_tests("http://127.0.0.1:9")
    data["models"][0]["endpoints"][0]["price_input"] = "-1"
    with pytest.raises(ValidationError):
        catalog_import(data=data)
    assert not Endpoint.objects.exists()


@pytest.mark.parametrize("url", ["ftp://example.com/v1", "javascript:alert(1)", "http://"])
def test_non_http_urls_rejected(url):
    with pytest.raises(ValidationError):
        validate_upstream_url(url)


@pytest.mark.parametrize(
    "url", ["http://192.168.1.10/latest", "http://127.0.0.1:8100/x", "http://10.0.0.1/v1"]
)
def test_internal_urls_rejected_unless_allowed(settings, url):
    settings.UBERLLM = {**settings.UBERLLM, "ALLOW_PRIVATE_UPSTREAMS": False}
    with pytest.raises(ValidationError):
        validate_upstream_url(url)
    settings.UBERLLM = {**settings.UBERLLM, "ALLOW_PRIVATE_UPSTREAMS": True}
    validate_upstream_url(url)


def test_admin_shows_endpoints_inline_under_models(admin_user):
    catalog_import(data=catalog_for_tests("http://127.0.0.1:9"))
    client = Client()
    client.force_login(admin_user)
    model = Model.objects.get()
    page = client.get(f"/admin/providers/model/{model.id}/change/").content.decode()
    assert "endpoints-0-price_input" in page and "endpoints-2-price_output" in page


def test_export_never_contains_credentials(monkeypatch):
    monkeypatch.setenv("UBERLLM_PROVIDER_KEY_TEST_ALPHA", "sk-very-secret")
    catalog_import(data=catalog_for_tests("http://127.0.0.1:9"))
    assert "sk-very-secret" not in json.dumps(catalog_export())


def test_protocol_imported_exported_and_checked(tmp_path):
    data = catalog_for_tests("http://127.0.0.1:9")
    data["models"][0]["endpoints"][0]["protocol"] = "anthropic_messages"
    catalog_import(data=data)
    exported = catalog_export()
    protocols = {e["provider"]: e["protocol"] for e in exported["models"][0]["endpoints"]}
    assert protocols == {
        "alpha": "anthropic_messages",
        "bravo": "openai_chat",
        "charlie": "openai_chat",
    }
    data["models"][0]["endpoints"][1]["protocol"] = "grpc"
    with pytest.raises(ValidationError):
        catalog_import(data=data)


def test_catalog_route_of_an_anthropic_endpoint():
    from routing.catalog import load_catalog

    data = catalog_for_tests("http://127.0.0.1:9")
    data["models"][0]["endpoints"][0]["protocol"] = "anthropic_messages"
    catalog_import(data=data)
    routes = {r.provider_slug: r for r in load_catalog()["test/model-a"].endpoints}
    assert routes["alpha"].url == "http://127.0.0.1:9/alpha/v1/messages"
    assert routes["alpha"].protocol == "anthropic_messages"
    assert routes["bravo"].url.endswith("/bravo/v1/chat/completions")


def test_admin_lists_and_edits_the_protocol(admin_user):
    catalog_import(data=catalog_for_tests("http://127.0.0.1:9"))
    client = Client()
    client.force_login(admin_user)
    endpoint = Endpoint.objects.get(provider__slug="alpha")
    page = client.get(f"/admin/providers/endpoint/{endpoint.id}/change/")
    assert page.status_code == 200 and b'name="protocol"' in page.content
    listing = client.get("/admin/providers/endpoint/?protocol=anthropic_messages")
    assert listing.status_code == 200


def test_admin_post_without_the_protocol_keeps_it(admin_user):
    catalog_import(data=catalog_for_tests("http://127.0.0.1:9"))
    endpoint = Endpoint.objects.get(provider__slug="alpha")
    Endpoint.objects.filter(pk=endpoint.pk).update(protocol="anthropic_messages")
    client = Client()
    client.force_login(admin_user)
    data = endpoint_admin_form(endpoint, upstream_model="", credential_env="", max_output_tokens="")
    response = client.post(f"/admin/providers/endpoint/{endpoint.id}/change/", data)
    assert response.status_code == 302
    endpoint.refresh_from_db()
    assert (endpoint.protocol, endpoint.context_length) == ("anthropic_messages", 1000)


def test_usage_dialect_imported_exported_and_checked():
    from routing.catalog import load_catalog

    data = catalog_for_tests("http://127.0.0.1:9")
    endpoints = data["models"][0]["endpoints"]
    endpoints[0]["protocol"] = "anthropic_messages"  # its dialect follows the protocol
    endpoints[1]["usage_dialect"] = "deepseek"
    catalog_import(data=data)
    exported = catalog_export()["models"][0]["endpoints"]
    dialects = {e["provider"]: e["usage_dialect"] for e in exported}
    assert dialects == {"alpha": "anthropic", "bravo": "deepseek", "charlie": "openai"}
    routes = {r.provider_slug: r for r in load_catalog()["test/model-a"].endpoints}
    assert {s: r.usage_dialect for s, r in routes.items()} == dialects
    endpoints[2]["usage_dialect"] = "guesswork"
    with pytest.raises(ValidationError):
        catalog_import(data=data)


def test_admin_edits_the_usage_dialect(admin_user):
    catalog_import(data=catalog_for_tests("http://127.0.0.1:9"))
    endpoint = Endpoint.objects.get(provider__slug="bravo")
    client = Client()
    client.force_login(admin_user)
    page = client.get(f"/admin/providers/endpoint/{endpoint.id}/change/")
    assert b'name="usage_dialect"' in page.content
    data = endpoint_admin_form(
        endpoint,
        protocol="openai_chat",
        usage_dialect="none",
        upstream_model="",
        credential_env="",
        max_output_tokens="",
    )
    assert client.post(f"/admin/providers/endpoint/{endpoint.id}/change/", data).status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.usage_dialect == "none"
    del data["usage_dialect"]  # an older form keeps it
    client.post(f"/admin/providers/endpoint/{endpoint.id}/change/", data)
    endpoint.refresh_from_db()
    assert endpoint.usage_dialect == "none"
    listing = client.get("/admin/providers/endpoint/?usage_dialect=none")
    assert listing.status_code == 200 and b"bravo" in listing.content


OPENROUTER_MODELS = "providers/fixtures/openrouter_models_sample.json"
OPENROUTER_ENDPOINTS = "providers/fixtures/openrouter_endpoints_sample.json"


def test_openrouter_models_and_endpoints_seed_the_catalog():
    """OpenRouter's per-token strings become exact per-1M list prices; endpoints arrive
    disabled with no base URL (the operator sets URL and credential in the admin)."""
    call_command("import_catalog", OPENROUTER_MODELS, endpoints=[OPENROUTER_ENDPOINTS])
    assert not Model.objects.filter(slug="openrouter/auto").exists()  # variable price
    sonnet = Model.objects.get(slug="anthropic/claude-sonnet-4.5")
    prices = (sonnet.list_price_input, sonnet.list_price_cache_read, sonnet.list_price_output)
    assert prices == (Decimal("3"), Decimal("0.3"), Decimal("15"))
    assert sonnet.context_length == 1_000_000
    mini = Model.objects.get(slug="openai/gpt-4o-mini")
    assert mini.list_price_cache_read == Decimal("0.075")
    deepinfra = Endpoint.objects.get(provider__slug="deepinfra")
    assert (deepinfra.base_url, deepinfra.enabled) == ("", False)
    assert (deepinfra.price_input, deepinfra.price_output) == (Decimal("0.3"), Decimal("1"))
    assert (deepinfra.context_length, deepinfra.max_output_tokens) == (131072, 16384)
    deepseek = Endpoint.objects.get(provider__slug="deepseek")
    assert deepseek.price_cache_read == Decimal("0.07") and deepseek.model.slug.startswith("deep")
    assert Provider.objects.get(slug="deepinfra").name == "DeepInfra"


def test_openrouter_reimport_keeps_what_the_operator_set():
    call_command("import_catalog", OPENROUTER_MODELS, endpoints=[OPENROUTER_ENDPOINTS])
    Endpoint.objects.filter(provider__slug="deepseek").update(
        base_url="https://api.deepseek.com/v1", enabled=True, price_input=Decimal("9")
    )
    call_command(
        "import_catalog", OPENROUTER_MODELS, "--openrouter", endpoints=[OPENROUTER_ENDPOINTS]
    )
    deepseek = Endpoint.objects.get(provider__slug="deepseek")
    assert (deepseek.base_url, deepseek.enabled) == ("https://api.deepseek.com/v1", True)
    assert deepseek.price_input == Decimal("0.27")  # prices follow the list
    assert Model.objects.count() == 3 and Endpoint.objects.count() == 2


def test_openrouter_endpoints_file_of_the_wrong_shape_is_refused():
    with pytest.raises(CommandError, match="not an /endpoints answer"):
        call_command("import_catalog", OPENROUTER_MODELS, endpoints=[OPENROUTER_MODELS])
