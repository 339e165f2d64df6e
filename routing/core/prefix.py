"""Prompt-prefix hashing for cache-aware pricing (R2.3, O7).

prefix_hashes(messages)[k] = (hash of messages[0..k], estimated tokens of that
prefix). Each message is serialised and hashed once; hashes are chained:
h_k = blake2b(h_{k-1} || blake2b(message_k)), digest_size 16, hex. The values are
this process's and its peers' business only (the prefix log holds them for a cache TTL):
a change of the serialisation costs a few minutes of cache affinity, nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from hashlib import blake2b
from typing import Any

import orjson

from .tokens import message_tokens

PrefixHashes = list[tuple[str, int]]


def _message_bytes(message: Mapping[str, Any]) -> bytes:
    # orjson: a long agent prompt (hundreds of KB) serialises ~10x faster than with the
    # standard library, before its upstream request can leave. Canonical: sorted keys.
    try:
        return orjson.dumps(message, option=orjson.OPT_SORT_KEYS, default=str)
    except (orjson.JSONEncodeError, TypeError):  # e.g. an integer beyond 64 bits
        return json.dumps(message, sort_keys=True, ensure_ascii=False, default=str).encode()


def prefix_hashes(messages: Sequence[Mapping[str, Any]]) -> PrefixHashes:
    """Cumulative (hash, token estimate) for every prefix of ``messages``."""
    hashes: PrefixHashes = []
    chained = b""
    tokens = 0
    for message in messages:
        message_digest = blake2b(_message_bytes(message), digest_size=16).digest()
        chained = blake2b(chained + message_digest, digest_size=16).digest()
        tokens += message_tokens(message)
        hashes.append((chained.hex(), tokens))
    return hashes


class PrefixCache:
    """In-memory (endpoint_id, prefix hash) -> (expires_at, tokens): which prompt
    prefixes an endpoint has probably cached. The live gateway keeps this in Redis."""

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self._clock = clock
        self._entries: dict[tuple[int, str], tuple[float, int]] = {}

    def _now(self, now: float | None) -> float:
        if now is not None:
            return now
        if self._clock is None:
            raise ValueError("PrefixCache needs a clock or an explicit now")
        return self._clock()

    def remember(
        self, endpoint_id: int, hashes: PrefixHashes, ttl_s: float, now: float | None = None
    ) -> None:
        """Record that ``endpoint_id`` served a prompt with these prefixes."""
        expires_at = self._now(now) + ttl_s
        for prefix_hash, tokens in hashes:
            self._entries[(endpoint_id, prefix_hash)] = (expires_at, tokens)

    def cached_tokens(
        self, endpoint_id: int, hashes: PrefixHashes, now: float | None = None
    ) -> int:
        """Tokens of the longest unexpired known prefix at ``endpoint_id`` (0 if none)."""
        current = self._now(now)
        for prefix_hash, tokens in reversed(hashes):
            entry = self._entries.get((endpoint_id, prefix_hash))
            if entry is not None and entry[0] > current:
                return tokens
        return 0

    def cached_tokens_by_endpoint(
        self, endpoint_ids: Iterable[int], hashes: PrefixHashes, now: float | None = None
    ) -> dict[int, int]:
        """RequestFeatures.cached_tokens for these endpoints (zeros left out)."""
        current = self._now(now)
        found = {eid: self.cached_tokens(eid, hashes, current) for eid in endpoint_ids}
        return {eid: tokens for eid, tokens in found.items() if tokens}

    def purge(self, now: float | None = None) -> int:
        """Drop expired entries; returns how many were dropped."""
        current = self._now(now)
        expired = [key for key, (expires_at, _) in self._entries.items() if expires_at <= current]
        for key in expired:
            del self._entries[key]
        return len(expired)

    def __len__(self) -> int:
        return len(self._entries)
