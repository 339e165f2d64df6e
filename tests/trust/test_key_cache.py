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


@pytest.fixture
def counted(monkeypatch):
    """How many key-row reads and secret hashes the code under test makes: the real
    functions, counted (the gateway runs in a thread of this process)."""
    from billing import keys

    counts = {"reads": 0, "hashes": 0}
    real_load, real_hash = auth._load, keys.hash_secret

    def load(prefix):
        counts["reads"] += 1
        return real_load(prefix)

    def hash_secret(secret):
        counts["hashes"] += 1
        return real_hash(secret)

    monkeypatch.setattr(auth, "_load", load)
    monkeypatch.setattr(keys, "hash_secret", hash_secret)
    return counts


def _work_of_one_call(gateway, key: str, counted: dict) -> tuple[int, dict]:
    import httpx

    from ..support import TEST_MODEL, wait_background_idle

    wait_background_idle()
    counted.update(reads=0, hashes=0)
    body = {"model": TEST_MODEL, "messages": [{"role": "user", "content": "hi"}]}
    headers = {"Authorization": f"Bearer {key}"}
    reply = httpx.post(f"{gateway.api_url}/chat/completions", json=body, headers=headers)
    wait_background_idle()
    return reply.status_code, dict(counted)


def test_every_401_does_the_same_work_whatever_the_prefix(gateway, tenant, counted):
    """Issue 44, key-prefix timing: a 401 for a prefix no key has took ~3.3 ms (a database
    read), one for a cached known prefix with a wrong secret ~0.7 ms (no read), which
    told a prober which prefixes exist. Every 401 now costs one hash compare and one
    read; only a valid key answered from the cache skips the read."""
    prefix = tenant.api_key.prefix
    assert _work_of_one_call(gateway, tenant.key, counted)[0] == 200  # the key is cached
    one_read_one_hash = {"reads": 1, "hashes": 1}
    wrong_secret = f"ullm_{prefix}_{'w' * SECRET_LENGTH}"
    assert _work_of_one_call(gateway, wrong_secret, counted) == (401, one_read_one_hash)
    assert _work_of_one_call(gateway, _made_up(1), counted) == (401, one_read_one_hash)
    # a made-up prefix seen before is known unknown, and still costs the read
    assert _work_of_one_call(gateway, _made_up(1), counted) == (401, one_read_one_hash)
    assert _work_of_one_call(gateway, tenant.key, counted) == (200, {"reads": 0, "hashes": 1})
