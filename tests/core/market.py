"""The three-endpoint test market shared by the core router's tests
(tests/core/test_smart_router.py) and the one-router test (tests/routing/test_one_router.py)."""

from __future__ import annotations

from routing.core import ModelInfo
from routing.core.types import EndpointInfo

MODEL = ModelInfo("m", 1.0, 2.0, 0.1)
ENDPOINTS = (
    EndpointInfo(1, "alpha", 0.20, 0.02, 0.0, 0.4, 200_000),
    EndpointInfo(2, "bravo", 0.30, 0.03, 0.0, 0.5, 200_000),
    EndpointInfo(3, "charlie", 0.40, 0.04, 0.0, 0.6, 200_000),
)
PEERS = (1, 2, 3)
