"""The usage readers, one per upstream dialect (providers/protocols/usage.py), on the
providers' real usage objects (docs/api.md "Usage dialects")."""

from __future__ import annotations

import pytest

from providers.protocols import usage_dialect
from providers.protocols.usage import UnreadableUsage, read_usage


def _counts(usage: dict) -> tuple[int, int, int, int]:
    """(prompt, cached, cache-written, completion) of the gateway's form."""
    details = usage["prompt_tokens_details"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    return (
        usage["prompt_tokens"],
        details["cached_tokens"],
        details["cache_write_tokens"],
        usage["completion_tokens"],
    )


def test_openai_reads_cached_and_cache_written_tokens():
    usage = {
        "prompt_tokens": 2006,
        "completion_tokens": 300,
        "total_tokens": 2306,
        "prompt_tokens_details": {"cached_tokens": 1920, "cache_write_tokens": 50},
        "completion_tokens_details": {"reasoning_tokens": 128},
    }
    read = read_usage("openai", usage)
    assert _counts(read) == (2006, 1920, 50, 300)
    assert read["completion_tokens_details"]["reasoning_tokens"] == 128


def test_deepseek_hit_and_miss_make_the_prompt():
    # A real deepseek-reasoner reply (older form: no prompt_tokens_details).
    usage = {
        "prompt_tokens": 108_551,
        "completion_tokens": 8,
        "total_tokens": 108_559,
        "prompt_cache_hit_tokens": 108_528,
        "prompt_cache_miss_tokens": 23,
        "completion_tokens_details": {"reasoning_tokens": 3},
    }
    assert _counts(read_usage("deepseek", usage)) == (108_551, 108_528, 0, 8)
    assert _counts(read_usage("openai", usage)) == (108_551, 0, 0, 8)  # the bug


def test_deepseek_own_fields_win_over_openais():
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 1,
        "prompt_cache_hit_tokens": 900,
        "prompt_cache_miss_tokens": 100,
        "prompt_tokens_details": {"cached_tokens": 10},
    }
    assert _counts(read_usage("deepseek", usage)) == (1000, 900, 0, 1)
    # Without the hit count, OpenAI's field fills in (never added to it).
    del usage["prompt_cache_hit_tokens"], usage["prompt_cache_miss_tokens"]
    assert _counts(read_usage("deepseek", usage)) == (1000, 10, 0, 1)


def test_anthropic_input_excludes_reads_and_writes():
    usage = {
        "input_tokens": 23,
        "cache_read_input_tokens": 108_528,
        "cache_creation_input_tokens": 400,
        "output_tokens": 8,
    }
    assert _counts(read_usage("anthropic", usage)) == (108_951, 108_528, 400, 8)


def test_anthropic_writes_split_by_ttl_and_openai_fallback():
    usage = {
        "input_tokens": 10,
        "cache_read_input_tokens": 0,
        "output_tokens": 2,
        "cache_creation": {"ephemeral_5m_input_tokens": 30, "ephemeral_1h_input_tokens": 70},
    }
    assert _counts(read_usage("anthropic", usage)) == (110, 0, 100, 2)
    openai_shaped = {
        "prompt_tokens": 50,
        "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 40},
    }
    assert _counts(read_usage("anthropic", openai_shaped)) == (50, 40, 0, 5)


def test_no_usage_dialect_reads_nothing():
    assert read_usage("none", {"prompt_tokens": 5, "completion_tokens": 1}) is None


@pytest.mark.parametrize(
    ("dialect", "usage"),
    [
        ("openai", {"prompt_tokens": -5}),
        ("openai", {"prompt_tokens": "many"}),
        ("openai", {"completion_tokens": 12.5}),
        ("openai", {"prompt_tokens_details": "none"}),
        ("deepseek", {"prompt_cache_hit_tokens": True}),
        ("anthropic", {"input_tokens": 5, "cache_read_input_tokens": -1}),
        ("openai", ["not", "an", "object"]),
    ],
)
def test_a_count_that_is_not_a_whole_number_is_unreadable(dialect, usage):
    with pytest.raises(UnreadableUsage):
        read_usage(dialect, usage)


def test_an_anthropic_messages_endpoint_always_reads_anthropic():
    assert usage_dialect("anthropic_messages", "openai") == "anthropic"
    assert usage_dialect("openai_chat", "deepseek") == "deepseek"
