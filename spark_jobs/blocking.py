"""Run a coroutine to completion from plain, synchronous code.

`asyncio.run` in the main thread installs a loop and, when done, unsets the
thread's current loop: a caller that had one (a notebook, a test session, an
application embedding the jobs) is left without it. Running on a worker
thread of its own leaves the caller's loop exactly as it was.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run_apart(work: Coroutine[Any, Any, T]) -> T:
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kop-run-apart") as pool:
        return pool.submit(asyncio.run, work).result()
