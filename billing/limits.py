"""Hard spend limits and per-key rate limits on the chat hot path (docs/security.md,
"Spend and rate limits").

``admit`` runs after planning: for a key (or organisation) with any limit it makes ONE
atomic call to the quota store (``billing.quota``: a Lua script in Redis, or process
memory on the embedded default) that reserves the request's worst-case cost against
every budget that applies (key monthly/daily, organisation monthly/daily) and counts it
against the key's rate limits, or refuses with nothing changed: HTTP 402 naming what is
left, or 429 with ``Retry-After``. ``settle`` runs from the one finish path
(``routing.gateway.finish``) in the background: the reservation is replaced by the real
cost ($0 for a failed call, which releases it), and alerts at 80% / 100% are raised.

A key and organisation without any limit make no call at all (``has_quota``).
"""

from __future__ import annotations

import asyncio
import calendar
import logging
import math
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.conf import settings

from billing.config import billing_config
from common.aio import db_call, run_in_background
from common.config import process_config

from .alerts import spend_alert_raise
from .money import money
from .quota import (
    NANO_PER_USD,
    Budget,
    LocalQuota,
    QuotaStore,
    RateLimits,
    RedisQuota,
    Ticket,
    settle_held,
)
from .selectors import organisation_usage_before, spend_since

logger = logging.getLogger(__name__)

ALERT_THRESHOLDS = (80, 100)  # percent of a limit

_store: tuple[str, QuotaStore] | None = None
_alerted: set[tuple[str, int]] = set()  # (budget key, threshold) raised by this process


def store() -> QuotaStore:
    """The quota store: Redis when ``REDIS_URL`` is set, else this process's memory."""
    global _store
    url = settings.REDIS_URL or ""
    if _store is None or _store[0] != url:
        _store = (url, RedisQuota(url) if url else LocalQuota())
    _store[1].reservation_ttl_s = billing_config().spend_reservation_ttl_s
    return _store[1]


def forget_key_spend(api_key_id: int | None = None) -> None:
    """With no argument (tests): forget every budget this process holds in memory.
    A key's limit change needs nothing here: limits travel with the key (billing.auth)."""
    global _store
    if api_key_id is None:
        _store = None
        _alerted.clear()


def nano(usd: Decimal) -> int:
    """USD as whole nano-dollars, rounded up (a reservation never undercounts)."""
    return int((usd * NANO_PER_USD).to_integral_value(rounding="ROUND_CEILING"))


def usd(nano_usd: int) -> Decimal:
    return Decimal(nano_usd) / NANO_PER_USD


# --- What a request counts against ------------------------------------------------------


def _period_bounds(period: str, now: datetime) -> tuple[datetime, str, int]:
    """(start, id, unix end) of the calendar month or UTC day holding ``now``."""
    if period == "month":
        start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        days = calendar.monthrange(start.year, start.month)[1]
        return start, start.strftime("%Y%m"), int((start + timedelta(days=days)).timestamp())
    start = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start.strftime("%Y%m%d"), int((start + timedelta(days=1)).timestamp())


def budgets_for(principal, now: datetime | None = None) -> tuple[Budget, ...]:
    """The budgets (with a limit) a call of ``principal`` counts against, now."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    prefix = process_config().shared_key_prefix
    found = []
    for scope, period, limit in (
        (f"key:{principal.api_key_id}", "month", principal.monthly_limit_usd),
        (f"key:{principal.api_key_id}", "day", principal.daily_limit_usd),
        (f"org:{principal.organisation_id}", "month", principal.org_monthly_limit_usd),
        (f"org:{principal.organisation_id}", "day", principal.org_daily_limit_usd),
    ):
        if limit is None:
            continue
        start, period_id, end = _period_bounds(period, now)
        found.append(
            Budget(
                key=f"{prefix}:spend:{scope}:{period}:{period_id}",
                scope=scope,
                period=period,
                period_start=start,
                limit_nano=nano(Decimal(limit)),
                expire_at=end + 2 * 86400,
            )
        )
    if principal.prepaid:
        found.append(credit_budget(principal.organisation_id, principal.credit_total_usd, now))
    return tuple(found)


CREDIT_PERIOD_START = datetime(1970, 1, 1, tzinfo=UTC)


def credit_budget(organisation_id: int, credits_usd: Decimal, now: datetime) -> Budget:
    """A prepaid organisation's balance as one more budget: the limit is its credits,
    ``spent`` its all-time spend (seeded from the ledger). The store key rolls over each
    month (a fresh seed from the ledger then: drift cannot outlive a month)."""
    _, month_id, month_end = _period_bounds("month", now)
    return Budget(
        key=_credit_key(organisation_id, month_id),
        scope=f"org:{organisation_id}",
        period="credit",
        period_start=CREDIT_PERIOD_START,
        limit_nano=nano(credits_usd),
        expire_at=month_end + 2 * 86400,
    )


def _credit_key(organisation_id: int, month_id: str) -> str:
    return f"{process_config().shared_key_prefix}:spend:org:{organisation_id}:credit:{month_id}"


def rates_for(principal, now: float | None = None) -> RateLimits | None:
    """The key's rate limits and this minute's window keys, or None without any."""
    rpm, tpm = principal.rate_limit_rpm, principal.rate_limit_tpm
    concurrent = principal.max_concurrent
    if rpm is None and tpm is None and concurrent is None:
        return None
    now = time.time() if now is None else now
    minute = int(now // 60)
    base = _rate_base(principal.api_key_id)
    return RateLimits(
        rpm=rpm,
        tpm=tpm,
        concurrent=concurrent,
        rpm_key=f"{base}:rpm:{minute}",
        tpm_key=f"{base}:tpm:{minute}",
        concurrent_key=f"{base}:inflight",
        window_reset_s=(minute + 1) * 60 - now,
    )


def _rate_base(api_key_id: int | None) -> str:
    return f"{process_config().shared_key_prefix}:rate:key:{api_key_id}"


def worst_case_usd(routes, prompt_tokens: int, max_tokens: int) -> Decimal:
    """The most a call can cost: ``prompt_tokens`` (none of them cached, each at the
    dearer of the input and cache-write prices) and ``max_tokens`` of output, at the
    dearest of ``routes`` (every endpoint the plan may use: retries, hedge partner)."""
    worst = Decimal(0)
    for route in routes:
        prices = route.prices
        prompt_price = max(Decimal(prices["input"]), Decimal(prices.get("cache_write", 0)))
        cost = (
            Decimal(prompt_tokens) * prompt_price + Decimal(max_tokens) * Decimal(prices["output"])
        ) / 1_000_000
        worst = max(worst, cost)
    return worst


def reserved_prompt_tokens(estimate: int) -> int:
    """The prompt tokens a reservation counts: the estimate with a safety margin."""
    return math.ceil(estimate * billing_config().spend_prompt_margin) + 16


# --- Admission ---------------------------------------------------------------------------


class QuotaRefused(Exception):
    """The request is over a limit: HTTP ``status`` (402, 429, or 413 for a prompt larger
    than the key's tokens per minute) with ``message``."""

    def __init__(self, status: int, message: str, code: str, retry_after_s: int | None = None):
        super().__init__(message)
        self.status, self.message, self.code = status, message, code
        self.retry_after_s = retry_after_s


class QuotaUnavailable(Exception):
    """The quota store could not be asked (the request is refused: limits fail closed)."""


_LABELS = {
    ("key", "month"): "This API key's monthly",
    ("key", "day"): "This API key's daily",
    ("org", "month"): "The organisation's monthly",
    ("org", "day"): "The organisation's daily",
}


def _refusal_message(budget: Budget, remaining_nano: int, worst_nano: int) -> str:
    if budget.period == "credit":
        return _credit_refusal_message(remaining_nano, worst_nano)
    label = _LABELS[(budget.scope.split(":")[0], budget.period)]
    period = "this month" if budget.period == "month" else "today"
    return (
        f"{label} spend limit of {money(usd(budget.limit_nano))} is reached: "
        f"{money(usd(remaining_nano))} remaining {period} (UTC), and this request may "
        f"cost up to {money(usd(worst_nano))} (its prompt and max_tokens at the dearest "
        "endpoint it may use). Lower max_tokens, or ask an owner to raise the limit on "
        "the dashboard."
    )


def _credit_refusal_message(remaining_nano: int, worst_nano: int) -> str:
    return (
        f"Insufficient credits: the organisation's prepaid balance is "
        f"{money(usd(remaining_nano))} (calls in flight included), and this request may "
        f"cost up to {money(usd(worst_nano))} (its prompt and max_tokens at the dearest "
        "endpoint it may use). Lower max_tokens, or ask for a top-up."
    )


async def _seeds(budgets: tuple[Budget, ...], missing: tuple[int, ...], org_id: int) -> dict:
    seeds = {}
    for i in missing:
        budget = budgets[i]
        kind, _, scope_id = budget.scope.partition(":")
        if budget.period == "credit":
            seeds[i] = nano(await db_call(organisation_usage_before)(organisation_id=org_id))
            continue
        spent = await db_call(spend_since)(
            organisation_id=org_id,
            api_key_id=int(scope_id) if kind == "key" else None,
            since=budget.period_start,
        )
        seeds[i] = nano(spent)
    return seeds


async def _admit(principal, ticket: Ticket) -> None:
    quota = store()
    seeds: dict[int, int] = {}
    for _ in range(3):
        refusal = await quota.admit(ticket, seeds)
        if refusal is None:
            return
        if refusal.kind == "seed":
            seeds.update(await _seeds(ticket.budgets, refusal.missing, principal.organisation_id))
            continue
        if refusal.kind == "budget":
            budget = ticket.budgets[refusal.budget_index]
            _maybe_alert_refused(principal, budget, refusal.remaining_nano)
            raise QuotaRefused(
                402,
                _refusal_message(budget, refusal.remaining_nano, ticket.reserved_nano),
                "insufficient_quota",
            )
        what = {
            "rpm": "requests per minute",
            "tpm": "tokens per minute",
            "concurrency": "calls in flight at once",
        }[refusal.kind]
        limit = {
            "rpm": principal.rate_limit_rpm,
            "tpm": principal.rate_limit_tpm,
            "concurrency": principal.max_concurrent,
        }[refusal.kind]
        raise QuotaRefused(
            429,
            f"Rate limit reached: this API key allows {limit} {what}; retry after "
            f"{refusal.retry_after_s} s.",
            "rate_limit_exceeded",
            refusal.retry_after_s,
        )
    raise QuotaUnavailable("the spend budget could not be seeded")


async def admit(principal, request_id: str, *, worst_usd: Decimal, tokens: int) -> Ticket | None:
    """Reserve ``worst_usd`` against every budget of ``principal`` and count the request
    (``tokens``: its prompt estimate) against the key's rate limits, atomically; None
    (and no store call) when neither the key nor its organisation has a limit.

    Raises QuotaRefused (402/429/413) or QuotaUnavailable. A cancellation while waiting
    leaves nothing held: the admission finishes in the background and is released."""
    if not principal.has_quota:
        return None
    tpm = principal.rate_limit_tpm
    if tpm is not None and tokens > tpm:
        # Never admissible, whatever the wait: a 429 with Retry-After would have the SDKs
        # retry it for ever (found by fuzzing). Not retryable, and says what to change.
        raise QuotaRefused(
            413,
            f"Request too large for this API key: its prompt is about {tokens} tokens "
            f"and the key allows {tpm} tokens per minute, so it can never be admitted. "
            "Shorten the prompt, or ask an owner to raise the key's limit on the dashboard.",
            "request_too_large",
        )
    ticket = Ticket(
        request_id=request_id,
        budgets=budgets_for(principal),
        reserved_nano=nano(worst_usd),
        rates=rates_for(principal),
        tokens=tokens,
        extra={"organisation_id": principal.organisation_id},
    )
    task = run_in_background(_admit(principal, ticket))
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        task.add_done_callback(lambda t: _release_if_admitted(t, ticket))
        raise
    except (QuotaRefused, QuotaUnavailable):
        raise
    except Exception as exc:  # the store is away (Redis down, database down)
        raise QuotaUnavailable(str(exc)) from exc
    return ticket


def _release_if_admitted(task: asyncio.Task, ticket: Ticket) -> None:
    if not task.cancelled() and task.exception() is None:
        settle(ticket, cost_usd=Decimal(0), total_tokens=ticket.tokens)


# --- Settling ------------------------------------------------------------------------------


def settle(ticket: Ticket | None, *, cost_usd: Decimal, total_tokens: int) -> None:
    """Replace the reservation by the real cost (in the background; once per ticket).
    ``total_tokens`` (prompt + completion as billed) corrects the TPM window."""
    if ticket is None or ticket.settled:
        return
    ticket.settled = True
    run_in_background(_settle(ticket, nano(cost_usd), total_tokens - ticket.tokens))


async def _settle(ticket: Ticket, actual_nano: int, tokens_delta: int) -> None:
    for attempt in range(3):
        try:
            spent = await store().settle(ticket, actual_nano, tokens_delta)
            break
        except Exception:
            if attempt == 2:
                logger.exception(
                    "spend settlement of %s failed; the reservation expires "
                    "in SPEND_RESERVATION_TTL_S",
                    ticket.request_id,
                )
                return
            await asyncio.sleep(0.2 * (attempt + 1))
    for budget, now_spent in zip(ticket.budgets, spent, strict=True):
        if now_spent >= 0:
            await _maybe_alert(ticket.extra.get("organisation_id"), budget, now_spent)


def _abandoned_keys(call: dict) -> list[str]:
    """SETTLE_HELD_LUA's keys for a ledger row: every budget its call may have reserved
    against (the key's and the organisation's, month and day of its creation), then the
    key's in-flight set."""
    prefix = process_config().shared_key_prefix
    created = call["created_at"].astimezone(UTC)
    scopes = [f"org:{call['organisation_id']}"]
    if call["api_key_id"] is not None:
        scopes.insert(0, f"key:{call['api_key_id']}")
    keys = []
    for scope in scopes:
        for period in ("month", "day"):
            key = f"{prefix}:spend:{scope}:{period}:{_period_bounds(period, created)[1]}"
            keys += [key, f"{key}:res"]
    credit = _credit_key(call["organisation_id"], _period_bounds("month", created)[1])
    keys += [credit, f"{credit}:res"]  # settled only where the call reserved (prepaid)
    return [*keys, f"{_rate_base(call['api_key_id'])}:inflight"]


def settle_abandoned(calls: list[dict]) -> int:
    """The reconciler closed ``calls`` (ledger rows: request_id, api_key_id,
    organisation_id, created_at, cost_usd) of a process that died mid-call: settle the
    reservations it still held to what the rows bill, instead of leaving them to expire
    (``SPEND_RESERVATION_TTL_S``). Redis only: the embedded store lived in the dead
    process's memory (a new process seeds its budgets from the ledger). Returns the
    budgets settled; a Redis error is logged (the reservations then expire)."""
    url = settings.REDIS_URL or ""
    if not url or not calls:
        return 0
    settlements = [(_abandoned_keys(c), c["request_id"], nano(c["cost_usd"])) for c in calls]
    try:
        return settle_held(url, settlements)
    except Exception:
        logger.exception(
            "settling %d abandoned reservations failed; they expire in SPEND_RESERVATION_TTL_S",
            len(calls),
        )
        return 0


# --- Alerts -----------------------------------------------------------------------------


async def _maybe_alert(organisation_id: int | None, budget: Budget, spent_nano: int) -> None:
    if organisation_id is None or budget.limit_nano <= 0 or budget.period == "credit":
        return
    for threshold in ALERT_THRESHOLDS:
        if spent_nano * 100 >= budget.limit_nano * threshold:
            await _raise_alert(organisation_id, budget, threshold, spent_nano)


def _maybe_alert_refused(principal, budget: Budget, remaining_nano: int) -> None:
    """A refusal with under 20% of the limit left is the limit reached: the 100% alert."""
    if budget.period != "credit" and remaining_nano * 5 < budget.limit_nano:
        spent = budget.limit_nano - remaining_nano
        run_in_background(_raise_alert(principal.organisation_id, budget, 100, spent))


async def _raise_alert(organisation_id: int, budget: Budget, threshold: int, spent: int) -> None:
    seen = (budget.key, threshold)
    if seen in _alerted:
        return
    if len(_alerted) >= 100_000:  # old periods' entries; the database row is the truth
        _alerted.clear()
    _alerted.add(seen)
    kind, _, scope_id = budget.scope.partition(":")
    try:
        await db_call(spend_alert_raise)(
            organisation_id=organisation_id,
            api_key_id=int(scope_id) if kind == "key" else None,
            scope=budget.scope,
            period=budget.period,
            period_start=budget.period_start,
            threshold=threshold,
            limit_usd=usd(budget.limit_nano),
            spent_usd=usd(spent),
        )
    except Exception:
        _alerted.discard(seen)
        logger.exception("spend alert for %s not recorded", budget.key)


async def spent_now(principal) -> list[tuple[Budget, Decimal | None, Decimal]]:
    """(budget, spent, reserved) of each of the principal's budgets, from the store
    (spent None when the period is not seeded yet)."""
    budgets = budgets_for(principal)
    if not budgets:
        return []
    values = await store().spent(budgets)
    return [
        (b, None if v is None else usd(v[0]), usd(v[1]) if v else Decimal(0))
        for b, v in zip(budgets, values, strict=True)
    ]
