"""Prompt-prefix hashing for cache-aware pricing (R2.3, O7).

prefix_hashes(messages)[k] = (hash of messages[0..k], estimated tokens of that
prefix). Each message is serialised and hashed once; hashes are chained:
h_k = blake2b(h_{k-1} || blake2b(message_k)), digest_size 16, hex. The values are
this process's and its peers' business only (the prefix log holds them for a cache TTL):
a change of the serialisation costs a few minutes of cache affinity, nothing else.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Container, Hashable, Iterable, Mapping, Sequence
from hashlib import blake2b
from typing import Any

import orjson

from .clock import Clocked
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


class PrefixCache(Clocked):
    """In-memory (endpoint_id, prefix hash) -> (expires_at, tokens): which prompt
    prefixes an endpoint has probably cached. The live gateway keeps this in Redis."""

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        super().__init__(clock)
        self._entries: dict[tuple[int, str], tuple[float, int]] = {}

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


PREFIX_LOOKBACK = 16  # the latest prefixes a request is looked up with (and its first)
MAX_PREFIXES = 200_000  # remembered prefix hashes kept (the oldest goes first)


def prefixes_to_check(hashes: PrefixHashes) -> PrefixHashes:
    """The latest prefixes (a conversation's previous turn) and the first message (a
    shared system prompt)."""
    recent = hashes[-PREFIX_LOOKBACK:]
    return recent if len(hashes) <= PREFIX_LOOKBACK else [hashes[0], *recent]


class PrefixBook:
    """prefix hash -> {endpoint_id: expires_at}: where a prompt prefix is probably
    cached (R2.3), bounded to ``max_entries`` hashes (least recently remembered first
    out). The knowledge's store, fed by its own served calls and (live) by the other
    processes' through the shared prefix log."""

    __slots__ = ("_entries", "max_entries")

    def __init__(self, max_entries: int = MAX_PREFIXES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, dict[int, float]] = OrderedDict()

    def remember(self, prefix_hash: Hashable, endpoint_id: int, expires_at: float) -> None:
        entry = self._entries.get(prefix_hash)
        if entry is None:
            entry = self._entries[prefix_hash] = {}
            if len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        else:
            self._entries.move_to_end(prefix_hash)
        entry[endpoint_id] = max(expires_at, entry.get(endpoint_id, 0.0))

    def cached_tokens(
        self, lookup: PrefixHashes, endpoint_ids: Container[int], now: float
    ) -> dict[int, int]:
        """Tokens of the longest unexpired prefix of ``lookup`` (``prefixes_to_check``)
        each of ``endpoint_ids`` holds (zeros left out)."""
        cached: dict[int, int] = {}
        entries = self._entries
        for prefix_hash, tokens in lookup:
            entry = entries.get(prefix_hash)
            if entry is None:
                continue
            for endpoint_id, expires_at in entry.items():
                known = expires_at > now and endpoint_id in endpoint_ids
                if known and tokens > cached.get(endpoint_id, 0):
                    cached[endpoint_id] = tokens
        return cached

    def purge(self, now: float) -> int:
        """Drop expired entries; returns how many hashes were dropped."""
        dropped = 0
        for prefix_hash in list(self._entries):
            entry = self._entries[prefix_hash]
            for endpoint_id in [e for e, at in entry.items() if at <= now]:
                del entry[endpoint_id]
            if not entry:
                del self._entries[prefix_hash]
                dropped += 1
        return dropped

    def __len__(self) -> int:
        return len(self._entries)
