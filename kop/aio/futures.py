"""Taking the outcome of a future nobody awaits.

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
