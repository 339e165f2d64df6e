"""An admin's catalog edit made while a gateway is idle is seen by the first request that
names it once the refresh interval has passed (issue 44): a request whose 4xx would come
from something unknown to a catalog snapshot older than ``CATALOG_CACHE_TTL_S`` waits
for the reload; other requests never wait for the database.

The edit is made in this process, the gateway serving is another process (no Redis
between them, so no ``catalog.changed`` event reaches it: the lost-event case, where the
refresh interval is the only bound). Runs on SQLite and, with ``DATABASE_URL``, on
PostgreSQL."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from django.conf import settings

from ..support import TEST_MODEL, SubprocessGateway
from .helpers import chat

pytestmark = pytest.mark.django_db(transaction=True)
TTL_S = 1.0
HI = {"role": "user", "content": "hi"}


def _add_endpoint(emulator_url: str, slug: str):
    """An admin adds provider ``slug`` with an endpoint of the test model (served by the
    emulator's charlie)."""
    from providers.models import Endpoint, Model, Provider

    provider = Provider.objects.create(slug=slug, name=slug.title())
    return Endpoint.objects.create(
        provider=provider,
        model=Model.objects.get(slug=TEST_MODEL),
        base_url=f"{emulator_url}/charlie/v1",
        context_length=200_000,
        price_input="0.05",
        price_cache_read="0.005",
        price_cache_write="0",
        price_output="0.20",
    )


@pytest.fixture
def idle_gateway(market, tenant):
    """A gateway process with a 1 s catalog refresh interval and no shared event bus."""
    gateway = SubprocessGateway(
        env={"UBERLLM_CATALOG_CACHE_TTL_S": str(TTL_S), "REDIS_URL": ""}
    ).start()
    try:
        yield f"http://127.0.0.1:{gateway.port}"
    finally:
        gateway.stop()


def test_an_endpoint_added_while_idle_serves_the_first_request_naming_it(
    idle_gateway, emulator, tenant
):
    assert chat(idle_gateway, tenant.key).status_code == 200  # the catalog is loaded
    _add_endpoint(emulator.base_url, "delta")
    time.sleep(TTL_S + 0.2)  # idle past the refresh interval
    reply = chat(idle_gateway, tenant.key, provider={"only": ["delta"]})
    assert reply.status_code == 200, reply.text
    assert reply.json()["provider"] == "delta"


def test_a_model_added_while_idle_serves_its_first_request(idle_gateway, emulator, tenant):
    from providers.models import Model

    assert chat(idle_gateway, tenant.key).status_code == 200
    Model.objects.create(
        slug="test/model-new", name="New", list_price_input="0.5", list_price_output="1.5"
    )
    endpoint = _add_endpoint(emulator.base_url, "delta")
    endpoint.model = Model.objects.get(slug="test/model-new")
    endpoint.upstream_model = TEST_MODEL  # what the emulator serves
    endpoint.save()
    time.sleep(TTL_S + 0.2)
    reply = chat(idle_gateway, tenant.key, model="test/model-new")
    assert reply.status_code == 200, reply.text


def test_an_alias_added_while_idle_serves_its_first_request(idle_gateway, emulator, tenant):
    """A model alias (issue 45) is a catalog edit like any other: on every protocol the
    first request naming it after the refresh interval is served as its model."""
    from providers.models import Model, ModelAlias

    assert chat(idle_gateway, tenant.key).status_code == 200
    ModelAlias.objects.create(name="claude-opus-4-8", model=Model.objects.get(slug=TEST_MODEL))
    time.sleep(TTL_S + 0.2)
    reply = chat(idle_gateway, tenant.key, model="claude-opus-4-8")
    assert reply.status_code == 200, reply.text
    assert reply.json()["model"] == TEST_MODEL
    messages = httpx.post(
        f"{idle_gateway}/api/v1/messages",
        json={"model": "claude-opus-4-8", "max_tokens": 10, "messages": [HI]},
        headers={"x-api-key": tenant.key, "anthropic-version": "2023-06-01"},
        timeout=30,
    )
    assert messages.status_code == 200 and messages.json()["model"] == TEST_MODEL


def test_a_request_naming_nothing_new_does_not_wait_for_the_reload(market, emulator, monkeypatch):
    """In this process: past the refresh interval a request for a known model gets the
    current snapshot at once (the reload runs in the background); only a request that
    the snapshot would refuse waits for the reload (``reload_if_stale``)."""
    from routing.catalog import CatalogCache

    monkeypatch.setitem(settings.UBERLLM, "CATALOG_CACHE_TTL_S", TTL_S)
    cache = CatalogCache()

    async def scenario() -> tuple[int, int, bool, bool, int]:
        first = await cache.get(TEST_MODEL)
        await asyncio.to_thread(_add_endpoint, emulator.base_url, "delta")
        await asyncio.sleep(TTL_S + 0.1)
        old = await cache.get(TEST_MODEL)  # no wait: the known model's old routes
        reloaded = await cache.reload_if_stale()
        fresh_again = await cache.reload_if_stale()  # fresh now: nothing to wait for
        new = await cache.get(TEST_MODEL)
        return len(first.endpoints), len(old.endpoints), reloaded, fresh_again, len(new.endpoints)

    first, old, reloaded, fresh_again, new = asyncio.run(scenario())
    assert (first, old) == (3, 3)
    assert reloaded and not fresh_again
    assert new == 4
