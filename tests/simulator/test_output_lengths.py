"""A provider that rambles (issue 10): smart learns each provider's reply length from
what it served and stops sending the cheap-per-token, long-winded one the traffic it
would make dearer; in a market where every provider replies alike nothing changes."""

from __future__ import annotations

from .helpers import document


def test_smart_learns_the_rambler_is_dear_per_reply() -> None:
    runs = document("verbose-reseller", ("smart", "openrouter"), 3000)["strategies"]
    smart, openrouter = runs["smart"], runs["openrouter"]
    # novacloud answers three times longer: before it took half the traffic (53%).
    assert smart["provider_share"].get("novacloud", 0.0) < 0.1
    assert smart["cost_usd_per_1k_requests"] < openrouter["cost_usd_per_1k_requests"]


def test_a_market_of_equal_reply_lengths_is_routed_as_before() -> None:
    plain = document("deepseek-v4.1-flash", ("smart",), 1500)["strategies"]["smart"]
    # Every provider serves exactly the requested length: no factor is ever learnt.
    assert plain["provider_share"]["novacloud"] > 0.3
