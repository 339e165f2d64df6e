"""The API key cache (billing/auth.py): made-up prefixes cost no repeated query, cannot
evict real keys and cannot grow memory; real keys are kept least-recently-used first."""

from __future__ import annotations

import asyncio

import pytest

from billing import auth
from billing.keys import PREFIX_LENGTH, SECRET_LENGTH
from billing.models import ApiKey
from billing.services import api_key_create

from ..support import make_tenant


def _authenticate(key: str):
    return asyncio.run(auth.authenticate(f"Bearer {key}"))


def _made_up(n: int) -> str:
    return f"ullm_{f'z{n:07d}'[:PREFIX_LENGTH]}_{'s' * SECRET_LENGTH}"


@pytest.fixture
def small_cache(monkeypatch):
    auth._cache.clear()
    auth._unknown.clear()
    monkeypatch.setattr(auth, "MAX_CACHED_KEYS", 2)
    monkeypatch.setattr(auth, "MAX_CACHED_UNKNOWN", 5)
    yield
    auth._cache.clear()
    auth._unknown.clear()


@pytest.mark.django_db(transaction=True)
def test_a_flood_of_made_up_prefixes_neither_evicts_real_keys_nor_grows(small_cache):
    tenant = make_tenant("Acme")
    assert _authenticate(tenant.key).api_key_id == tenant.api_key.id
    for n in range(50):
        assert _authenticate(_made_up(n)) is None
    assert tenant.api_key.prefix in auth._cache  # the real key was not pushed out
    assert len(auth._unknown) == 5 and len(auth._cache) == 1


@pytest.mark.django_db(transaction=True)
def test_a_repeated_unknown_prefix_is_answered_without_a_query(small_cache):
    make_tenant("Acme")
    key = _made_up(1)
    assert _authenticate(key) is None
    # A row appearing behind the cache's back is not seen: the answer came from memory.
    prefix = key.split("_")[1]
    ApiKey.unscoped_objects.filter(organisation__name="Acme").update(prefix=prefix)
    assert _authenticate(key) is None
    # Creating a key through the service forgets the prefix (no stale "unknown").
    auth.forget_cached_key(prefix)
    assert prefix not in auth._unknown


@pytest.mark.django_db(transaction=True)
def test_real_keys_are_evicted_least_recently_used_first(small_cache):
    tenant = make_tenant("Acme")
    _, b_key = api_key_create(organisation=tenant.organisation, name="b")
    _, c_key = api_key_create(organisation=tenant.organisation, name="c")
    a_prefix, b_prefix, c_prefix = (k.split("_")[1] for k in (tenant.key, b_key, c_key))
    _authenticate(tenant.key)
    _authenticate(b_key)
    _authenticate(tenant.key)  # a used again: b is now the least recently used
    _authenticate(c_key)
    assert set(auth._cache) == {a_prefix, c_prefix}
    assert b_prefix not in auth._cache
