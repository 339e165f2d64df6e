"""Traffic classes of a scenario file (``traffic.classes[]``, docs/scenarios.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from routing.core import RoutingError, RoutingOptions

from .fields import ScenarioError, known
from .randomness import Dist

CLASS_KEYS = {
    "name",
    "model",
    "kind",
    "requests_per_s",
    "conversations_per_min",
    "prompt_tokens",
    "first_prompt_tokens",
    "growth_tokens",
    "turns",
    "turn_gap_s",
    "max_prompt_tokens",
    "output_tokens",
    "stream_share",
    "shared_prefix_tokens",
    "max_price_share",
    "max_price",
    "options_share",
    "options",
}


@dataclass(frozen=True, slots=True)
class ClassSpec:
    name: str
    index: int
    model: int
    conversation: bool
    rate_per_s: float  # requests/s (single) or conversations/s
    prompt: Dist | None
    first_prompt: Dist | None
    growth: Dist | None
    turns: Dist | None
    turn_gap_s: Dist | None
    max_prompt_tokens: int
    output: Dist
    stream_share: float
    shared_prefix_tokens: int
    max_price_share: float
    max_price: RoutingOptions | None
    options_share: float
    options: tuple[RoutingOptions, ...]


def _dist(raw: Mapping[str, Any], key: str, where: str) -> Dist | None:
    if key not in raw:
        return None
    try:
        return Dist(raw[key], f"{where}.{key}")
    except (KeyError, TypeError, ValueError) as exc:
        raise ScenarioError(f"{where}.{key}: {exc}") from None


def _options(raw: Any, where: str) -> RoutingOptions:
    try:
        return RoutingOptions.from_request(raw)
    except RoutingError as exc:
        raise ScenarioError(f"{where}: {exc.message}") from None


def parse_class(raw: Mapping[str, Any], index: int, models: list[Any]) -> ClassSpec:
    where = f"traffic.classes[{index}]"
    raw = known(raw, CLASS_KEYS, where)
    slugs = [m.slug for m in models]
    model = slugs.index(raw["model"]) if raw.get("model") in slugs else 0
    if raw.get("model") not in (None, *slugs):
        raise ScenarioError(f"{where}.model: unknown model {raw['model']!r}")
    conversation = raw.get("kind", "single") == "conversation"
    rate = raw.get("conversations_per_min", 0) / 60 if conversation else raw.get("requests_per_s")
    if not rate or rate <= 0:
        needed = "conversations_per_min" if conversation else "requests_per_s"
        raise ScenarioError(f"{where}: {needed} must be > 0")
    needs = (
        ("first_prompt_tokens", "growth_tokens", "turns", "turn_gap_s")
        if conversation
        else ("prompt_tokens",)
    )
    missing = [k for k in (*needs, "output_tokens") if k not in raw]
    if missing:
        raise ScenarioError(f"{where}: missing {', '.join(missing)}")
    max_price = raw.get("max_price")
    if raw.get("max_price_share") and max_price is None:
        raise ScenarioError(f"{where}: max_price_share needs max_price")
    if raw.get("options_share") and not raw.get("options"):
        raise ScenarioError(f"{where}: options_share needs options")
    return ClassSpec(
        name=raw.get("name", f"class{index}"),
        index=index,
        model=model,
        conversation=conversation,
        rate_per_s=float(rate),
        prompt=_dist(raw, "prompt_tokens", where),
        first_prompt=_dist(raw, "first_prompt_tokens", where),
        growth=_dist(raw, "growth_tokens", where),
        turns=_dist(raw, "turns", where),
        turn_gap_s=_dist(raw, "turn_gap_s", where),
        max_prompt_tokens=int(raw.get("max_prompt_tokens", 1_000_000)),
        output=_dist(raw, "output_tokens", where),  # type: ignore[arg-type]
        stream_share=float(raw.get("stream_share", 1.0)),
        shared_prefix_tokens=int(raw.get("shared_prefix_tokens", 0)),
        max_price_share=float(raw.get("max_price_share", 0.0)),
        max_price=None if max_price is None else _options({"max_price": max_price}, where),
        options_share=float(raw.get("options_share", 0.0)),
        options=tuple(_options(o, f"{where}.options") for o in raw.get("options") or []),
    )
