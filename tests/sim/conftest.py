"""A fresh simulated-time loop per test, with whatever it still runs cancelled after."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.sim.clock import SimLoop


@pytest.fixture
def loop() -> Iterator[SimLoop]:
    sim = SimLoop()
    yield sim
    sim.shutdown()
