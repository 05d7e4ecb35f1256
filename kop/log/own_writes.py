"""Recognising this kop's own writes as the tail follower counts them.

A writer's entries are stored in send order, each at most once, under its name
and sequence id (the n-th entry it sent has id n), which the follower reads
back: a write is found when its entries are counted, not by trusting Pulsar's
send receipts (a reconnect can lose them). Only writes in flight are tracked,
in send order per writer, so memory is what is in flight. When the log can no
longer be trusted to show a writer's entries (it failed, or entries went
missing under the follower), its pending writes fail and the writer is dropped.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass

from kop.aio.futures import retrieve
from kop.storage.types import StorageError


@dataclass(slots=True)
class _Pending:
    first: int  # sequence id of the write's first entry
    last: int
    future: asyncio.Future[int]  # the base offset of its first entry
    base: int | None = None


class OwnWrites:
    def __init__(self) -> None:
        self._tracked: set[str] = set()
        self._pending: dict[str, deque[_Pending]] = {}

    def track(self, writer: str) -> None:
        """Start watching for a new writer's entries (before it sends any)."""
        self._tracked.add(writer)

    def expect(self, writer: str, first: int, count: int) -> asyncio.Future[int]:
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        future.add_done_callback(retrieve)
        self._pending.setdefault(writer, deque()).append(_Pending(first, first + count - 1, future))
        return future

    def observed(self, writer: str, index: int, offset: int) -> bool:
        """The follower counted entry `index` of `writer` at `offset`; whether the
        writer is one of ours."""
        if writer not in self._tracked:
            return False  # not ours (another kop, a Pulsar application, a retired writer)
        queue = self._pending.get(writer)
        while queue and queue[0].last < index:  # failed writes whose messages never came
            queue.popleft()
        if not queue or index < queue[0].first:
            return True
        head = queue[0]
        if index == head.first:
            head.base = offset
        if index == head.last:
            queue.popleft()
            if not head.future.done() and head.base is not None:
                head.future.set_result(head.base)
        return True

    def fail_writer(self, writer: str, why: str) -> None:
        """The log no longer shows this writer's entries faithfully: fail its
        pending writes and forget it."""
        self._tracked.discard(writer)
        for pending in self._pending.pop(writer, ()):
            if not pending.future.done():
                pending.future.set_exception(StorageError(why))

    def fail_all(self, why: str) -> None:
        for writer in list(self._tracked):
            self.fail_writer(writer, why)

    def writers(self) -> list[str]:
        return list(self._tracked)

    @property
    def in_flight(self) -> int:
        return sum(len(q) for q in self._pending.values())
