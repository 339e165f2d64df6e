"""The emulator tests' own emulator: one per test module, serving that module's
``PROFILES`` (not the session's test market of tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lab.emulator import EmulatorServer


@pytest.fixture(scope="module")
def module_emulator(request: pytest.FixtureRequest) -> Iterator[EmulatorServer]:
    with EmulatorServer(request.module.PROFILES) as server:
        yield server


@pytest.fixture
def emu(module_emulator: EmulatorServer) -> EmulatorServer:
    """The module's emulator with log, caches, RNGs and overrides reset."""
    module_emulator.reset(profiles=True)
    return module_emulator
