"""The customer's routing options (the request's ``provider`` object and model suffix)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .preferences import Cutoffs, parse_cutoffs
from .types import RoutingError

SORTS = ("price", "throughput", "latency")
SORT_PARTITIONS = ("model", "none")
SUFFIX_SORTS = {"floor": "price", "nitro": "throughput"}
# OpenRouter's documented preferences UberLLM accepts without acting on them (nothing
# in the catalog to filter on yet); ``ignored_keys`` names those a request sent.
NOOP_KEYS = frozenset({"enforce_distillable_text", "quantizations"})
_KEYS = frozenset(
    {
        "only",
        "ignore",
        "order",
        "sort",
        "allow_fallbacks",
        "max_price",
        "require_parameters",
        "data_collection",
        "zdr",
        "preferred_max_latency",
        "preferred_min_throughput",
    }
)
DATA_COLLECTION = ("allow", "deny")
_MAX_PRICE_KEYS = frozenset({"prompt", "completion"})
# max_price fields OpenRouter defines that have no price in UberLLM's catalog.
_NOOP_MAX_PRICE_KEYS = frozenset({"request", "image", "audio"})


def _bad(message: str) -> RoutingError:
    return RoutingError(400, "invalid_provider_options", message)


@dataclass(frozen=True, slots=True)
class RoutingOptions:
    """Parsed ``provider`` options. Slugs are lower-cased; prices are USD per 1M tokens.

    ``deny_data_collection`` (``data_collection: "deny"``) and ``zdr`` are hard filters on
    the endpoints' data policy (filters.py); ``max_latency_s`` / ``min_throughput`` are
    OpenRouter's ``preferred_max_latency`` (seconds to the first token) and
    ``preferred_min_throughput`` (output tokens/s) as (percentile, cutoff) pairs: an
    endpoint whose measured figures miss one is moved back, never excluded
    (preferences.py)."""

    only: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    order: tuple[str, ...] = ()
    sort: str | None = None
    allow_fallbacks: bool = True
    max_price_prompt: float | None = None
    max_price_completion: float | None = None
    require_parameters: bool = False
    ignored_keys: tuple[str, ...] = ()
    deny_data_collection: bool = False
    zdr: bool = False
    max_latency_s: Cutoffs = ()
    min_throughput: Cutoffs = ()

    @property
    def is_customer_choice(self) -> bool:
        """R2.10: smart routing does not run when the customer names providers or a sort."""
        return bool(self.only or self.ignore or self.order or self.sort)

    @property
    def named_providers(self) -> tuple[str, ...]:
        """The slugs that must exist for the model: only/ignore, and ``order`` when it
        allows no fallback (with fallbacks, an unknown or disabled provider in ``order``
        is skipped, as on OpenRouter)."""
        named = self.only + self.ignore
        return named if self.allow_fallbacks else named + self.order

    @classmethod
    def from_request(
        cls, provider_obj: dict[str, Any] | None, model_suffix: str | None = None
    ) -> RoutingOptions:
        """Validate a request's ``provider`` object and model-ID suffix.

        Raises RoutingError(400) on a wrong type, an unknown key, an unknown sort or
        suffix, or a suffix that contradicts ``sort``.
        """
        if not provider_obj and model_suffix is None and isinstance(provider_obj, dict | None):
            return _DEFAULTS  # most requests: nothing to parse (one object, made once)
        provider = {} if provider_obj is None else provider_obj
        if not isinstance(provider, dict):
            raise _bad("provider must be an object")
        unknown = sorted(set(provider) - _KEYS - NOOP_KEYS)
        if unknown:
            raise _bad(
                f"unsupported provider option(s): {', '.join(unknown)}; "
                f"supported: {', '.join(sorted(_KEYS | NOOP_KEYS))}"
            )
        max_prompt, max_completion = _parse_max_price(provider.get("max_price"))
        return cls(
            only=_parse_slugs(provider, "only"),
            ignore=_parse_slugs(provider, "ignore"),
            order=_parse_slugs(provider, "order"),
            sort=_merge_sort(_parse_sort(provider.get("sort")), _parse_suffix(model_suffix)),
            allow_fallbacks=_parse_bool(provider, "allow_fallbacks", default=True),
            max_price_prompt=max_prompt,
            max_price_completion=max_completion,
            require_parameters=_parse_bool(provider, "require_parameters", default=False),
            ignored_keys=ignored_keys(provider),
            deny_data_collection=_parse_data_collection(provider.get("data_collection")),
            zdr=_parse_bool(provider, "zdr", default=False),
            max_latency_s=parse_cutoffs(provider.get("preferred_max_latency"), "latency"),
            min_throughput=parse_cutoffs(provider.get("preferred_min_throughput"), "throughput"),
        )


_DEFAULTS = RoutingOptions()


def ignored_keys(provider: dict[str, Any]) -> tuple[str, ...]:
    """The OpenRouter preferences in ``provider`` that UberLLM accepts without acting on
    them (the generation record's routing reason names them)."""
    return tuple(sorted(NOOP_KEYS & provider.keys()))


def split_model_suffix(model_id: str) -> tuple[str, str | None]:
    """``"deepseek/v4:floor"`` -> ``("deepseek/v4", "floor")``. Only the suffixes UberLLM
    implements are split off; any other ``:...`` stays part of the model slug."""
    slug, colon, suffix = model_id.rpartition(":")
    if colon and slug and suffix in SUFFIX_SORTS:
        return slug, suffix
    return model_id, None


def _parse_slugs(provider: dict[str, Any], key: str) -> tuple[str, ...]:
    value = provider.get(key)
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise _bad(f"provider.{key} must be a list of provider slugs")
    slugs: list[str] = []
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise _bad(f"provider.{key} must contain non-empty strings, got {item!r}")
        slug = item.strip().lower()
        if slug not in slugs:
            slugs.append(slug)
    return tuple(slugs)


def _parse_sort(value: object) -> str | None:
    """A sort name, or OpenRouter's ``{"by": ..., "partition": ...}``: ``by`` is the sort
    (null: none); ``partition`` "model" (the default) or "none". UberLLM plans one model
    at a time, so "none" acts as "model": a ``models`` fallback stays a fallback."""
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"by", "partition"})
        if unknown:
            raise _bad(f"unsupported provider.sort field(s): {', '.join(unknown)}")
        partition = value.get("partition")
        if partition is not None and partition not in SORT_PARTITIONS:
            raise _bad(f"provider.sort.partition must be model or none, got {partition!r}")
        value = value.get("by")
    if value is None:
        return None
    if not isinstance(value, str) or value not in SORTS:
        raise _bad(f"provider.sort must be one of {', '.join(SORTS)}, got {value!r}")
    return value


def _parse_data_collection(value: object) -> bool:
    """True for ``"deny"``: only endpoints that keep no data."""
    if value is not None and value not in DATA_COLLECTION:
        raise _bad(f"provider.data_collection must be allow or deny, got {value!r}")
    return value == "deny"


def _parse_suffix(model_suffix: str | None) -> str | None:
    if not model_suffix:
        return None
    suffix = model_suffix.removeprefix(":")
    if suffix not in SUFFIX_SORTS:
        raise _bad(f"unknown model suffix :{suffix}; supported: :floor, :nitro")
    return SUFFIX_SORTS[suffix]


def _merge_sort(sort: str | None, suffix_sort: str | None) -> str | None:
    if sort and suffix_sort and sort != suffix_sort:
        raise _bad(f"provider.sort={sort!r} contradicts the model suffix (sort {suffix_sort!r})")
    return sort or suffix_sort


def _parse_bool(provider: dict[str, Any], key: str, *, default: bool) -> bool:
    value = provider.get(key)
    if value is None:  # absent, or null (OpenRouter's schema allows null: the default)
        return default
    if not isinstance(value, bool):
        raise _bad(f"provider.{key} must be true or false, got {value!r}")
    return value


def _parse_max_price(value: object) -> tuple[float | None, float | None]:
    if value is None:
        return None, None
    if not isinstance(value, dict):
        raise _bad("provider.max_price must be an object with prompt and/or completion")
    unknown = sorted(set(value) - _MAX_PRICE_KEYS - _NOOP_MAX_PRICE_KEYS)
    if unknown:
        raise _bad(f"unsupported provider.max_price field(s): {', '.join(unknown)}")
    return _parse_price(value, "prompt"), _parse_price(value, "completion")


def _parse_price(max_price: dict[str, Any], key: str) -> float | None:
    value = max_price.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad(f"provider.max_price.{key} must be a number (USD per 1M tokens)")
    if not math.isfinite(value) or value < 0:
        raise _bad(f"provider.max_price.{key} must be a finite number >= 0, got {value}")
    return float(value)
