"""Scenario files: a market (models, endpoints, timed events), the gateway's settings and
the traffic, as JSON (documented field by field in docs/scenarios.md).

``load_scenario(path_or_name)`` validates the file and returns a frozen ``Scenario``.
Keys starting with ``_`` (``_comment``) are ignored everywhere; any other unknown key
is an error, so a typo fails loudly instead of silently simulating something else.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from .fields import (
    ENDPOINT_DEFAULTS,
    GATEWAY_DEFAULTS,
    PRICE_FIELDS,
    ScenarioError,
    endpoint_fields,
    known,
)
from .traffic_spec import ClassSpec, parse_class

__all__ = [
    "ENDPOINT_DEFAULTS",
    "PRICE_FIELDS",
    "ClassSpec",
    "EventSpec",
    "ModelSpec",
    "Scenario",
    "ScenarioError",
    "load_scenario",
    "parse_scenario",
    "shipped_names",
]

SCENARIO_DIR = Path(__file__).resolve().parent / "scenarios"

TOP_KEYS = {
    "name",
    "description",
    "start_utc",
    "requests",
    "gateway",
    "models",
    "events",
    "traffic",
}


@dataclass(frozen=True, slots=True)
class ModelSpec:
    index: int
    slug: str
    list_price_input: float
    list_price_output: float
    list_price_cache_read: float | None
    endpoints: tuple[dict[str, Any], ...]  # validated endpoint_fields, with endpoint_id


@dataclass(frozen=True, slots=True)
class EventSpec:
    """From ``at_s`` (until ``until_s``, None = for good) set ``fields`` on the targets."""

    at_s: float
    until_s: float | None
    endpoint_ids: tuple[int, ...]
    fields: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    description: str
    start_epoch: float
    default_requests: int
    gateway: Mapping[str, Any]
    models: tuple[ModelSpec, ...]
    events: tuple[EventSpec, ...]
    classes: tuple[ClassSpec, ...]
    # traffic.daily_pattern: 24 multipliers of every class's arrival rate by UTC hour
    daily_pattern: tuple[float, ...] | None = None

    @property
    def endpoint_count(self) -> int:
        return sum(len(model.endpoints) for model in self.models)


def resolve_path(path_or_name: str) -> Path:
    """A file path, or the name of a shipped scenario (``deepseek-v4.1-flash``)."""
    path = Path(path_or_name)
    if path.exists():
        return path
    shipped = SCENARIO_DIR / (path_or_name.removesuffix(".json") + ".json")
    if shipped.exists():
        return shipped
    raise ScenarioError(
        f"no scenario file {path_or_name!r} (shipped: {', '.join(shipped_names())})"
    )


def shipped_names() -> list[str]:
    return sorted(p.stem for p in SCENARIO_DIR.glob("*.json"))


def load_scenario(path_or_name: str | Path) -> Scenario:
    path = resolve_path(str(path_or_name))
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ScenarioError(f"{path}: invalid JSON: {exc}") from None
    return parse_scenario(data, default_name=path.stem)


def parse_scenario(data: Mapping[str, Any], default_name: str = "scenario") -> Scenario:
    """Validate a scenario already parsed from JSON."""
    data = known(data, TOP_KEYS, "scenario")
    gateway = {**GATEWAY_DEFAULTS, **known(data.get("gateway", {}), GATEWAY_DEFAULTS, "gateway")}
    models, next_id = [], 1
    for index, raw in enumerate(data.get("models") or []):
        where = f"models[{index}]"
        raw = known(
            raw,
            {"slug", "list_price_input", "list_price_output", "list_price_cache_read", "endpoints"},
            where,
        )
        endpoints = []
        for position, endpoint in enumerate(raw.get("endpoints") or []):
            fields = endpoint_fields(endpoint, f"{where}.endpoints[{position}]", partial=False)
            endpoints.append({**fields, "endpoint_id": next_id})
            next_id += 1
        if not endpoints:
            raise ScenarioError(f"{where}: needs at least one endpoint")
        if "slug" not in raw:
            raise ScenarioError(f"{where}: missing slug")
        list_input, list_output, cache_read = _list_prices(raw, endpoints)
        models.append(
            ModelSpec(index, raw["slug"], list_input, list_output, cache_read, tuple(endpoints))
        )
    if not models:
        raise ScenarioError("scenario: needs at least one model")
    start = datetime.fromisoformat(data.get("start_utc", "2026-10-28T00:00:00+00:00"))
    return Scenario(
        name=data.get("name", default_name),
        description=data.get("description", ""),
        start_epoch=start.timestamp(),
        default_requests=int(data.get("requests", 20_000)),
        gateway=gateway,
        models=tuple(models),
        events=tuple(_event(e, i, models) for i, e in enumerate(data.get("events") or [])),
        classes=tuple(parse_class(c, i, models) for i, c in enumerate(_traffic(data))),
        daily_pattern=_daily_pattern(data),
    )


def _list_prices(
    raw: Mapping[str, Any], endpoints: list[dict[str, Any]]
) -> tuple[float, float, float | None]:
    """The model's list prices (R2.9). Each of ``list_price_input``/``list_price_output``
    left out is the highest price_input/price_output among its endpoints (the dearest
    seller stands in for the first party); ``list_price_cache_read`` left out is None
    (= the list input price) as before, except when ``list_price_input`` is left out
    too: then the highest price_cache_read among endpoints that have a prompt cache."""
    list_input = raw.get("list_price_input")
    if list_input is None:
        list_input = max(e["price_input"] for e in endpoints)
        cache_read = raw.get("list_price_cache_read")
        if cache_read is None:
            reads = [e["price_cache_read"] for e in endpoints if not e["no_cache"]]
            cache_read = max(reads) if reads else None
    else:
        cache_read = raw.get("list_price_cache_read")
    list_output = raw.get("list_price_output")
    if list_output is None:
        list_output = max(e["price_output"] for e in endpoints)
    return float(list_input), float(list_output), None if cache_read is None else float(cache_read)


def _traffic(data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    traffic = known(data.get("traffic") or {}, {"classes", "daily_pattern"}, "traffic")
    classes = traffic.get("classes") or []
    if not classes:
        raise ScenarioError("traffic.classes: needs at least one class")
    return classes


def _daily_pattern(data: Mapping[str, Any]) -> tuple[float, ...] | None:
    """``traffic.daily_pattern``: 24 numbers >= 0 (not all 0), hour 0-23 UTC."""
    raw = (data.get("traffic") or {}).get("daily_pattern")
    if raw is None:
        return None
    if (
        not isinstance(raw, list)
        or len(raw) != 24
        or not all(isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in raw)
        or not any(raw)
    ):
        raise ScenarioError(
            "traffic.daily_pattern: expected 24 numbers >= 0 (UTC hours 0-23), not all 0"
        )
    return tuple(float(v) for v in raw)


def _event(raw: Mapping[str, Any], index: int, models: list[ModelSpec]) -> EventSpec:
    where = f"events[{index}]"
    raw = known(raw, {"at_min", "until_min", "provider", "endpoint_id", "set"}, where)
    targets = tuple(
        e["endpoint_id"]
        for model in models
        for e in model.endpoints
        if e["provider"] == raw.get("provider") or e["endpoint_id"] == raw.get("endpoint_id")
    )
    if not targets:
        raise ScenarioError(f"{where}: no endpoint matches provider/endpoint_id")
    until = raw.get("until_min")
    fields = endpoint_fields(raw.get("set") or {}, f"{where}.set", partial=True)
    return EventSpec(
        float(raw["at_min"]) * 60, None if until is None else float(until) * 60, targets, fields
    )
