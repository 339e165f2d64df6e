"""Model aliases (issue 45) through the live gateway on real HTTP: a name the catalog maps
onto a model (Claude Code's ``claude-sonnet-4-5``) is served on every protocol (chat
completions, Messages, count_tokens, Responses) as the catalog model: routed there, sent
upstream under its name, billed and listed on Activity under it, answered under it; the
key's allowed models apply to the resolved model; an unknown name keeps its 404 in the
client's shape; ``/models`` lists the aliases."""

import anthropic
import httpx
import openai
import pytest

from billing.models import ApiKey
from providers.models import Model, ModelAlias

from ..support import TEST_MODEL
from .test_chat_api import wait_finished

pytestmark = [
    pytest.mark.django_db(transaction=True),
    # The anthropic SDK warns that Claude Code's older default ids are deprecated.
    pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning"),
]
HI = [{"role": "user", "content": "Say hello."}]
ALIASES = ("claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "claude-3-5-haiku-20241022")
SONNET = ALIASES[0]


@pytest.fixture
def aliased(market):
    from routing.catalog import catalog_cache

    model = Model.objects.get(slug=TEST_MODEL)
    for name in ALIASES:
        ModelAlias.objects.create(name=name, model=model)
    catalog_cache.invalidate()
    return model


def _upstream_models(emulator) -> list:
    return [record["model"] for record in emulator.log()]


@pytest.mark.parametrize("alias", ALIASES)
def test_chat_completions_with_an_alias_is_the_catalog_model(client, aliased, emulator, alias):
    reply = client.chat.completions.create(model=alias, messages=HI)
    assert reply.model == TEST_MODEL
    assert reply.choices[0].message.content.startswith("lorem")
    row = wait_finished(reply.id)
    assert (row.status, row.model_slug, row.provider_slug) == ("success", TEST_MODEL, "alpha")
    assert row.cost_usd > 0
    assert _upstream_models(emulator) == [TEST_MODEL]


def test_streamed_chat_with_an_alias_and_a_suffix(client, aliased, emulator):
    stream = client.chat.completions.create(
        model=f"{SONNET}:floor", messages=HI, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    assert {chunk.model for chunk in chunks} == {TEST_MODEL}
    assert chunks[-1].usage.completion_tokens == 8
    assert wait_finished(chunks[0].id).model_slug == TEST_MODEL


def test_messages_with_an_alias_whole_and_streamed(claude, aliased, emulator):
    message = claude.messages.create(model=SONNET, max_tokens=100, messages=HI)
    assert message.model == TEST_MODEL
    assert message.content[0].text.startswith("lorem")
    row = wait_finished(message.id)
    assert (row.status, row.model_slug) == ("success", TEST_MODEL) and row.cost_usd > 0
    with claude.messages.stream(model=ALIASES[1], max_tokens=100, messages=HI) as stream:
        final = stream.get_final_message()
    assert final.model == TEST_MODEL and final.usage.output_tokens == 8
    assert wait_finished(final.id).model_slug == TEST_MODEL
    assert _upstream_models(emulator) == [TEST_MODEL, TEST_MODEL]


def test_count_tokens_with_an_alias_counts_as_the_catalog_model(claude, aliased):
    by_alias = claude.messages.count_tokens(model=SONNET, messages=HI)
    by_slug = claude.messages.count_tokens(model=TEST_MODEL, messages=HI)
    assert by_alias.input_tokens == by_slug.input_tokens > 0
    with pytest.raises(anthropic.NotFoundError) as caught:
        claude.messages.count_tokens(model="claude-nonexistent-9", messages=HI)
    assert caught.value.body["error"]["type"] == "not_found_error"


def test_responses_with_an_alias(client, aliased, emulator):
    response = client.responses.create(model=SONNET, input="Say hello.")
    assert response.model == TEST_MODEL
    assert response.output_text.startswith("lorem")
    row = wait_finished(response.id)
    assert (row.status, row.model_slug) == ("success", TEST_MODEL)
    assert _upstream_models(emulator) == [TEST_MODEL]


def test_unknown_names_keep_their_404_in_each_clients_shape(client, claude, aliased, emulator):
    with pytest.raises(openai.NotFoundError) as chat:
        client.chat.completions.create(model="claude-nonexistent-9", messages=HI)
    assert chat.value.body["code"] == "model_not_found"
    assert "claude-nonexistent-9" in chat.value.body["message"]
    with pytest.raises(anthropic.NotFoundError) as messages:
        claude.messages.create(model="claude-nonexistent-9", max_tokens=10, messages=HI)
    assert messages.value.body["type"] == "error"
    assert messages.value.body["error"]["type"] == "not_found_error"
    assert "claude-nonexistent-9" in messages.value.body["error"]["message"]
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="claude-nonexistent-9", input="Say hello.")
    assert emulator.log() == []


def _allow(tenant, models: list[str]) -> None:
    from billing.auth import forget_cached_key

    ApiKey.unscoped_objects.filter(id=tenant.api_key.id).update(allowed_models=models)
    forget_cached_key(tenant.api_key.prefix)


def test_allowed_models_apply_to_the_resolved_model(client, claude, aliased, tenant, emulator):
    _allow(tenant, [TEST_MODEL])
    assert client.chat.completions.create(model=SONNET, messages=HI).model == TEST_MODEL
    assert claude.messages.create(model=SONNET, max_tokens=10, messages=HI).model == TEST_MODEL
    _allow(tenant, ["other/model"])
    with pytest.raises(openai.PermissionDeniedError) as chat:
        client.chat.completions.create(model=SONNET, messages=HI)
    assert chat.value.body["code"] == "model_not_allowed"
    assert TEST_MODEL in chat.value.body["message"]  # the model it resolved to
    with pytest.raises(anthropic.PermissionDeniedError):
        claude.messages.create(model=SONNET, max_tokens=10, messages=HI)
    assert len(emulator.log()) == 2


def test_a_fallback_named_by_an_alias_resolves(client, aliased, emulator):
    reply = client.chat.completions.create(
        model="nobody/none", messages=HI, extra_body={"models": ["nobody/none", SONNET]}
    )
    assert reply.model == TEST_MODEL
    assert wait_finished(reply.id).model_slug == TEST_MODEL


def test_models_list_the_aliases_and_an_alias_retrieves_its_model(gateway, tenant, aliased):
    headers = {"Authorization": f"Bearer {tenant.key}"}
    listing = httpx.get(f"{gateway.api_url}/models", headers=headers).json()
    (entry,) = [m for m in listing["data"] if m["id"] == TEST_MODEL]
    assert entry["aliases"] == sorted(ALIASES)
    assert entry["canonical_slug"] == TEST_MODEL
    assert [m["id"] for m in listing["data"]] == [TEST_MODEL]  # aliases are not models
    one = httpx.get(f"{gateway.api_url}/models/{SONNET}", headers=headers)
    assert one.status_code == 200 and one.json()["id"] == TEST_MODEL
    endpoints = httpx.get(f"{gateway.api_url}/models/{SONNET}/endpoints", headers=headers)
    assert endpoints.status_code == 200
    assert {e["model_id"] for e in endpoints.json()["data"]["endpoints"]} == {TEST_MODEL}
    unknown = httpx.get(f"{gateway.api_url}/models/claude-nonexistent-9", headers=headers)
    assert unknown.status_code == 404


def test_an_alias_added_in_the_admin_serves_the_next_request(client, aliased, emulator):
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="claude-opus-4-1", messages=HI)
    ModelAlias.objects.create(name="claude-opus-4-1", model=aliased)  # catalog.changed
    assert client.chat.completions.create(model="claude-opus-4-1", messages=HI).model == TEST_MODEL
