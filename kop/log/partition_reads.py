"""A partition's reads: which part of the log serves an offset, and in what order.

Below the live ledgers of a compacted partition, Pulsar's compacted view
(`compacted/part.py`); then history reads through Pulsar (`history.py`); then the
tail buffer; each only where the previous one stops, and each batch only while it
fits (KIP-74). Offsets are checked against the log start and the high watermark
first; a trim met while reading is OFFSET_OUT_OF_RANGE, except in a compacted
partition, where what survived is read again from the compacted view.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable

from kop.log.compacted.part import CompactedPart
from kop.log.counting import LogEntry
from kop.log.history import HistoryReader
from kop.log.offset_index import OffsetIndex
from kop.log.tail_buffer import TailBuffer
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.records import gap_batch, iter_batches
from kop.storage.types import Position


class PartitionReads:
    def __init__(
        self,
        topic: str,
        index: OffsetIndex,
        tail: TailBuffer,
        history: HistoryReader,
        compacted: CompactedPart | None,
        log_start: Callable[[], int],
    ) -> None:
        self.topic = topic
        self.index = index
        self.tail = tail
        self.history = history
        self.compacted = compacted
        self._log_start = log_start

    @property
    def log_start(self) -> int:
        return self._log_start()

    @property
    def high_watermark(self) -> int:
        return self.index.high_watermark

    async def read(self, offset: int, max_bytes: int, min_one: bool = True) -> bytes:
        """`read_batches`, joined."""
        return b"".join(await self.read_batches(offset, max_bytes, min_one))

    async def read_batches(self, offset: int, max_bytes: int, min_one: bool = True) -> list[bytes]:
        """Record batches from the one holding `offset`, each only if it fits in what
        is left of `max_bytes`; with `min_one` the first is served whatever its size
        (Kafka's rule, KIP-74: a fetch's first batch, so a consumer always progresses).
        As the entries hold them (each piece whole batches, back to back), not joined:
        a fetch answer sends them as they are (`RecordPieces`)."""
        self._check_range(offset)
        items = await self._entries(offset, max_bytes, min_one)
        compacted = self.compacted
        if compacted is None or not compacted.below_live(offset):
            return [item.entry.data for item in items]
        # Where compaction removed every record from `offset` on, up to the live
        # ledgers or to the end of the entry holding `offset`, a batch of no records
        # spans the gap: a consumer served only records below its position would ask
        # for `offset` for ever, short of the high watermark (librdkafka did; a
        # changelog ending in tombstones would never restore).
        if not items and min_one:
            return [gap_batch(offset, self.index.data_start - offset)]
        if items and items[0].base_offset < offset and not _holds_from(items[0], offset):
            gap = gap_batch(offset, items[0].next_offset - offset)
            return [gap] + [item.entry.data for item in items[1:]]
        return [item.entry.data for item in items]

    async def offset_for_time(self, timestamp: int) -> tuple[int, int] | None:
        """First (offset, timestamp) with timestamp >= `timestamp`, or None."""
        checkpoint = self.index.floor_for_time(timestamp)
        offset = max(checkpoint.offset if checkpoint else self.log_start, self.log_start)
        while offset < self.high_watermark:
            items = await self._entries(offset, 1 << 20)
            if not items:
                break
            for item in items:
                if item.entry.max_timestamp < timestamp:
                    continue
                for r in iter_batches(item.entry.data):
                    if r.timestamp >= timestamp and r.offset >= offset:  # not below a floor
                        return r.offset, r.timestamp
            offset = items[-1].next_offset
        return None

    async def position_of(self, offset: int) -> Position | None:
        """Where the record at `offset` is stored (in the `kafka` format: the batch
        holding it), or None for the high watermark (nothing stored there yet)."""
        self._check_range(offset)
        if offset == self.high_watermark:
            return None
        for item in await self._entries(offset, 1):
            if item.base_offset <= offset <= item.last_offset:
                return item.position
        raise KafkaError(ErrorCode.offset_out_of_range, f"{self.topic}: no record at {offset}")

    async def entry_at(self, position: Position) -> LogEntry | None:
        """The counted entry stored at `position` (an entry's own, batch index aside),
        or None when nothing counted is stored there: not counted yet, trimmed, or a
        place no entry starts at (a chunk of a chunked message). A share group's
        delivery names its entry by position; its records are served by offset."""
        key = position.entry_key
        async with contextlib.aclosing(self._entries_from(key)) as entries:
            async for item in entries:
                if item.position.entry_key == key:
                    return item
                if item.position.entry_key > key:
                    return None
        return None

    async def entries_after(self, key: tuple[int, int]) -> AsyncGenerator[LogEntry, None]:
        """The counted entries stored after the entry at `key` (an entry of -1: from
        its ledger's first), in order, up to the high watermark: how a subscription's
        cursor, which Pulsar keeps by position, reads as Kafka offsets."""
        async with contextlib.aclosing(self._entries_from(key)) as entries:
            async for item in entries:
                if item.position.entry_key > key:
                    yield item

    async def _entries_from(self, key: tuple[int, int]) -> AsyncGenerator[LogEntry, None]:
        """Counted entries in order from the last offset known at or below the entry at
        `key` (the tail buffer's, else the index's nearest checkpoint) to the high
        watermark: positions are found only by reading forward from an offset."""
        at = self.tail.offset_at(Position(*key))
        if at is None:
            checkpoint = self.index.floor_for_position(Position(*key))
            at = checkpoint.offset if checkpoint is not None else 0
        at = max(at, self.log_start)
        while at < self.high_watermark:
            items = await self._entries(at, 1 << 20)
            if not items:
                return
            for item in items:
                yield item
            at = items[-1].next_offset

    def _check_range(self, offset: int) -> None:
        if offset < self.log_start or offset > self.high_watermark:
            raise KafkaError(
                ErrorCode.offset_out_of_range,
                f"offset {offset} outside [{self.log_start}, {self.high_watermark}]",
            )

    async def _entries(self, offset: int, max_bytes: int, min_one: bool = True) -> list[LogEntry]:
        try:
            return await self._entries_once(offset, max_bytes, min_one)
        except KafkaError as exc:
            # Retention deleted live ledgers while we read them: in a compacted
            # partition what survived is now read from the compacted view.
            retry = self.compacted is not None and offset >= self.log_start
            if exc.code != ErrorCode.offset_out_of_range or not retry:
                raise
            return await self._entries_once(offset, max_bytes, min_one)

    async def _entries_once(self, offset: int, max_bytes: int, min_one: bool) -> list[LogEntry]:
        """Entries holding offsets >= `offset`, in order, below the high watermark,
        each while it fits in `max_bytes` (with `min_one`, the first whatever its
        size). A compacted partition's view below its live ledgers first, then
        history, then the tail buffer, and only where they join (the buffer may
        shrink meanwhile)."""
        end = self.high_watermark
        out: list[LogEntry] = []
        if self.compacted is not None and self.compacted.below_live(offset):
            out, complete = await self.compacted.read(offset, max_bytes, min_one)
            if not complete:
                return out  # the next surviving entry did not fit
            # What lies between the last survivor and the live ledgers is a gap.
            offset = max(out[-1].next_offset if out else offset, self.index.data_start)
        size = sum(item.entry.size for item in out)
        tail_start = self.tail.first_offset
        stop = end
        history: list[LogEntry] = []
        if offset < end and (tail_start is None or offset < tail_start):
            stop = end if tail_start is None else min(end, tail_start)
            history = await self.history.read(offset, stop, max_bytes - size, min_one and not out)
            out += history
            size = sum(item.entry.size for item in out)
        at = history[-1].next_offset if history else offset
        # History stops short of `stop` only where the next entry does not fit.
        if at < end and (at >= stop or not history):
            more: list[LogEntry] = []
            self.tail.read(at, end, more, size, max_bytes, min_one and not out)
            if more and more[0].base_offset <= at:
                out.extend(more)
        if out and out[0].last_offset < self.log_start:  # trimmed while we read
            raise KafkaError(ErrorCode.offset_out_of_range, f"offset {offset} was just trimmed")
        return out


def _holds_from(item: LogEntry, offset: int) -> bool:
    """Whether a served entry holds a record at or after `offset` (compaction may
    have left only records before it)."""
    return any(r.offset >= offset for r in iter_batches(item.entry.data))
