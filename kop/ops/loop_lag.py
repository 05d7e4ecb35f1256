"""How late the event loop wakes a task that asked to sleep 100 ms: the time other work
held the loop meanwhile. Every request, heartbeat and Pulsar answer waits behind
whatever holds it, so this is what a dashboard watches when latency grows but neither
Pulsar nor the network is to blame (`kop_event_loop_lag_seconds`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

INTERVAL_S = 0.1


async def watch_loop_lag(observe: Callable[[float], None], interval_s: float = INTERVAL_S) -> None:
    """Runs until cancelled, observing each wake-up's lateness in seconds."""
    loop = asyncio.get_running_loop()
    while True:
        asked = loop.time() + interval_s
        await asyncio.sleep(interval_s)
        observe(max(0.0, loop.time() - asked))
