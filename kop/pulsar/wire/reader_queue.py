"""What has arrived for a reader and is not read yet, in order, and the FLOW
permits that bound it, and the waiting for it (the Java client's `ConsumerBase`
incoming queue and pending receives, and `ConsumerImpl`'s available permits).

Entries arrive only as far as the permits granted (Pulsar counts messages, so a
batch costs its message count), which bound the queue to `receiver_queue` messages
and, with all other readers of the client, to the bytes of one `ReadAheadBudget`
(`read_ahead.py`). The queue tracks the smallest position it still accepts;
anything the broker delivers below it (entries before an inclusive start that the
broker positioned early, re-deliveries after a reconnect) is dropped, so the
reader hands out every entry once, in order. Chunked messages are put together
on the way in (`chunks.py`).
"""

from __future__ import annotations

import asyncio
import collections

from kop.pulsar.wire.chunks import Assembled, ChunkAssembler, is_chunk
from kop.pulsar.wire.errors import CorruptEntryError, PulsarWireError
from kop.pulsar.wire.frames import CorruptFrameError, Frame
from kop.pulsar.wire.message_ids import message_id
from kop.pulsar.wire.raw_entry import EARLIEST, Position
from kop.pulsar.wire.read_ahead import FRAME_OVERHEAD, ReadAhead, ReadAheadBudget

# What the reader gets: a frame, or a chunked message at its place.
Got = Frame | tuple[Position, Assembled]
# (what it gets, its message count, its bytes held) or an error, in order
_Item = tuple[Got, int, int] | PulsarWireError


class ReaderQueue:
    """The reader sends the FLOWs (`permits`); whoever waits in `wait` is woken when
    something is queued (or by `wake`)."""

    def __init__(
        self,
        start: Position,
        budget: ReadAheadBudget,
        receiver_queue: int,
        max_uncompressed_bytes: int,
    ) -> None:
        self.next = start  # the smallest position still accepted
        self._items: collections.deque[_Item] = collections.deque()
        self._messages = 0  # messages queued, as the permits count them
        self._flow = ReadAhead(budget, receiver_queue)
        self._chunks = ChunkAssembler(max_uncompressed_bytes)
        self._handed: Position = EARLIEST  # the last position queued
        self._loop = asyncio.get_running_loop()
        self._waiter: asyncio.Future[None] | None = None

    def __len__(self) -> int:
        return len(self._items)

    def arrived(self, frame: Frame) -> None:
        """Takes a MESSAGE frame (and wakes whoever waits if it queued something)."""
        metadata = frame.metadata
        assert metadata is not None
        count = metadata.num_messages_in_batch
        position = message_id(frame.command.message.message_id)
        assert frame.payload is not None
        size = len(frame.payload) + FRAME_OVERHEAD
        self._flow.arrived(count, size)
        if position < self.next:  # before the start, or seen already
            self._flow.release(size)
            return
        self.next = (position[0], position[1] + 1)
        if is_chunk(metadata):
            self._chunk(position, frame, size)
            return
        if self._chunks.pending:
            self._flow.release(self._chunks.other(metadata))
        self._handed = position
        self._items.append((frame, count, size))
        self._messages += count
        self.wake()

    def _chunk(self, position: Position, frame: Frame, size: int) -> None:
        """A chunk counts zero and is handed to nobody but its message's last, which
        is handed on as the whole message (`chunks.py`). The message's place is its
        first chunk's where that keeps places increasing (so a read from that place
        meets all its chunks), else its last chunk's."""
        assert frame.metadata is not None and frame.payload is not None
        done, freed = self._chunks.chunk(position, frame.metadata, frame.payload, size)
        self._flow.release(freed)
        if done is None:
            return
        place = done.first if done.first > self._handed else done.last
        self._handed = place
        self._items.append(((place, done), 1, done.held))
        self._messages += 1
        self.wake()

    def fail(self, error: PulsarWireError) -> None:
        """`error` is read once everything queued before it is."""
        self._items.append(error)
        self.wake()

    async def wait(self) -> None:
        """Until something is queued, or `wake`."""
        self._waiter = self._loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def pop(self) -> Got | PulsarWireError:
        """The oldest item (the queue is not empty); its bytes go back to the budget."""
        item = self._items.popleft()
        if isinstance(item, PulsarWireError):
            return item
        got, count, size = item
        self._messages -= count
        self._flow.release(size)
        return got

    def holds_or_awaits(self, last: Position) -> bool:
        """Whether something is queued, or the topic's `last` entry is still to come."""
        # (L, -1) is what an empty topic (or ledger) answers: nothing to read.
        return bool(self._items) or (last[0] >= 0 and last[1] >= 0 and last >= self.next)

    def permits(self) -> int:
        """Permits to grant now (0: none), counted as outstanding once returned."""
        return self._flow.grant(self._messages)

    def corrupt(self, error: CorruptEntryError) -> Position | None:
        """A frame that cannot be used arrived (it used its permit): the position to
        read again, or None for a re-delivery of what was read already."""
        self._flow.lost(1)
        if not isinstance(error, CorruptFrameError):
            return self.next
        position = message_id(error.command.message.message_id)
        return None if position < self.next else position

    def reset(self) -> None:
        """A new subscription (or none): the broker holds none of our permits."""
        self._flow.reset()

    def close(self) -> None:
        """Everything dropped, its bytes back to the budget."""
        self._items.clear()
        self._messages = 0
        self._chunks.clear()
        self._flow.close()
