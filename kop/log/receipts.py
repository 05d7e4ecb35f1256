"""This kop's own writes as the storage acknowledged them, for the tail follower to
count without reading them back.

Reading every entry back from Pulsar doubles the bytes that cross Pulsar and the
machine for each produce, and waits for Pulsar to dispatch the entry to a reader
before the produce can be answered. But a receipt names where an entry was
stored, and an entry id one past the last counted one, in the same ledger, leaves
no room for anyone else's entry in between: such an entry can be counted from
what kop sent. The follower switches to counting receipts when the next one it
holds is such an entry, and goes back to reading the log as soon as they cannot
be trusted to be the whole log: a gap (another writer's entry, a new ledger, a
write whose receipt said no place or never came), a failed write, or a quiet
spell (another writer may be writing now, and nobody would see it).
"""

from __future__ import annotations

import asyncio
from collections import deque

from kop.storage.types import Position, StoredEntry

# With no receipt for this long (nothing of ours in flight, or Pulsar slow to answer),
# the log is read again: another writer's entries are seen at most this late.
QUIET_S = 0.05


class ReceiptFeed:
    def __init__(self, quiet_s: float = QUIET_S) -> None:
        self._quiet_s = quiet_s
        self._queue: deque[StoredEntry] = deque()
        self._waiter: asyncio.Future[bool] | None = None  # the follower's, for a change
        self._failed = False

    def put(self, stored: list[StoredEntry | None]) -> None:
        """Receipts of one write, in send order (None: stored, place not said)."""
        self._queue.extend(s for s in stored if s is not None)
        _wake(self._waiter, True)

    def failed(self) -> None:
        """A write failed: some of it may be stored, only reading can tell."""
        self._failed = True
        self._queue.clear()
        _wake(self._waiter, True)

    def follows(self, last: Position) -> bool:
        """Whether the next receipt held is the entry right after `last` (after
        dropping those at or before it, counted already)."""
        queue = self._queue
        while queue and queue[0].position.entry_key <= last.entry_key:
            queue.popleft()
        self._failed = False
        return bool(queue) and _next_to(queue[0].position, last)

    async def next(self, last: Position) -> StoredEntry | None:
        """The entry right after `last`, from its receipt; None when the log must be
        read instead (a gap, a failed write, or a quiet spell)."""
        queue = self._queue
        while True:
            while queue and queue[0].position.entry_key <= last.entry_key:
                queue.popleft()  # counted already (read back before the switch)
            if queue:  # not taken unless next: after reading up to it, it may be
                return queue.popleft() if _next_to(queue[0].position, last) else None
            if self._failed:
                return None
            # A future and a timer, not an Event under `asyncio.timeout`: the follower
            # waits here once per produce of a client sending one record at a time.
            loop = asyncio.get_running_loop()
            waiter = self._waiter = loop.create_future()
            quiet = loop.call_later(self._quiet_s, _wake, waiter, False)
            try:
                changed = await waiter
            finally:
                quiet.cancel()
                self._waiter = None
            if not changed:
                return None


def _wake(waiter: asyncio.Future[bool] | None, changed: bool) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(changed)


def _next_to(at: Position, last: Position) -> bool:
    return at.ledger == last.ledger and at.entry == last.entry + 1
