"""Reads behind the tail buffer: from the nearest checkpoint, through Pulsar.

Lagging consumers read sequentially, so a reader is kept after each read and
the next read continuing near where it stopped takes it up again. Kept readers
live in one pool bounded in total across partitions (least recently used are
closed first), so several consumers at different offsets of one partition are
each served by their own kept reader, without a new Pulsar reader per fetch.

Every read checks its counting (`LogCounter`): if its checkpoint's entry is
gone, retention is asked to move the log start, and a read below it is
OFFSET_OUT_OF_RANGE, so a trimmed offset is never served as another record.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict

from kop.log.counting import Anchor, LogCounter, LogEntry, TrimDetected
from kop.log.offset_index import OffsetIndex
from kop.log.retention import Retention
from kop.log.settings import LogSettings
from kop.log.stats import LogStats
from kop.protocol.errors import ErrorCode, KafkaError
from kop.storage.port import MessageLog, TopicReader
from kop.storage.types import Idle, StorageError

log = logging.getLogger(__name__)


class Cursor:
    """A reader in the middle of the log with its counter. `held` is an entry it
    counted that the last read had no room for: the next read starts with it, so a
    consumer reading in steps smaller than the entries keeps its reader."""

    def __init__(self, topic: str, reader: TopicReader, counter: LogCounter) -> None:
        self.topic = topic
        self.reader = reader
        self.counter = counter
        self.held: LogEntry | None = None

    @property
    def next_offset(self) -> int:
        return self.held.base_offset if self.held is not None else self.counter.next_offset


class CursorPool:
    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._kept: OrderedDict[Cursor, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._kept)

    def take(self, topic: str, offset: int, max_gap: int) -> Cursor | None:
        """The kept cursor of `topic` closest below `offset`, within `max_gap`."""
        best: Cursor | None = None
        for c in self._kept:
            if (
                c.topic == topic
                and c.next_offset <= offset <= c.next_offset + max_gap
                and (best is None or c.next_offset > best.next_offset)
            ):
                best = c
        if best is not None:
            del self._kept[best]
        return best

    async def give(self, cursor: Cursor) -> None:
        self._kept[cursor] = None
        while len(self._kept) > self._limit:
            old, _ = self._kept.popitem(last=False)
            await old.reader.close()

    async def drop(self, topic: str) -> None:
        for c in [c for c in self._kept if c.topic == topic]:
            del self._kept[c]
            await c.reader.close()


class HistoryReader:
    def __init__(
        self,
        storage: MessageLog,
        topic: str,
        index: OffsetIndex,
        retention: Retention,
        pool: CursorPool,
        stats: LogStats,
        settings: LogSettings,
    ) -> None:
        self._storage = storage
        self._topic = topic
        self._index = index
        self._retention = retention
        self._pool = pool
        self._stats = stats
        self._settings = settings

    async def read(
        self, offset: int, end: int, max_bytes: int, min_one: bool = True
    ) -> list[LogEntry]:
        """Entries holding offsets in [offset, end), each while it fits in `max_bytes`
        (with `min_one`, the first whatever its size)."""
        for _attempt in range(2):
            cursor = self._pool.take(self._topic, offset, self._settings.checkpoint_interval)
            if cursor is None:
                cursor = await self._open(offset)
            try:
                async with asyncio.timeout(self._settings.write_timeout_s):
                    out = await self._read(cursor, offset, end, max_bytes, min_one)
            except TrimDetected:
                await cursor.reader.close()
                # Other kept readers of this partition may stand in the trimmed data
                # too: the retry must not take one of them (it would meet the trim again).
                await self._pool.drop(self._topic)
                await self._retention.check()
                if offset < self._index.log_start:
                    raise KafkaError(
                        ErrorCode.offset_out_of_range,
                        f"offset {offset} is below the log start {self._index.log_start}",
                    ) from None
                continue
            except (TimeoutError, StorageError) as exc:
                await cursor.reader.close()
                raise KafkaError(
                    ErrorCode.kafka_storage_error, f"reading {self._topic}: {exc!r}"
                ) from exc
            except BaseException:
                await cursor.reader.close()
                raise
            await self._pool.give(cursor)
            return out
        raise KafkaError(ErrorCode.kafka_storage_error, f"{self._topic}: counting keeps changing")

    async def _open(self, offset: int) -> Cursor:
        cp = self._index.floor(offset)
        anchor = Anchor(cp.position, cp.offset) if cp is not None else Anchor(None, 0)
        try:
            reader = await self._storage.reader(
                self._topic, anchor.position, prefetch=self._settings.history_prefetch
            )
        except StorageError as exc:
            raise KafkaError(ErrorCode.kafka_storage_error, str(exc)) from exc
        self._stats.add("history_readers")
        return Cursor(self._topic, reader, LogCounter(anchor, self._known))

    def _known(self, entry_key: tuple[int, int]) -> int | None:
        cp = self._index.at_entry(entry_key)
        return cp.offset if cp is not None else None

    @staticmethod
    async def _read(
        cursor: Cursor, offset: int, end: int, max_bytes: int, min_one: bool
    ) -> list[LogEntry]:
        out: list[LogEntry] = []
        size = 0
        # Offsets below `end` were counted, so their messages exist, unless they were
        # deleted since: a reader that runs dry twice in a row before `end` met a trim
        # (the first dry report may be stale, from before newer messages arrived).
        cursor.reader.report_idle()
        dry = False
        while cursor.next_offset < end:
            item, cursor.held = cursor.held, None
            if item is None:
                msg = await cursor.reader.read()
                if isinstance(msg, Idle):
                    if dry:
                        raise TrimDetected(cursor.counter.anchor, None)
                    dry = True
                    cursor.reader.report_idle()
                    continue
                dry = False
                item = cursor.counter.feed(msg)
            if item is None or item.last_offset < offset:
                continue
            if (out or not min_one) and size + item.entry.size > max_bytes:
                cursor.held = item
                break
            out.append(item)
            size += item.entry.size
        return out
