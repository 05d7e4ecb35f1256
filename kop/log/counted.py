"""Where a counted entry goes: everything in a partition that learns from it.

The tail follower counts an entry (read back or from its receipt); this applies
it once to the offset index, the tail buffer, the producer states and this
kop's pending writes, accounts for malformed entries and disagreements with the
persisted mark, and wakes long-poll fetches.
"""

from __future__ import annotations

import asyncio
import logging

from kop.log.counting import LogEntry
from kop.log.offset_index import Mark, OffsetIndex
from kop.log.own_writes import OwnWrites
from kop.log.producer_state import ProducerStates
from kop.log.stats import LogStats
from kop.log.tail_buffer import TailBuffer
from kop.log.txn_index import TxnIndex
from kop.storage.types import StoredEntry

log = logging.getLogger(__name__)


class Wakeups:
    """Futures resolved when the next entry is counted (long-poll fetches wait on
    them); abandoned ones are pruned so an idle partition does not collect them."""

    def __init__(self) -> None:
        self.waiting: list[asyncio.Future[None]] = []

    def next(self) -> asyncio.Future[None]:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if len(self.waiting) >= 64:  # fetches that gave up on an idle partition
            self.waiting = [w for w in self.waiting if not w.done()]
        self.waiting.append(fut)
        return fut

    def wake(self) -> None:
        waiting, self.waiting = self.waiting, []
        for w in waiting:
            if not w.done():
                w.set_result(None)

    def cancel(self) -> None:
        for w in self.waiting:
            if not w.done():
                w.cancel()


class CountedEntries:
    def __init__(
        self,
        topic: str,
        index: OffsetIndex,
        tail: TailBuffer,
        own: OwnWrites,
        producers: ProducerStates[asyncio.Future[int]],
        stats: LogStats,
        txns: TxnIndex,
    ) -> None:
        self._topic = topic
        self._index = index
        self._tail = tail
        self._own = own
        self._producers = producers
        self._stats = stats
        self._txns = txns
        self.wakeups = Wakeups()
        self._warned = False

    def observe(self, item: LogEntry, stored: StoredEntry, mark: Mark | None) -> bool:
        """Whether the entry is one of this kop's own writes."""
        self._index.record(item)
        self._tail.append(item)
        entry = item.entry
        txns = self._txns if item.base_offset >= self._txns.restored_to else None
        for s, at in entry.stamps:
            self._producers.observe(s.producer_id, s.epoch, s.first_seq, s.count, s.index, at)
            if txns is not None:
                txns.batch(s.producer_id, at - s.index, s.transactional)
        marker = entry.marker
        if marker is not None:  # it ends the producer's transaction here
            self._producers.marker(
                marker.producer_id, marker.producer_epoch, marker.coordinator_epoch
            )
            if txns is not None:
                txns.marker(marker.producer_id, item.base_offset, marker.commit)
        own = self._own.observed(stored.producer_name, stored.sequence_id, item.base_offset)
        if entry.anomalies:
            self._stats.add("malformed")
            if not self._warned:
                self._warned = True
                log.warning(
                    "%s: entry at %s has malformed %s; served with the documented "
                    "fallbacks (logged once per partition, counted in kop_malformed_messages)",
                    self._topic, item.position, ", ".join(entry.anomalies),
                )  # fmt: skip
        if (
            mark is not None
            and item.position == mark.position
            and item.next_offset != mark.next_offset
        ):
            self._stats.add("conflicts")
            log.error(
                "%s: counted %d records up to the persisted mark at %s, which says %d",
                self._topic, item.next_offset, mark.position, mark.next_offset,
            )  # fmt: skip
        self.wakeups.wake()
        return own
