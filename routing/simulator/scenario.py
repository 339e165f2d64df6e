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
        cache_read = raw.get("list_price_cache_read")
        models.append(
            ModelSpec(
                index,
                raw["slug"],
                float(raw["list_price_input"]),
                float(raw["list_price_output"]),
                None if cache_read is None else float(cache_read),
                tuple(endpoints),
            )
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
    )


def _traffic(data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    traffic = known(data.get("traffic") or {}, {"classes"}, "traffic")
    classes = traffic.get("classes") or []
    if not classes:
        raise ScenarioError("traffic.classes: needs at least one class")
    return classes


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
