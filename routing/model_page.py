"""The public model pages (``/models/`` and ``/models/<author>/<name>``, no login): each
model's providers with what they charge per token, their typical time to first token
per prompt size and their uptime (docs/dashboard.md, "Model pages").

Reads only the catalog and platform-wide measurements, never one organisation's data:
TTFT is routing's speed window of each endpoint (``routing.health.speed_by_bucket``,
speed samples of real calls and probes), uptime the share of successful attempts over
every organisation's calls (``routing.endpoint_stats.unscoped_uptime``, the figures of
``GET /api/v1/models/{slug}/endpoints``), both sums without any tenant's detail.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Prefetch, QuerySet

from providers.models import Endpoint, Model

from .endpoint_stats import unscoped_uptime
from .health import speed_by_bucket

PRICE_NAMES = ("input", "output", "cache_read", "cache_write")
PAGE_TTL_S = 30.0
MAX_RECENT_PAGES = 1_000


@dataclass(frozen=True, slots=True)
class ProviderOffer:
    """One provider of a model, as a customer compares them."""

    provider_slug: str
    provider_name: str
    prices_per_1m: dict[str, Decimal]  # input, output, cache_read, cache_write (USD / 1M)
    context_length: int
    max_output_tokens: int | None
    ttft: list[dict]  # per prompt-size bucket: bucket, p50_ms, p90_ms, samples
    uptime: dict[str, float | None]  # uptime_last_5m / _30m / _1d (percent; None: no data)


@dataclass(frozen=True, slots=True)
class ModelPage:
    model: Model
    offers: list[ProviderOffer]

    @property
    def cheapest_input(self) -> ProviderOffer | None:
        return min(self.offers, key=lambda o: o.prices_per_1m["input"], default=None)


# slug -> (expires at (monotonic), the page or None): public_model_page's short cache.
_recent_pages: dict[str, tuple[float, ModelPage | None]] = {}


def _serving_endpoints() -> QuerySet:
    return Endpoint.objects.filter(enabled=True, provider__enabled=True).select_related("provider")


def public_model_list() -> QuerySet:
    """Every model a customer can call (one enabled endpoint at least), by slug, with its
    serving endpoints prefetched as ``serving``."""
    serving = Prefetch("endpoints", queryset=_serving_endpoints(), to_attr="serving")
    return (
        Model.objects.filter(endpoints__in=_serving_endpoints())
        .distinct()
        .order_by("slug")
        .prefetch_related(serving)
    )


def _offer(endpoint: Endpoint, uptime: dict[str, float | None]) -> ProviderOffer:
    return ProviderOffer(
        provider_slug=endpoint.provider.slug,
        provider_name=endpoint.provider.name or endpoint.provider.slug,
        prices_per_1m={name: getattr(endpoint, f"price_{name}") for name in PRICE_NAMES},
        context_length=endpoint.context_length,
        max_output_tokens=endpoint.max_output_tokens,
        ttft=speed_by_bucket(endpoint.id),
        uptime=uptime,
    )


def public_model_page(slug: str) -> ModelPage | None:
    """The model's page, None for a model no customer can call. Read at most once per
    ``PAGE_TTL_S`` per slug and process: the page needs no login, and its uptime sums a
    day of attempts."""
    now = time.monotonic()
    hit = _recent_pages.get(slug)
    if hit is not None and hit[0] > now:
        return hit[1]
    page = _read_model_page(slug)
    if len(_recent_pages) >= MAX_RECENT_PAGES:  # made-up slugs cannot grow it
        _recent_pages.clear()
    _recent_pages[slug] = (now + PAGE_TTL_S, page)
    return page


def forget_model_pages() -> None:
    _recent_pages.clear()


def _read_model_page(slug: str) -> ModelPage | None:
    model = public_model_list().filter(slug=slug).first()
    if model is None:
        return None
    endpoints = sorted(model.serving, key=lambda e: (e.price_input, e.provider.slug))
    uptime = unscoped_uptime([e.id for e in endpoints])
    return ModelPage(model=model, offers=[_offer(e, uptime[e.id]) for e in endpoints])
