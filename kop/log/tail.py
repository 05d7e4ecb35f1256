"""The tail follower: the one reader that assigns offsets as the partition grows.

It follows the Pulsar partition in order from an anchor (the last checkpoint at
or before the persisted mark, so producer state is rebuilt from recent records),
counts every entry (`LogCounter`) into the offset index, keeps recent entries
in the tail buffer, and tells the appender which entries are its own writes and
the producer state which batches are stored.

When the anchor's entry is gone (retention deleted it while kop was away, or
while the follower reconnected), counting resumes at the first surviving entry
with the lowest offset that cannot reuse one: exact when the persisted mark lies
in the surviving data (counted back from it), else the mark's next offset.

Its reader outlives a short spell of counting receipts: every Pulsar reader is a
subscription created and deleted on the broker, and a producer pausing after
each record would otherwise cost one per record (issue 18: 18 a second). Only a
long spell closes it, since the broker keeps sending it the entries counted from
receipts meanwhile, and a new reader at the mark beats reading them all back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from kop.log.counted import CountedEntries
from kop.log.counting import Anchor, LogCounter, TrimDetected
from kop.log.offset_index import Mark, OffsetIndex
from kop.log.own_writes import OwnWrites
from kop.log.producer_state import ProducerStates
from kop.log.receipts import ReceiptFeed
from kop.log.stats import LogStats
from kop.log.tail_buffer import TailBuffer
from kop.log.txn_index import TxnIndex
from kop.storage.port import MessageLog, TopicReader
from kop.storage.types import Idle, Position, StoredEntry

log = logging.getLogger(__name__)

# While receipts are counted, the reader kept for afterwards is sent the same
# entries; past this much it is closed (see the module docstring), so it never
# holds more than about this, and never makes kop read back more.
KEEP_READER_MESSAGES = 100
KEEP_READER_BYTES = 1 << 20


async def _count_back(
    found: StoredEntry, mark: Mark, reader: TopicReader
) -> tuple[int | None, list[StoredEntry]]:
    """The mark lies in the surviving data: count from `found` up to it, so the
    offset of `found` is exact (None if the mark's entry is not met). Also
    returns the entries read on the way, to be counted again."""
    probe = LogCounter(Anchor(found.position, 0, inclusive=True))
    ahead = [found]
    probe.feed(found)
    while probe.last is None or probe.last < mark.position:
        msg = await reader.read()
        if isinstance(msg, Idle):
            break
        ahead.append(msg)
        probe.feed(msg)
    if probe.last != mark.position:
        return None, ahead
    return mark.next_offset - probe.next_offset, ahead


class TailFollower:
    def __init__(
        self,
        storage: MessageLog,
        topic: str,
        index: OffsetIndex,
        tail: TailBuffer,
        own: OwnWrites,
        producers: ProducerStates[asyncio.Future[int]],
        stats: LogStats,
        receipts: ReceiptFeed,
        txns: TxnIndex,
    ) -> None:
        self._storage = storage
        self._receipts = receipts
        self._topic = topic
        self._index = index
        self._tail = tail
        self._stats = stats
        self._counted = CountedEntries(topic, index, tail, own, producers, stats, txns)
        self.wakeups = self._counted.wakeups
        self.ready = asyncio.Event()
        self.on_gap: Callable[[], None] = lambda: None
        self.resumed_from: int | None = None
        self.last_error: str | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self, mark: Mark | None) -> None:
        cp = self._index.checkpoints[-1] if self._index.checkpoints else None
        if cp is not None and (mark is None or cp.position <= mark.position):
            anchor = Anchor(cp.position, cp.offset, inclusive=True)
        elif mark is not None:
            anchor = Anchor(mark.position, mark.next_offset, inclusive=False)
        else:
            anchor = Anchor(None, 0)
        self.resumed_from = anchor.offset
        if cp is not None and anchor.inclusive:
            # Counting restarts at the checkpoint; the index moves with it.
            self._index.high_watermark = cp.offset
            self._index.last_position = None
        self._task = asyncio.create_task(self._run(anchor, mark), name=f"tail:{self._topic}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self.wakeups.cancel()

    # -- following ----------------------------------------------------------------

    async def _run(self, anchor: Anchor, mark: Mark | None) -> None:
        """Read the log, counting this kop's receipts instead while they describe it
        entry after entry (see `ReceiptFeed`); a new reader after a long spell of
        them or a failure."""
        backoff = 0.2
        while True:
            counter = LogCounter(anchor)
            try:
                if await self._read(counter, mark):
                    await self._count_receipts(counter, mark)
                backoff = 0.2
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # keep following whatever went wrong
                self.last_error = str(exc)
                log.warning("tail of %s failed (%s); again in %.1fs", self._topic, exc, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
            finally:
                anchor = counter.mark

    async def _read(self, counter: LogCounter, mark: Mark | None) -> bool:
        """Count what a reader delivers, and this kop's receipts whenever the next
        one is the entry right after the last counted (see `ReceiptFeed`); then
        read on with the same reader, which skips what the receipts counted.
        True when the receipts went on too long to keep the reader: they are still
        being counted, and the caller goes on with that."""
        reader = await self._storage.reader(self._topic, counter.anchor.position)
        try:
            # Caught up without meeting the anchor's entry (trimmed while nobody read:
            # at start, or while receipts were counted) is then noticed at once, not
            # only when the next entry (perhaps a produce waiting on it) arrives.
            reader.report_idle()
            while True:
                msg = await reader.read()
                if isinstance(msg, Idle):
                    if not counter.checked:
                        counter.restart(self._anchor_gone(counter.anchor, mark))
                    self.ready.set()
                    continue
                try:
                    item = counter.feed(msg)
                except TrimDetected as trim:
                    counter.restart(await self._resume_after_trim(trim, mark, reader))
                    continue
                if item is not None:
                    self._stats.add("counted_from_reads")
                    own = self._counted.observe(item, msg, mark)
                    # Our own entry: the receipts of our next writes will follow it (a
                    # producer waiting for each answer sends the next only now).
                    if (
                        self.ready.is_set()
                        and (self._receipts.follows(item.position) or own)
                        and not await self._count_receipts(counter, mark, keep_reader=True)
                    ):
                        return True
        finally:
            await reader.close()

    async def _count_receipts(
        self, counter: LogCounter, mark: Mark | None, keep_reader: bool = False
    ) -> bool:
        """Count this kop's entries from their receipts while each is the very next
        entry of the log; True when the log must be read again. With `keep_reader`,
        False once they are too many for the reader kept meanwhile."""
        messages = size = 0
        while counter.last is not None:
            stored = await self._receipts.next(counter.last)
            if stored is None:
                return True
            try:
                item = counter.feed(stored)
            except TrimDetected:
                return True  # a checkpoint disagrees: reading will sort it out
            if item is not None:
                self._stats.add("counted_from_receipts")
                self._counted.observe(item, stored, mark)
                messages += item.entry.count
                size += item.entry.size
                if keep_reader and (messages > KEEP_READER_MESSAGES or size > KEEP_READER_BYTES):
                    return False
        return True

    async def _resume_after_trim(
        self, trim: TrimDetected, mark: Mark | None, reader: TopicReader
    ) -> LogCounter:
        """Count on from the first surviving entry, replaying what was read ahead."""
        found = trim.found
        assert found is not None
        ahead: list[StoredEntry] = [found]
        offset: int | None = None
        if mark is not None and found.position <= mark.position:
            offset, ahead = await _count_back(found, mark, reader)
        if offset is None:
            offset = self._lower_bound(trim.anchor, mark)
        log.warning(
            "%s: the data at %s is gone (retention or truncation); counting on from %s at "
            "offset %d",
            self._topic, trim.anchor.position, found.position, offset,
        )  # fmt: skip
        self._stats.add("trims")
        self._tail.clear()
        self._index.skip_to(found.position, offset)
        self.on_gap()
        counter = LogCounter(Anchor(found.position, offset, inclusive=True))
        for msg in ahead:
            item = counter.feed(msg)
            if item is not None:
                self._counted.observe(item, msg, mark)
        return counter

    def _lower_bound(self, anchor: Anchor, mark: Mark | None) -> int:
        """The lowest offset that cannot reuse one given out before the anchor's data
        went: past the anchor's entry, the persisted mark and everything counted."""
        floor = anchor.offset + (1 if anchor.inclusive else 0)
        return max(self._index.high_watermark, floor, mark.next_offset if mark else 0)

    def _anchor_gone(self, anchor: Anchor, mark: Mark | None) -> LogCounter:
        """Caught up without meeting the anchor's entry: all of it is gone and
        nothing newer exists yet. The next entry counts from the lower bound."""
        offset = self._lower_bound(anchor, mark)
        log.warning(
            "%s: the data at %s is gone (retention or truncation) and nothing newer "
            "exists; the next record gets offset %d", self._topic, anchor.position, offset,
        )  # fmt: skip
        self._stats.add("trims")
        self._tail.clear()
        self._index.high_watermark = offset
        self._index.trim_to(offset, None)
        self._index.last_position = anchor.position
        self.on_gap()
        # Whatever comes next is the first record after the gap.
        return LogCounter(Anchor(None, offset))

    # -- waiting on it ------------------------------------------------------------------

    def data_changed(self) -> asyncio.Future[None]:
        """Resolved when the next entry is counted (long-poll fetches wait on it)."""
        return self.wakeups.next()

    async def caught_up(self, position: Position) -> None:
        while True:
            last = self._index.last_position
            if last is not None and last.entry_key >= position.entry_key:
                return
            await self.data_changed()
