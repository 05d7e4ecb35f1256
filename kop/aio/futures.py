"""Taking the outcome of a future nobody awaits; cancelling a task and waiting for it.

A future that fails while no one awaits it is logged by asyncio from its finalizer,
whenever the garbage collector runs; on Python 3.11 that formatting can break an
`ast.parse` it lands inside (stop 48's flaky unit tier). Every fire-and-forget future
in kop gets `retrieve` as its done callback instead: its failure is known to whoever
started it and answered or logged there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import Any


def retrieve(future: asyncio.Future[Any]) -> None:
    """Mark the future's failure (if any) seen."""
    if not future.cancelled():
        future.exception()


async def cancel_and_wait(task: asyncio.Future[Any]) -> None:
    """Cancel `task` and return once it is done. Cancelling the caller meanwhile is
    raised, not taken for the task's own end: `suppress(CancelledError)` around the
    await swallowed it, and a loop that let a loading partition go that way (kop
    stopped while partitions still loaded) went on for ever, holding up the stop. A
    task that had failed before raises its failure, as awaiting it would."""
    task.cancel()
    await asyncio.wait([task])
    if not task.cancelled() and (exc := task.exception()) is not None:
        raise exc  # it had failed before: as awaiting it would raise


async def side_by_side(calls: Iterable[Awaitable[None]], at_once: int) -> None:
    """Await all of `calls`, at most `at_once` at a time (each may wait on a round trip
    and there may be thousands); the first failure is raised once all have finished."""
    gate = asyncio.Semaphore(at_once)

    async def one(call: Awaitable[None]) -> None:
        async with gate:
            await call

    results = await asyncio.gather(*(one(c) for c in calls), return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r
