"""Fixtures of the gateway tests beside the shared ones (tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import pytest


@pytest.fixture
def claude(gateway, tenant) -> Iterator[anthropic.Anthropic]:
    """The official anthropic client pointed at the live gateway's Messages API with the
    tenant's key (``client``'s twin)."""
    with anthropic.Anthropic(
        base_url=f"{gateway.base_url}/api", api_key=tenant.key, max_retries=0
    ) as sdk:
        yield sdk
