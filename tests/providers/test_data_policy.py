"""The endpoints' data policy (OpenRouter's data_collection and zdr): imported, exported,
edited in the admin, validated, and carried to routing."""

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from providers.models import Endpoint
from providers.services import catalog_export, catalog_import

from ..support import catalog_for_tests, endpoint_admin_form

pytestmark = pytest.mark.django_db


def _catalog(**policies: tuple[bool, bool]) -> dict:
    data = catalog_for_tests("http://127.0.0.1:9")
    for endpoint in data["models"][0]["endpoints"]:
        if endpoint["provider"] in policies:
            endpoint["collects_data"], endpoint["zdr"] = policies[endpoint["provider"]]
    return data


def _policies() -> dict[str, tuple[bool, bool]]:
    return {e.provider.slug: (e.collects_data, e.zdr) for e in Endpoint.objects.all()}


def test_unknown_policy_counts_as_collecting_data():
    catalog_import(data=catalog_for_tests("http://127.0.0.1:9"))
    assert set(_policies().values()) == {(True, False)}


def test_policy_is_imported_and_exported():
    catalog_import(data=_catalog(bravo=(False, False), charlie=(False, True)))
    assert _policies() == {
        "alpha": (True, False),
        "bravo": (False, False),
        "charlie": (False, True),
    }
    exported = catalog_export()
    Endpoint.objects.all().delete()
    catalog_import(data=exported)
    assert _policies()["charlie"] == (False, True)
    assert catalog_export() == exported


def test_zero_retention_that_collects_data_is_refused():
    with pytest.raises(ValidationError) as caught:
        catalog_import(data=_catalog(alpha=(True, True)))
    assert "zdr" in caught.value.message_dict


def test_routing_sees_the_policy():
    from routing.catalog import load_catalog

    catalog_import(data=_catalog(charlie=(False, True)))
    routes = {r.provider_slug: r for r in load_catalog()["test/model-a"].endpoints}
    assert (routes["charlie"].info.collects_data, routes["charlie"].info.zdr) == (False, True)
    assert routes["alpha"].info.collects_data and not routes["alpha"].info.zdr
    assert routes["alpha"].provider_name == "Alpha"


def _form(endpoint: Endpoint, **extra: str) -> dict:
    return endpoint_admin_form(endpoint, **{"protocol": "openai_chat", **extra})


def test_admin_edits_lists_and_filters_the_policy(admin_user):
    catalog_import(data=catalog_for_tests("http://127.0.0.1:9"))
    client = Client()
    client.force_login(admin_user)
    endpoint = Endpoint.objects.get(provider__slug="alpha")
    url = f"/admin/providers/endpoint/{endpoint.id}/change/"
    page = client.get(url).content
    assert b'name="collects_data"' in page and b'name="zdr"' in page
    refused = client.post(url, _form(endpoint, collects_data="on", zdr="on"))
    assert refused.status_code == 200 and b"collects no data" in refused.content
    assert client.post(url, _form(endpoint, zdr="on")).status_code == 302
    assert _policies()["alpha"] == (False, True)
    listing = client.get("/admin/providers/endpoint/?zdr__exact=1")
    assert listing.status_code == 200 and b"alpha" in listing.content
