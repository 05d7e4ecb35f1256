"""Recognising this kop's own writes as the tail follower counts them.

A writer's messages are stored in send order and each at most once, so its
n-th observed message is its n-th sent one: a write is found by counting, not
by trusting Pulsar's send receipts (a reconnect can lose them). Only writes in
flight are tracked, in send order per writer, so memory is what is in flight.
When counting cannot be trusted any more (a writer failed, or messages went
missing under the follower), its pending writes fail and the writer is dropped.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass

from kop.storage.types import StorageError


@dataclass(slots=True)
class _Pending:
    first: int  # index of the write's first message among the writer's sends
    last: int
    future: asyncio.Future[int]  # the base offset of its first message
    base: int | None = None


class OwnWrites:
    def __init__(self) -> None:
        self._seen: dict[str, int] = {}  # writer -> messages of it counted so far
        self._pending: dict[str, deque[_Pending]] = {}

    def track(self, writer: str) -> None:
        """Start counting a new writer's messages (before it sends any)."""
        self._seen.setdefault(writer, 0)

    def expect(self, writer: str, first: int, count: int) -> asyncio.Future[int]:
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        future.add_done_callback(_retrieve)
        self._pending.setdefault(writer, deque()).append(_Pending(first, first + count - 1, future))
        return future

    def observed(self, writer: str, offset: int) -> None:
        """The follower counted the next message of `writer` at `offset`."""
        index = self._seen.get(writer)
        if index is None:
            return  # not ours (another kop, a Pulsar application, a retired writer)
        self._seen[writer] = index + 1
        queue = self._pending.get(writer)
        while queue and queue[0].last < index:  # failed writes whose messages never came
            queue.popleft()
        if not queue or index < queue[0].first:
            return
        head = queue[0]
        if index == head.first:
            head.base = offset
        if index == head.last:
            queue.popleft()
            if not head.future.done() and head.base is not None:
                head.future.set_result(head.base)

    def fail_writer(self, writer: str, why: str) -> None:
        """Counting this writer's messages no longer names them: fail its pending
        writes and forget it."""
        self._seen.pop(writer, None)
        for pending in self._pending.pop(writer, ()):
            if not pending.future.done():
                pending.future.set_exception(StorageError(why))

    def fail_all(self, why: str) -> None:
        for writer in list(self._seen):
            self.fail_writer(writer, why)

    def writers(self) -> list[str]:
        return list(self._seen)

    @property
    def in_flight(self) -> int:
        return sum(len(q) for q in self._pending.values())


def _retrieve(future: asyncio.Future[int]) -> None:
    if not future.cancelled():
        future.exception()
