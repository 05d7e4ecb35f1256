"""Retention: Pulsar deletes whole ledgers behind kop's back; kop follows.

A check asks the storage where the partition now begins. If that is past the
first checkpoint, the oldest ledgers are gone and the log start moves to the
offset of the first surviving record: known at once when a checkpoint sits at
that entry (kop keeps one at every ledger start), else counted forward from it
to the next position whose offset is known. Checkpoints below are pruned and the
tail buffer never serves them again. Checks run every `retention_check_s`, and
at once when a read finds its checkpoint's entry gone. The log start is then the
larger of this and the DeleteRecords floor (`OffsetIndex.log_start`).

If the data begins before the first checkpoint, the index lost its first
checkpoints (index writes that failed or never landed, the partition opened
from its mark): the offset there is counted the same way, and the index
extended down to it, so no record is hidden below what the index knew.
"""

from __future__ import annotations

import asyncio
import logging

from kop.log.counting import Anchor, LogCounter, LogEntry, TrimDetected
from kop.log.offset_index import OffsetIndex
from kop.log.settings import LogSettings
from kop.log.stats import LogStats
from kop.log.tail_buffer import TailBuffer
from kop.storage.port import MessageLog
from kop.storage.types import Idle, Position, StorageError

log = logging.getLogger(__name__)


class Retention:
    def __init__(
        self,
        storage: MessageLog,
        topic: str,
        index: OffsetIndex,
        tail: TailBuffer,
        stats: LogStats,
        settings: LogSettings,
    ) -> None:
        self._storage = storage
        self._topic = topic
        self._index = index
        self._tail = tail
        self._stats = stats
        self._settings = settings
        self._lock = asyncio.Lock()

    async def check(self) -> None:
        async with self._lock:
            hw_before = self._index.high_watermark
            counted_any = self._index.last_position is not None
            earliest = await self._storage.earliest(self._topic)
            if earliest is None:
                if counted_any and hw_before > self._index.data_start:
                    self._moved(hw_before, None)
                return
            first = self._index.first
            if first is None and not counted_any:
                return  # nothing counted yet: the follower counts from the beginning
            if first is not None and earliest.entry_key == first.position.entry_key:
                return
            start = await self._offset_of(earliest)
            if first is None or earliest.entry_key < first.position.entry_key:
                # Data below everything the index knows: the index lost its first
                # checkpoints (index writes that failed or never landed), so where the
                # data begins is counted back from the first position it knows.
                known = self._index.data_start
                if start is not None and 0 <= start < known:
                    self._index.extend_down(start, earliest)
                    log.info(
                        "%s: the persisted index began at offset %d (some of its writes "
                        "were lost); the data begins at offset %d, counted from %s",
                        self._topic, known, start, earliest,
                    )  # fmt: skip
                return
            # The data start, not the log start: a DeleteRecords floor above it must
            # not hide that Pulsar deleted ledgers whose checkpoints reads still use.
            if start is not None and start > self._index.data_start:
                self._moved(start, earliest)

    def _moved(self, start: int, position: Position | None) -> None:
        self._stats.add("trims")
        self._index.trim_to(start, position)
        self._tail.drop_below(self._index.log_start)
        log.info(
            "%s: retention moved the data start to offset %d (log start %d)",
            self._topic,
            start,
            self._index.log_start,
        )

    def _known(self, item: LogEntry) -> int | None:
        """The offset kop already knows for this counted message, if any."""
        cp = self._index.at_entry(item.position.entry_key)
        if cp is not None and cp.position == item.position:
            return cp.offset
        buffered = self._tail.offset_at(item.position)
        if buffered is not None:
            return buffered
        mark = self._index.mark
        if mark is not None and mark.position == item.position:
            return mark.next_offset - item.entry.count
        return None

    async def _offset_of(self, earliest: Position) -> int | None:
        cp = self._index.at_entry(earliest.entry_key)
        if cp is not None and cp.position == earliest:
            return cp.offset
        # Count forward from the first surviving message to one whose offset is known.
        try:
            reader = await self._storage.reader(self._topic, earliest, prefetch=16)
        except StorageError as exc:
            log.warning("%s: retention check cannot read: %s", self._topic, exc)
            return None
        counter = LogCounter(Anchor(earliest, 0, inclusive=True))
        reader.report_idle()
        try:
            async with asyncio.timeout(self._settings.write_timeout_s):
                while True:
                    msg = await reader.read()
                    if isinstance(msg, Idle):
                        return None
                    item = counter.feed(msg)
                    if item is None:
                        continue
                    known = self._known(item)
                    if known is not None:
                        return known - item.base_offset
        except (TimeoutError, StorageError, TrimDetected) as exc:
            log.warning("%s: retention check gave up: %s", self._topic, exc)
            return None
        finally:
            await reader.close()
