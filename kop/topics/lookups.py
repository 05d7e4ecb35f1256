"""Answers from Pulsar's admin API, remembered for a while and asked for once.

Every Metadata request may name topics, and each name not remembered is a REST
call to Pulsar. A client naming 100,000 topics, or a thousand clients asking for
the same one at once, must not become that many calls: concurrent asks for one
key share one call, at most `concurrency` calls run at a time, and what is
remembered is bounded in entries (least recently used first out).

An answer of "none" (a topic that does not exist) may be remembered for less time
than the others (`missing_ttl_s`): another instance may create it any moment, and
clients that go on to use a topic they just created would be told it is unknown.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Lookups(Generic[K, V]):
    def __init__(
        self,
        fetch: Callable[[K], Awaitable[V]],
        ttl_s: float,
        max_entries: int = 10_000,
        concurrency: int = 16,
        missing_ttl_s: float | None = None,
    ) -> None:
        self._fetch = fetch
        self._ttl = ttl_s
        self._missing_ttl = ttl_s if missing_ttl_s is None else missing_ttl_s
        self._max = max_entries
        self._gate = asyncio.Semaphore(concurrency)
        self._known: OrderedDict[K, tuple[float, V]] = OrderedDict()
        self._asking: dict[K, asyncio.Future[V]] = {}

    def forget(self, key: K) -> None:
        self._known.pop(key, None)

    def __len__(self) -> int:
        return len(self._known)

    async def get(self, key: K) -> V:
        known = self._known.get(key)
        ttl = self._ttl if known is None or known[1] is not None else self._missing_ttl
        if known is not None and time.monotonic() - known[0] < ttl:
            self._known.move_to_end(key)
            return known[1]
        asking = self._asking.get(key)
        if asking is None:
            asking = asyncio.ensure_future(self._ask(key))
            self._asking[key] = asking
        # A caller that gives up does not cancel the others' answer.
        return await asyncio.shield(asking)

    async def _ask(self, key: K) -> V:
        try:
            async with self._gate:
                value = await self._fetch(key)
            self._known[key] = (time.monotonic(), value)
            self._known.move_to_end(key)
            while len(self._known) > self._max:
                self._known.popitem(last=False)
            return value
        finally:
            del self._asking[key]
