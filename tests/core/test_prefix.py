from routing.core import PrefixCache, TokenEstimator, prefix_hashes

SYSTEM = {"role": "system", "content": "You are a coding agent. " * 400}
TURN_1 = [SYSTEM, {"role": "user", "content": "Fix the bug in parser.py"}]
TURN_2 = [
    *TURN_1,
    {"role": "assistant", "content": "Done: changed line 12."},
    {"role": "user", "content": "Now add a test."},
]


def test_prefix_hashes_are_cumulative_with_token_estimates():
    hashes = prefix_hashes(TURN_2)
    assert len(hashes) == 4
    assert all(len(digest) == 32 for digest, _ in hashes)
    assert len({digest for digest, _ in hashes}) == 4
    assert [tokens for _, tokens in hashes] == [
        TokenEstimator.estimate(TURN_2[: k + 1]) for k in range(4)
    ]


def test_same_prefix_same_hashes_and_a_change_invalidates_what_follows():
    assert prefix_hashes(TURN_2)[:2] == prefix_hashes(TURN_1)
    changed = [{"role": "system", "content": "other"}, *TURN_2[1:]]
    assert not {d for d, _ in prefix_hashes(changed)} & {d for d, _ in prefix_hashes(TURN_2)}
    reordered_keys = [{"content": m["content"], "role": m["role"]} for m in TURN_1]
    assert prefix_hashes(reordered_keys) == prefix_hashes(TURN_1)


def test_prefix_cache_returns_the_longest_known_prefix_until_it_expires():
    now = [0.0]
    cache = PrefixCache(lambda: now[0])
    cache.remember(7, prefix_hashes(TURN_1), ttl_s=300.0)
    turn_2 = prefix_hashes(TURN_2)
    turn_1_tokens = prefix_hashes(TURN_1)[-1][1]
    now[0] = 100.0
    assert cache.cached_tokens(7, turn_2) == turn_1_tokens
    assert cache.cached_tokens(8, turn_2) == 0
    assert cache.cached_tokens_by_endpoint([7, 8], turn_2) == {7: turn_1_tokens}
    now[0] = 300.0
    assert cache.cached_tokens(7, turn_2) == 0
    assert cache.purge() == 2
    assert len(cache) == 0


def test_prefix_cache_with_explicit_now():
    cache = PrefixCache()
    cache.remember(1, prefix_hashes(TURN_1), ttl_s=60.0, now=0.0)
    assert cache.cached_tokens(1, prefix_hashes(TURN_1), now=59.0) == prefix_hashes(TURN_1)[-1][1]


def test_a_message_orjson_cannot_serialise_still_hashes_and_stays_canonical():
    """An integer beyond 64 bits (valid JSON) takes the standard library's path."""
    huge = {"role": "user", "content": "hi", "metadata": {"n": 2**70, "a": 1}}
    reordered = {"metadata": {"a": 1, "n": 2**70}, "content": "hi", "role": "user"}
    assert prefix_hashes([huge]) == prefix_hashes([reordered])
    assert prefix_hashes([huge]) != prefix_hashes([{**huge, "metadata": {"n": 2**70}}])
