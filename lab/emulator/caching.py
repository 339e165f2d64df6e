"""Prompt-prefix cache: which leading messages a provider has seen recently.

Each request registers the hash of every whole-message prefix of its message list
(``messages[:1]``, ``messages[:2]``, ...; cumulative blake2b over the model name and
each message's sorted-key orjson). ``cached_tokens`` of a request is the token count
of its longest prefix already registered and not yet expired.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

import orjson

from .tokens import message_tokens

_PURGE_EVERY = 1000


class PrefixCache:
    """Prefix hashes with expiry times (``time.monotonic`` seconds)."""

    def __init__(self) -> None:
        self._expiry: dict[bytes, float] = {}
        self._stores = 0

    def __len__(self) -> int:
        return len(self._expiry)

    def clear(self) -> None:
        """Forget every prefix."""
        self._expiry.clear()

    def lookup_and_store(
        self, model: str, messages: list[Any], ttl_s: float, now: float | None = None
    ) -> tuple[int, int]:
        """Return ``(prompt_tokens, cached_tokens)``, then register all prefixes.

        Registered prefixes expire ``ttl_s`` seconds after this call.
        """
        now = time.monotonic() if now is None else now
        digest = hashlib.blake2b(model.encode(), digest_size=16)
        prompt_tokens = cached_tokens = 0
        keys: list[bytes] = []
        for message in messages:
            digest.update(orjson.dumps(message, option=orjson.OPT_SORT_KEYS))
            key = digest.digest()
            keys.append(key)
            prompt_tokens += message_tokens(message)
            if self._expiry.get(key, 0.0) > now:
                cached_tokens = prompt_tokens
        expires = now + ttl_s
        for key in keys:
            self._expiry[key] = expires
        self._stores += 1
        if self._stores % _PURGE_EVERY == 0:
            self._purge(now)
        return prompt_tokens, cached_tokens

    def _purge(self, now: float) -> None:
        self._expiry = {k: t for k, t in self._expiry.items() if t > now}
