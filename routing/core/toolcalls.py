"""Tool-call quality (O5): is a returned tool call well formed, and which endpoints of a
model return malformed ones far more often than their peers.

``check_tool_calls(tools, calls)`` judges an assembled reply's tool calls against the
request's ``tools[].function.parameters``: a call is malformed when its function is not
one of the request's, its arguments are not a JSON object, or they break the schema in
the subset tools use (``type``, ``required``, ``properties``, ``enum``, ``items``,
``additionalProperties: false``; other keywords are not judged). It runs once per
served call that carried tools, never per chunk.

``ToolCallQuality`` keeps decayed counts of checked calls per endpoint and names the
*laggards*: an endpoint with at least ``min_samples`` recent checks whose error rate is
at least ``rate_floor`` and ``peer_factor`` times the best measured peer's (a peer
without enough checks counts as clean: it is worth a try). For requests that carry
tools the router puts laggards last, except on an exploration draw
(``SmartRouter.plan``); plain-text requests do not read this.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

HALF_LIFE_S = 300.0
MIN_SAMPLES = 20.0
RATE_FLOOR = 0.05
PEER_FACTOR = 3.0

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def _is_type(value: Any, kind: Any) -> bool:
    if isinstance(kind, list):
        return any(_is_type(value, k) for k in kind)
    types = _TYPES.get(kind) if isinstance(kind, str) else None
    if types is None:
        return True  # an unknown type is not judged
    if isinstance(value, bool) and kind != "boolean":
        return False  # JSON's true is not a number
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, types)


def fits(value: Any, schema: Any) -> bool:
    """``value`` satisfies ``schema`` in the subset tools use (module doc)."""
    if not isinstance(schema, Mapping):
        return True
    if "type" in schema and not _is_type(value, schema["type"]):
        return False
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        return False
    if isinstance(value, dict):
        return _fits_object(value, schema)
    if isinstance(value, list) and "items" in schema:
        return all(fits(item, schema["items"]) for item in value)
    return True


def _fits_object(value: dict[str, Any], schema: Mapping[str, Any]) -> bool:
    required = schema.get("required")
    if isinstance(required, list) and any(key not in value for key in required):
        return False
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    closed = schema.get("additionalProperties") is False
    for key, item in value.items():
        if key in properties:
            if not fits(item, properties[key]):
                return False
        elif closed:
            return False
    return True


def tool_schemas(tools: Any) -> dict[str, Any]:
    """The request's functions by name: their ``parameters`` (None: not given)."""
    schemas: dict[str, Any] = {}
    for tool in tools if isinstance(tools, list) else ():
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            schemas[function["name"]] = function.get("parameters")
    return schemas


def call_is_valid(schemas: Mapping[str, Any], call: Any) -> bool:
    """One returned tool call: a known function and JSON-object arguments that fit."""
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or function.get("name") not in schemas:
        return False
    arguments = function.get("arguments")
    try:
        args = json.loads(arguments) if isinstance(arguments, str) and arguments else {}
    except ValueError:
        return False
    return isinstance(args, dict) and fits(args, schemas[function["name"]])


def check_tool_calls(tools: Any, calls: Sequence[Any]) -> bool:
    """Whether every tool call of an assembled reply is well formed (module doc)."""
    schemas = tool_schemas(tools)
    return all(call_is_valid(schemas, call) for call in calls)


class _Counts:
    __slots__ = ("bad", "t", "total")

    def __init__(self, t: float) -> None:
        self.total = 0.0
        self.bad = 0.0
        self.t = t

    def decay(self, now: float, half_life_s: float) -> None:
        if now > self.t:
            factor = 0.5 ** ((now - self.t) / half_life_s)
            self.total *= factor
            self.bad *= factor
            self.t = now


@dataclass(eq=False)
class ToolCallQuality:
    """Decayed tool-call checks per endpoint, and the laggards among peers (module doc)."""

    half_life_s: float = HALF_LIFE_S
    min_samples: float = MIN_SAMPLES
    rate_floor: float = RATE_FLOOR
    peer_factor: float = PEER_FACTOR
    _counts: dict[int, _Counts] = field(default_factory=dict, init=False, repr=False)

    def checked(self, endpoint_id: int, valid: bool, now: float) -> None:
        counts = self._counts.get(endpoint_id)
        if counts is None:
            counts = self._counts[endpoint_id] = _Counts(now)
        counts.decay(now, self.half_life_s)
        counts.total += 1.0
        counts.bad += 0.0 if valid else 1.0

    def rate(self, endpoint_id: int, now: float) -> float | None:
        """The recent error rate (None: fewer than ``min_samples`` recent checks)."""
        counts = self._counts.get(endpoint_id)
        if counts is None:
            return None
        counts.decay(now, self.half_life_s)
        return counts.bad / counts.total if counts.total >= self.min_samples else None

    def laggards(self, endpoint_ids: Iterable[int], now: float) -> frozenset[int]:
        """The endpoints far worse than their best peer among ``endpoint_ids``."""
        if not self._counts:
            return frozenset()
        ids = list(endpoint_ids)
        rates = {eid: self.rate(eid, now) for eid in ids}
        bad = set()
        for eid, rate in rates.items():
            if rate is None or rate < self.rate_floor:
                continue
            peers = [r for other, r in rates.items() if other != eid]
            if peers and rate >= self.peer_factor * min(r or 0.0 for r in peers):
                bad.add(eid)
        return frozenset(bad)
