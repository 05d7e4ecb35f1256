"""Reads of a compacted topic below its live ledgers: from Pulsar's compacted view.

Every entry there is one a compaction pass noted (`survivors.py`), so its base
offset is known without counting; what compaction removed is a gap, and a fetch
from a missing offset gets the next record, as with Kafka. Reads stream: a Pulsar
reader (with `readCompacted`) starting at the survivor at or below the offset
asked for, never the whole compacted ledger in memory. A consumer reading on from
where the last read stopped takes up the same reader (one kept per partition,
with the entry that did not fit), instead of a new reader per fetch.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from kop.log.compacted import entries as compacted_entries
from kop.log.compacted.survivors import SurvivorIndex
from kop.log.counting import LogEntry
from kop.log.settings import LogSettings
from kop.log.stats import LogStats
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.port import MessageLog, TopicReader
from kop.storage.types import Idle, StorageError


@dataclass(slots=True)
class _Kept:
    """A reader left where a read stopped: offsets below `next_offset` are passed;
    `pending` was read and did not fit."""

    reader: TopicReader
    next_offset: int
    pending: LogEntry | None = None


class CompactedReads:
    def __init__(
        self,
        storage: MessageLog,
        topic: str,
        survivors: SurvivorIndex,
        stats: LogStats,
        settings: LogSettings,
    ) -> None:
        self._storage = storage
        self._topic = topic
        self._survivors = survivors
        self._stats = stats
        self._settings = settings
        self._kept: _Kept | None = None

    async def read(
        self, offset: int, end: int, max_bytes: int, min_one: bool = True
    ) -> tuple[list[LogEntry], bool]:
        """Surviving entries holding offsets >= `offset` and below `end` (where the
        live ledgers begin), each while it fits in `max_bytes` (with `min_one` the
        first whatever its size, KIP-74), and whether they reach `end`: False when
        the next one did not fit."""
        kept = await self._take(offset)
        try:
            async with asyncio.timeout(self._settings.write_timeout_s):
                out, complete = await self._collect(kept, offset, end, max_bytes, min_one)
        except (TimeoutError, StorageError) as exc:
            await kept.reader.close()
            raise KafkaError(
                ErrorCode.kafka_storage_error, f"reading compacted {self._topic}: {exc!r}"
            ) from exc
        except BaseException:
            await kept.reader.close()
            raise
        if complete:
            await kept.reader.close()
        else:
            self._kept = kept
        return out, complete

    async def close(self) -> None:
        if self._kept is not None:
            await self._kept.reader.close()
            self._kept = None

    async def _take(self, offset: int) -> _Kept:
        """The kept reader if it can serve `offset`, else a new one."""
        kept, self._kept = self._kept, None
        if kept is not None:
            if kept.next_offset <= offset:
                return kept
            await kept.reader.close()
        below = self._survivors.floor(offset)
        try:
            reader = await self._storage.reader(
                self._topic,
                below.position if below is not None else None,
                compacted=True,
                prefetch=self._settings.history_prefetch,
            )
        except StorageError as exc:
            raise KafkaError(ErrorCode.kafka_storage_error, str(exc)) from exc
        self._stats.add("compacted_readers")
        return _Kept(reader, below.offset if below is not None else 0)

    async def _collect(
        self, kept: _Kept, offset: int, end: int, max_bytes: int, min_one: bool
    ) -> tuple[list[LogEntry], bool]:
        out: list[LogEntry] = []
        size = 0
        kept.reader.report_idle()
        while True:
            item, kept.pending = kept.pending, None
            if item is None:
                item = await self._next(kept.reader)
                if item is None:
                    return out, True
            if item.base_offset >= end:
                return out, True
            if item.last_offset < offset:
                kept.next_offset = item.next_offset
                continue
            if size + item.entry.size > max_bytes and (out or not min_one):
                kept.pending = item
                return out, False
            out.append(item)
            size += item.entry.size
            kept.next_offset = item.next_offset

    async def _next(self, reader: TopicReader) -> LogEntry | None:
        """The next noted surviving entry, or None past what compaction passes noted."""
        while True:
            e = await reader.read()
            if isinstance(e, Idle):
                return None
            horizon = self._survivors.horizon
            if horizon is None or e.position.entry_key > horizon.position.entry_key:
                return None  # past what a pass noted: the live ledgers serve it
            base = self._survivors.at_entry(e.position.entry_key)
            if base is not None:  # else a survey skipped it (it logged why)
                return LogEntry(base, e.position, compacted_entries.decode(e, base))
