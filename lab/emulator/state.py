"""Live emulator state: profiles, per-provider RNG / cache / load, and the request log.

Everything here is touched only from the server's event loop, so no locking.
"""

from __future__ import annotations

import os
import random
import time
from collections import deque
from collections.abc import Iterable
from typing import Any

from .caching import PrefixCache
from .profiles import EmulatorConfig, merge_profile

MAX_LOG_RECORDS = 10_000
SENSITIVE_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "cookie", "x-api-key", "api-key"}
)


class ProviderState:
    """One simulated provider: its file profile, live profile, RNG, cache and load."""

    def __init__(self, slug: str, profile: dict[str, Any], seed: int) -> None:
        self.slug = slug
        self.file_profile = profile
        self.profile = merge_profile(profile, {})
        self.seed = seed
        self.rng = random.Random(f"{seed}:{slug}")
        self.cache = PrefixCache()
        self.active = 0  # requests in flight (for concurrency_cap)

    def reseed(self) -> None:
        """Restart the random sequence from the seed."""
        self.rng = random.Random(f"{self.seed}:{self.slug}")


class EmulatorState:
    """All providers plus the bounded request log."""

    def __init__(self, config: EmulatorConfig) -> None:
        self.config = config
        self.time_scale = config.time_scale
        self.providers = {
            slug: ProviderState(slug, profile, config.seed)
            for slug, profile in config.providers.items()
        }
        self.log: deque[dict[str, Any]] = deque(maxlen=MAX_LOG_RECORDS)

    def reset(self, *, profiles: bool = False) -> None:
        """Clear the log and caches, reseed RNGs; with ``profiles`` also drop overrides."""
        self.log.clear()
        for provider in self.providers.values():
            provider.cache.clear()
            provider.reseed()
            if profiles:
                provider.profile = merge_profile(provider.file_profile, {})

    def control(self, slug: str, overrides: dict[str, Any]) -> dict[str, Any]:
        """Merge ``overrides`` into a live profile (``reset: true`` first restores the file's).

        Raises KeyError for an unknown slug and ProfileError for bad fields.
        """
        provider = self.providers[slug]
        overrides = dict(overrides)
        base = provider.file_profile if overrides.pop("reset", False) else provider.profile
        provider.profile = merge_profile(base, overrides)
        return provider.profile

    def records(self, provider: str | None = None) -> list[dict[str, Any]]:
        """Log records, oldest first, optionally of one provider."""
        if provider is None:
            return list(self.log)
        return [r for r in self.log if r["provider"] == provider]


def new_record(
    provider: str, headers: Iterable[tuple[bytes, bytes]], received_at: float | None = None
) -> dict[str, Any]:
    """A fresh log record for a chat request (status ``in_progress``).

    ``headers_seen`` holds header names only; ``headers`` holds values of the
    non-sensitive ones (never Authorization, cookies or API-key headers).
    """
    names: list[str] = []
    values: dict[str, str] = {}
    for raw_name, raw_value in headers:
        name = raw_name.decode("latin-1").lower()
        names.append(name)
        if name not in SENSITIVE_HEADERS:
            values[name] = raw_value.decode("latin-1")
    return {
        "id": "chatcmpl-" + os.urandom(12).hex(),
        "provider": provider,
        "model": None,
        "stream": False,
        "prompt_tokens": 0,
        "cached_tokens": 0,
        "completion_tokens_sent": 0,
        "status": "in_progress",
        "http_status": None,
        "error": None,
        "received_at": time.time() if received_at is None else received_at,
        "first_token_at": None,
        "ended_at": None,
        "planned_ttft_s": None,
        "stalled": False,
        "headers_seen": names,
        "headers": values,
        "request_body_keys": [],
        "last_message_head": None,
        "stream_options": None,
        "max_tokens": None,
        "max_completion_tokens": None,
    }


def finish_record(
    record: dict[str, Any], status: str, http_status: int | None, error: str | None = None
) -> None:
    """Mark a record ended now with ``status`` (completed/cancelled/error/rate_limited/cut)."""
    record["status"] = status
    if http_status is not None:
        record["http_status"] = http_status
    if error is not None:
        record["error"] = error
    record["ended_at"] = time.time()
