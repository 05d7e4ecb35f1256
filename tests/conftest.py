"""Suite-wide guard: a test must leave the main thread's event loop in place.

`asyncio.run` in the main thread unsets the thread's current loop when it
ends. pytest-asyncio then fails every later async test of the session with
"There is no current event loop", far from the cause (CI once failed 156
tests after one synchronous helper did this). The guard fails the test
that did it instead.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator

import pytest

# No Schema Registry on 8081 in tests unless one asks for it (KopConfig's default): the
# suite runs gateways side by side, in process and as processes (which inherit this).
os.environ.setdefault("KOP_SCHEMA_REGISTRY_PORT", "0")


def _main_loop_unset() -> bool:
    try:
        asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:
        return threading.current_thread() is threading.main_thread()
    return False


@pytest.fixture(autouse=True)
def _keeps_the_event_loop() -> Iterator[None]:
    before = _main_loop_unset()
    yield
    if not before and _main_loop_unset():
        pytest.fail(
            "this test unset the main thread's event loop (asyncio.run on the main "
            "thread?); run the coroutine on a thread of its own instead",
            pytrace=False,
        )
