"""Model aliases in the catalog (issue 45): validated (never another model's id or
another alias), exported and imported with the catalog, edited in the admin."""

import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.test import Client

from providers.models import Model, ModelAlias
from providers.services import catalog_export, catalog_import

from ..support import TEST_MODEL, catalog_for_tests

pytestmark = pytest.mark.django_db
ALIASES = ["claude-sonnet-4-5", "claude-sonnet-4-5-20250929"]


def _catalog(aliases=tuple(ALIASES)) -> dict:
    data = catalog_for_tests("http://127.0.0.1:9")
    data["models"][0]["aliases"] = list(aliases) if isinstance(aliases, tuple) else aliases
    data["models"].append({"slug": "test/model-b", "name": "B", "endpoints": []})
    return data


def _aliases() -> dict[str, str]:
    return {a.name: a.model.slug for a in ModelAlias.objects.select_related("model")}


def test_aliases_import_export_roundtrip(tmp_path):
    counts = catalog_import(data=_catalog())
    assert counts["aliases"] == 2
    exported = catalog_export()
    by_slug = {m["slug"]: m for m in exported["models"]}
    assert by_slug[TEST_MODEL]["aliases"] == ALIASES
    assert by_slug["test/model-b"]["aliases"] == []
    path = tmp_path / "catalog.json"
    call_command("export_catalog", output=str(path))
    ModelAlias.objects.all().delete()
    call_command("import_catalog", str(path))
    assert _aliases() == dict.fromkeys(ALIASES, TEST_MODEL)
    assert json.loads(path.read_text()) == catalog_export()


def test_import_replaces_a_models_aliases_and_moves_one_from_another_model():
    catalog_import(data=_catalog())
    data = _catalog(aliases=["claude-opus-4-1"])
    data["models"][1]["aliases"] = ["claude-sonnet-4-5"]
    catalog_import(data=data)
    assert _aliases() == {"claude-opus-4-1": TEST_MODEL, "claude-sonnet-4-5": "test/model-b"}
    # Without the key, a model's aliases are left as they are.
    data = catalog_for_tests("http://127.0.0.1:9")
    catalog_import(data=data)
    assert _aliases()["claude-opus-4-1"] == TEST_MODEL


@pytest.mark.parametrize(
    "aliases",
    [["test/model-b"], ["has space"], ["claude-sonnet-4-5:nitro"], ["x" * 129], "claude"],
    ids=["another-models-id", "space", "suffix", "too-long", "not-a-list"],
)
def test_a_bad_alias_undoes_the_import(aliases):
    catalog_import(data=_catalog())
    with pytest.raises(ValidationError):
        catalog_import(data=_catalog(aliases=aliases))
    assert _aliases() == dict.fromkeys(ALIASES, TEST_MODEL)


def test_an_alias_is_never_a_model_id_or_another_alias():
    catalog_import(data=_catalog())
    model_b = Model.objects.get(slug="test/model-b")
    with pytest.raises(ValidationError, match="model's id"):
        ModelAlias(name=TEST_MODEL, model=model_b).full_clean()
    with pytest.raises(ValidationError, match="already exists"):
        ModelAlias(name=ALIASES[0], model=model_b).full_clean()
    with pytest.raises(ValidationError, match="already a model alias"):
        Model(slug=ALIASES[1], name="Clash").full_clean()


def _model_form(model: Model, aliases: list[str]) -> dict:
    data = {
        "slug": model.slug,
        "name": model.name,
        "description": "",
        "context_length": model.context_length,
        "list_price_input": "0",
        "list_price_cache_read": "0",
        "list_price_output": "0",
        "aliases-TOTAL_FORMS": len(aliases),
        "aliases-INITIAL_FORMS": 0,
        "endpoints-TOTAL_FORMS": 0,
        "endpoints-INITIAL_FORMS": 0,
    }
    for index, name in enumerate(aliases):
        data[f"aliases-{index}-name"] = name
    return data


def test_admin_edits_aliases_inline_and_refuses_bad_ones(admin_user):
    catalog_import(data=_catalog())
    client = Client()
    client.force_login(admin_user)
    model_a = Model.objects.get(slug=TEST_MODEL)
    page = client.get(f"/admin/providers/model/{model_a.id}/change/").content.decode()
    assert 'value="claude-sonnet-4-5"' in page and "aliases-0-name" in page
    listing = client.get("/admin/providers/model/?q=claude-sonnet").content.decode()
    assert TEST_MODEL in listing and "claude-sonnet-4-5, claude-sonnet-4-5-20250929" in listing
    model_b = Model.objects.get(slug="test/model-b")
    url = f"/admin/providers/model/{model_b.id}/change/"
    added = client.post(url, _model_form(model_b, ["claude-opus-4-1"]))
    assert added.status_code == 302, added.content.decode()[:2000]
    assert _aliases()["claude-opus-4-1"] == "test/model-b"
    for bad in (TEST_MODEL, "claude-sonnet-4-5"):
        refused = client.post(url, _model_form(model_b, [bad]))
        assert refused.status_code == 200  # the form again, with the error
        assert "errorlist" in refused.content.decode()
    assert _aliases()["claude-sonnet-4-5"] == TEST_MODEL
