"""API key hashing and Decimal cost arithmetic."""

from decimal import Decimal

import pytest
from django.db import connection

from billing.keys import generate_key, hash_secret, parse_key, secret_matches
from billing.pricing import call_cost
from billing.services import api_key_create

from ..support import make_tenant


def test_key_format_and_hash():
    plaintext, prefix, stored = generate_key()
    parsed = parse_key(plaintext)
    assert parsed.prefix == prefix and len(parsed.secret) == 40
    assert stored == hash_secret(parsed.secret) and parsed.secret not in stored
    assert secret_matches(parsed.secret, stored)
    other_last = "y" if parsed.secret.endswith("x") else "x"  # always a different secret
    assert not secret_matches(parsed.secret[:-1] + other_last, stored)


def test_stored_hashes_stay_hmac_sha256_of_the_secret_key():
    """Keys stored before any change of the hashing code keep working: the hash is the
    hex HMAC-SHA256 of the secret under SECRET_KEY, whatever computes it."""
    import hashlib
    import hmac

    from django.conf import settings

    secret = "s3cret-" * 6
    expected = hmac.new(settings.SECRET_KEY.encode(), secret.encode(), hashlib.sha256)
    assert hash_secret(secret) == expected.hexdigest()


@pytest.mark.django_db
def test_no_plaintext_key_in_database():
    tenant = make_tenant("Keys")
    _, second = api_key_create(organisation=tenant.organisation, name="second")
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM billing_apikey")
        dump = repr(cursor.fetchall())
    for key in (tenant.key, second):
        assert parse_key(key).secret not in dump


def test_cost_matches_hand_computed_values():
    prices = {
        "input": Decimal("0.14"),
        "cache_read": Decimal("0.0028"),
        "cache_write": Decimal(0),
        "output": Decimal("0.50"),
    }
    # 100,000 prompt tokens of which 90,000 cached, 1,000 output:
    # 10,000 x 0.14 + 90,000 x 0.0028 + 1,000 x 0.50 = 1400 + 252 + 500 = 2152 per 1M
    cost = call_cost(
        prices=prices, prompt_tokens=100_000, cached_tokens=90_000, completion_tokens=1_000
    )
    assert cost == Decimal("0.002152")
    assert isinstance(cost, Decimal)


def test_cost_of_one_token_is_exact():
    prices = {
        "input": Decimal("0.07"),
        "cache_read": Decimal("0.0013"),
        "cache_write": Decimal(0),
        "output": Decimal("0.28"),
    }
    assert call_cost(prices=prices, prompt_tokens=1, cached_tokens=0, completion_tokens=0) == (
        Decimal("0.00000007")
    )
    assert call_cost(prices=prices, prompt_tokens=1, cached_tokens=1, completion_tokens=1) == (
        Decimal("0.0000002813")
    )


def test_cached_never_exceeds_prompt():
    prices = {
        "input": Decimal(1),
        "cache_read": Decimal(0),
        "cache_write": Decimal(0),
        "output": Decimal(0),
    }
    assert call_cost(prices=prices, prompt_tokens=10, cached_tokens=50, completion_tokens=0) == 0
