"""kop_event_loop_lag_seconds: a loop held by other work shows as lateness of the
watcher's wake-up (after the hold, at least the part of it the sleep did not cover)."""

from __future__ import annotations

import asyncio
import time

from kop.ops.loop_lag import watch_loop_lag


async def test_a_loop_held_for_80_ms_shows_a_late_wake_up_of_that_size() -> None:
    seen: list[float] = []
    watcher = asyncio.create_task(watch_loop_lag(seen.append, interval_s=0.02))
    try:
        async with asyncio.timeout(5):
            while len(seen) < 3:
                await asyncio.sleep(0.005)
        time.sleep(0.08)  # work that holds the loop, as a long handler would
        count = len(seen)
        async with asyncio.timeout(5):
            while len(seen) == count:
                await asyncio.sleep(0.001)
    finally:
        watcher.cancel()
    assert seen[count] >= 0.05, seen
