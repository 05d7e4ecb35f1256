"""The gateway's stack of closes: each part pushes its close as it starts, so a stop,
or a start that fails half-way, closes exactly what was started, the newest first."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine

from kop.aio.futures import cancel_and_wait

log = logging.getLogger(__name__)


class Closes:
    def __init__(self) -> None:
        self._stack = contextlib.AsyncExitStack()

    def push(self, close: Callable[[], Awaitable[object]]) -> None:
        """`close` runs at stop, before what was pushed earlier; a close that fails is
        logged and the rest still run (a Pulsar client left open at exit aborts the
        process from its C++ threads)."""

        async def logged() -> None:
            try:
                await close()
            except Exception:
                log.exception("during shutdown")

        self._stack.push_async_callback(logged)

    def task(self, work: Coroutine[object, object, None], name: str) -> asyncio.Task[None]:
        """`work` in the background, cancelled (and waited for) at stop."""
        task = asyncio.create_task(work, name=name)
        self.push(lambda: cancel_and_wait(task))
        return task

    async def close(self) -> None:
        await self._stack.aclose()
