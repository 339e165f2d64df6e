"""API key authentication for the chat hot path, with a short in-process cache.

The database is the truth; the cache holds a key's row for ``API_KEY_CACHE_TTL_S``
seconds so a request costs no query. Revoking clears this process's entry at once;
other processes see the revocation within the TTL. From half the TTL on, a request
re-reads the row in the background and goes on with the cached one, so a key in
steady use never waits for the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db import DatabaseError

from billing.config import billing_config
from common.aio import db_call, run_in_background

from .keys import hash_secret, parse_key, secret_matches
from .models import ApiKey

# Compared against when the prefix is unknown, so both paths do the same work.
_DUMMY_HASH = "0" * 64


@dataclass(frozen=True, slots=True)
class KeyPrincipal:
    """Who is calling: the key and its organisation."""

    api_key_id: int
    organisation_id: int
    secret_hash: str
    revoked: bool
    monthly_limit_usd: Decimal | None
    daily_limit_usd: Decimal | None = None
    org_monthly_limit_usd: Decimal | None = None
    org_daily_limit_usd: Decimal | None = None
    expires_at: datetime | None = None
    allowed_models: tuple[str, ...] = ()
    rate_limit_rpm: int | None = None
    rate_limit_tpm: int | None = None
    max_concurrent: int | None = None
    prepaid: bool = False  # the organisation draws on its credit balance
    credit_total_usd: Decimal = Decimal(0)  # its credits (the credit budget's limit)
    log_bodies: bool = False  # the organisation keeps its calls' bodies (billing.bodies)

    @property
    def has_quota(self) -> bool:
        """Any spend or rate limit: without one, the hot path makes no quota call."""
        return not (
            self.monthly_limit_usd is None
            and self.daily_limit_usd is None
            and self.org_monthly_limit_usd is None
            and self.org_daily_limit_usd is None
            and self.rate_limit_rpm is None
            and self.rate_limit_tpm is None
            and self.max_concurrent is None
            and not self.prepaid
        )


MAX_CACHED_KEYS = 100_000
MAX_CACHED_UNKNOWN = 10_000
MAX_UNKNOWN_LOOKUPS = 4  # database reads of uncached prefixes in flight, per process
STALE_IF_ERROR_S = 300.0  # how long a known key outlives its TTL while the database is away
# prefix -> (expires at (monotonic), principal); re-read from expires - TTL/2 on.
# Least recently used first. Prefixes with no key live in ``_unknown`` (bounded apart),
# so a flood of made-up prefixes can neither evict real keys nor grow memory.
_cache: dict[str, tuple[float, KeyPrincipal | None]] = {}
_unknown: dict[str, float] = {}  # prefix -> expires at (monotonic)
_lookups: asyncio.Semaphore | None = None
_refreshing: dict[str, asyncio.Task] = {}
_loading: dict[str, asyncio.Task] = {}
_unreachable_since: dict[str, float] = {}  # prefix -> when its re-reads started failing
_forgotten = 0  # bumped by forget_cached_key: a re-read started before must not store


def forget_cached_key(prefix: str) -> None:
    global _forgotten
    _forgotten += 1
    _cache.pop(prefix, None)
    _unknown.pop(prefix, None)  # a key just created under it must be found


def _load(prefix: str) -> KeyPrincipal | None:
    row = (
        ApiKey.unscoped_objects.filter(prefix=prefix)  # the key names its organisation
        .values(
            "id",
            "organisation_id",
            "secret_hash",
            "revoked_at",
            "monthly_limit_usd",
            "daily_limit_usd",
            "organisation__monthly_limit_usd",
            "organisation__daily_limit_usd",
            "expires_at",
            "allowed_models",
            "rate_limit_rpm",
            "rate_limit_tpm",
            "max_concurrent",
            "organisation__prepaid",
            "organisation__credit_total_usd",
            "organisation__log_bodies",
        )
        .first()
    )
    if row is None:
        return None
    return KeyPrincipal(
        api_key_id=row["id"],
        organisation_id=row["organisation_id"],
        secret_hash=row["secret_hash"],
        revoked=row["revoked_at"] is not None,
        monthly_limit_usd=row["monthly_limit_usd"],
        daily_limit_usd=row["daily_limit_usd"],
        org_monthly_limit_usd=row["organisation__monthly_limit_usd"],
        org_daily_limit_usd=row["organisation__daily_limit_usd"],
        expires_at=row["expires_at"],
        allowed_models=tuple(row["allowed_models"] or ()),
        rate_limit_rpm=row["rate_limit_rpm"],
        rate_limit_tpm=row["rate_limit_tpm"],
        max_concurrent=row["max_concurrent"],
        prepaid=row["organisation__prepaid"],
        credit_total_usd=row["organisation__credit_total_usd"],
        log_bodies=row["organisation__log_bodies"],
    )


def _store(prefix: str, expires: float, principal: KeyPrincipal | None) -> None:
    if principal is None:
        _cache.pop(prefix, None)
        _bounded_put(_unknown, prefix, expires, MAX_CACHED_UNKNOWN)
        return
    _unknown.pop(prefix, None)
    _bounded_put(_cache, prefix, (expires, principal), MAX_CACHED_KEYS)


def _bounded_put(cache: dict, key: str, value, limit: int) -> None:
    cache.pop(key, None)
    cache[key] = value
    while len(cache) > limit:  # the least recently used goes first
        cache.pop(next(iter(cache)))


class KeyStoreUnavailable(Exception):
    """The database could not be asked about a key this process does not know."""


async def _reread(prefix: str) -> None:
    forgotten = _forgotten
    try:
        principal = await db_call(_load)(prefix)
        if forgotten == _forgotten:
            _store(prefix, time.monotonic() + billing_config().api_key_cache_ttl_s, principal)
        _unreachable_since.pop(prefix, None)
    except DatabaseError:
        _extend_while_unreachable(prefix)
    finally:
        _refreshing.pop(prefix, None)


def _extend_while_unreachable(prefix: str) -> None:
    """The database did not answer a re-read: the cached row serves one more TTL (so
    requests do not wait for the connect timeout), for STALE_IF_ERROR_S at most."""
    hit = _cache.get(prefix)
    if hit is None:
        return
    now = time.monotonic()
    since = _unreachable_since.setdefault(prefix, now)
    if now - since < STALE_IF_ERROR_S:
        _cache[prefix] = (now + billing_config().api_key_cache_ttl_s, hit[1])


async def _lookup(prefix: str) -> tuple[KeyPrincipal | None, bool]:
    """The key row of ``prefix`` (None: no key has it), and whether the database was
    read for it (False: answered from the cache)."""
    now = time.monotonic()
    if _unknown.get(prefix, 0.0) > now:
        return None, False  # no key has it: no growth
    hit = _cache.get(prefix)
    if hit is not None and hit[0] > now:
        _cache[prefix] = _cache.pop(prefix)  # most recently used
        ttl = billing_config().api_key_cache_ttl_s
        if now >= hit[0] - ttl / 2 and prefix not in _refreshing:
            _refreshing[prefix] = run_in_background(_reread(prefix))
        return hit[1], False
    try:
        return await _shared_read(prefix), True
    except DatabaseError:
        # The database is away: a key seen within STALE_IF_ERROR_S keeps working (a
        # revocation still reaches every process through common.events); an unknown
        # one cannot be checked.
        if hit is not None and now - hit[0] < STALE_IF_ERROR_S:
            return hit[1], True
        raise KeyStoreUnavailable from None


async def _shared_read(prefix: str) -> KeyPrincipal | None:
    """Read the prefix's row and cache the answer; concurrent first requests of one key
    share one read (a burst is one query)."""
    loading = _loading.get(prefix)
    if loading is None or loading.get_loop() is not asyncio.get_running_loop():
        loading = _loading[prefix] = run_in_background(_read_and_store(prefix))
    return await asyncio.shield(loading)


async def _read_as_a_refusal_does(prefix: str) -> None:
    """The database read a refusal answered from the cache skipped: every 401 costs one
    read, so its timing says nothing of whether the prefix exists (issue 44)."""
    with contextlib.suppress(DatabaseError):  # the refusal stands either way
        await _shared_read(prefix)


def _lookup_slots() -> asyncio.Semaphore:
    global _lookups
    if _lookups is None or getattr(_lookups, "_loop", None) not in (
        None,
        asyncio.get_running_loop(),
    ):
        _lookups = asyncio.Semaphore(MAX_UNKNOWN_LOOKUPS)
    return _lookups


async def _read_and_store(prefix: str) -> KeyPrincipal | None:
    try:
        forgotten = _forgotten
        # A flood of made-up prefixes queues here instead of taking the database pool.
        async with _lookup_slots():
            principal = await db_call(_load)(prefix)
        if forgotten == _forgotten:
            _store(prefix, time.monotonic() + billing_config().api_key_cache_ttl_s, principal)
        return principal
    finally:
        _loading.pop(prefix, None)


async def authenticate(authorization: str | None) -> KeyPrincipal | None:
    """Return the principal for a valid, unrevoked ``Bearer`` key, else None (the scheme
    is case-insensitive, RFC 9110 11.1: ``bearer <key>`` is the same key)."""
    if not authorization or authorization[:7].lower() != "bearer ":
        return None
    parsed = parse_key(authorization[7:].strip())
    if parsed is None:
        hash_secret("x")  # same work as a real check
        return None
    principal, read = await _lookup(parsed.prefix)
    stored = principal.secret_hash if principal else _DUMMY_HASH
    if not secret_matches(parsed.secret, stored) or principal is None or principal.revoked:
        # Same work for every refusal: a hash compare (a dummy one for an unknown prefix)
        # and one database read, whether the answer came from the cache or not. Only a
        # valid key answered from the cache skips the read, and only its holder can tell.
        if not read:
            await _read_as_a_refusal_does(parsed.prefix)
        return None
    return principal
