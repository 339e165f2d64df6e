"""A new endpoint (admin inline, or an import without the field) takes the usual OpenAI
parameters, tools included: it is not refused for every request with ``tools``."""

import pytest

from providers.models import DEFAULT_SUPPORTED_PARAMETERS, Endpoint
from providers.services import catalog_import

pytestmark = pytest.mark.django_db


def _catalog(**endpoint_fields) -> dict:
    endpoint = {
        "provider": "p",
        "base_url": "https://api.example.com/v1",
        "price_input": "1",
        "price_cache_read": "0",
        "price_cache_write": "0",
        "price_output": "2",
        **endpoint_fields,
    }
    return {
        "providers": [{"slug": "p"}],
        "models": [
            {
                "slug": "m/x",
                "list_price_input": "1",
                "list_price_output": "2",
                "endpoints": [endpoint],
            }
        ],
    }


def test_import_without_supported_parameters_gets_the_defaults():
    catalog_import(data=_catalog())
    params = Endpoint.objects.get().supported_parameters
    assert params == list(DEFAULT_SUPPORTED_PARAMETERS)
    assert "tools" in params


def test_import_with_supported_parameters_keeps_them():
    catalog_import(data=_catalog(supported_parameters=["max_tokens"]))
    assert Endpoint.objects.get().supported_parameters == ["max_tokens"]


def test_admin_form_starts_with_the_defaults():
    from django.forms import modelform_factory

    form = modelform_factory(Endpoint, fields=["supported_parameters"])()
    initial = form["supported_parameters"].initial
    assert "tools" in (initial() if callable(initial) else initial)
