"""The customer's routing options (the request's ``provider`` object and model suffix)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .types import RoutingError

SORTS = ("price", "throughput", "latency")
SUFFIX_SORTS = {"floor": "price", "nitro": "throughput"}
# OpenRouter's documented preferences UberLLM accepts without acting on them (nothing
# in the catalog to filter on yet, or routing already does it: smart routing weighs
# latency and throughput itself); ``ignored_keys`` names those a request sent.
NOOP_KEYS = frozenset({
    "data_collection", "zdr", "enforce_distillable_text", "quantizations",
    "preferred_max_latency", "preferred_min_throughput",
})  # fmt: skip
_KEYS = frozenset({
    "only", "ignore", "order", "sort", "allow_fallbacks", "max_price", "require_parameters",
})  # fmt: skip
_MAX_PRICE_KEYS = frozenset({"prompt", "completion"})
# max_price fields OpenRouter defines that have no price in UberLLM's catalog.
_NOOP_MAX_PRICE_KEYS = frozenset({"request", "image", "audio"})


def _bad(message: str) -> RoutingError:
    return RoutingError(400, "invalid_provider_options", message)


@dataclass(frozen=True, slots=True)
class RoutingOptions:
    """Parsed ``provider`` options. Slugs are lower-cased; prices are USD per 1M tokens."""

    only: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    order: tuple[str, ...] = ()
    sort: str | None = None
    allow_fallbacks: bool = True
    max_price_prompt: float | None = None
    max_price_completion: float | None = None
    require_parameters: bool = False
    ignored_keys: tuple[str, ...] = ()

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
            ignored_keys=tuple(sorted(NOOP_KEYS & provider.keys())),
        )


_DEFAULTS = RoutingOptions()


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
    if value is None:
        return None
    if not isinstance(value, str) or value not in SORTS:
        raise _bad(f"provider.sort must be one of {', '.join(SORTS)}, got {value!r}")
    return value


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
    value = provider.get(key, default)
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
