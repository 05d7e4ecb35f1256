"""A deterministic asyncio loop with simulated time.

Nothing here waits for real time: when no callback is ready, the clock jumps to
the next timer. A loop with nothing ready and no timer can never make progress
again, which is a hang, so it raises `Deadlock` instead of blocking forever.
Used only with in-memory storage (no sockets, no threads), so runs repeat exactly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")


class Deadlock(AssertionError):
    """Every task waits on something that nothing will ever complete."""


class SimLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        super().__init__()
        self._now = 0.0

    def time(self) -> float:
        return self._now

    def _run_once(self) -> None:
        ready: Any = self._ready  # type: ignore[attr-defined]
        scheduled: Any = self._scheduled  # type: ignore[attr-defined]
        if not ready and not self._stopping:  # type: ignore[attr-defined]
            live = [h for h in scheduled if not h.cancelled()]
            if not live:
                raise Deadlock("no task can make progress and no timer is pending")
            self._now = max(self._now, min(h.when() for h in live))
        super()._run_once()  # type: ignore[misc]

    def run(self, aw: Awaitable[T], within: float) -> T:
        """Run `aw` to completion; it must finish within `within` simulated seconds."""

        async def bounded() -> T:
            limit = asyncio.timeout(within)
            try:
                async with limit:
                    return await aw
            except TimeoutError:
                if limit.expired():
                    raise AssertionError(
                        f"operation did not complete within {within} simulated seconds"
                    ) from None
                raise

        return self.run_until_complete(bounded())

    def shutdown(self) -> None:
        """Cancel whatever still runs (tail readers, flushers) and close the loop."""
        tasks = asyncio.all_tasks(self)
        for task in tasks:
            task.cancel()
        if tasks:
            self.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        self.close()

    def settle(self, seconds: float) -> None:
        """Let background tasks run for `seconds` of simulated time."""
        self.run_until_complete(asyncio.sleep(seconds))
