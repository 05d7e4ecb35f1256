"""An in-order reader of raw entries of one topic partition, surviving reconnects.

It reads through a non-durable exclusive subscription (it pins no data and acks
nothing) and hands out one `RawEntry` per Pulsar entry: a batch stays one object,
its messages are the caller's business. Entries arrive only as far as the FLOW
permits we grant (Pulsar counts messages, so a batch costs its message count), which
bound the local queue to `receiver_queue` messages and, with all other readers of the
client, to the bytes of one `ReadAheadBudget` (`read_ahead.py`).

Positions are ``(ledger, entry)``. The reader tracks the smallest position it will
still accept; anything the broker delivers below it (entries before an inclusive
start that the broker positioned early, re-deliveries after a reconnect) is dropped,
so the caller sees every entry once, in order.

`WireReader` is the per-entry path (the connection's consumer handler, the queue,
the permits); subscribing, re-subscribing and closing are `ReaderSubscription`'s.
"""

from __future__ import annotations

import asyncio
import collections

from kop.pulsar.wire.chunks import Assembled, ChunkAssembler, is_chunk
from kop.pulsar.wire.compression import MAX_UNCOMPRESSED_BYTES, decompress
from kop.pulsar.wire.connection import Connection
from kop.pulsar.wire.errors import CorruptEntryError, PulsarWireError
from kop.pulsar.wire.frames import CorruptFrameError, Frame
from kop.pulsar.wire.message_ids import message_id
from kop.pulsar.wire.raw_entry import EARLIEST, Position, RawEntry
from kop.pulsar.wire.read_ahead import FRAME_OVERHEAD, ReadAhead, ReadAheadBudget
from kop.pulsar.wire.reader_subscription import ReaderSubscription
from kop.pulsar.wire.session import Session

__all__ = ["EARLIEST", "Position", "RawEntry", "WireReader"]

# (a frame or a chunked message at its place, its message count, its bytes held) or an
# error, in order
_Item = tuple[Frame | tuple[Position, Assembled], int, int] | PulsarWireError
# Times one entry may arrive corrupt in a row before the reader fails with it.
_CORRUPT_RETRIES = 4


class WireReader:
    """Use `await client.create_reader(topic, start)`; then `read()` in a loop."""

    def __init__(
        self,
        session: Session,
        topic: str,
        start: Position | None,
        *,
        compacted: bool = False,
        receiver_queue: int = 1000,
        max_uncompressed_bytes: int = MAX_UNCOMPRESSED_BYTES,
        budget: ReadAheadBudget | None = None,
    ) -> None:
        self.topic = topic
        self._max_uncompressed = max_uncompressed_bytes
        self._session = session
        self._loop = asyncio.get_running_loop()
        self._next: Position = start if start is not None else EARLIEST
        self._queue: collections.deque[_Item] = collections.deque()
        self._queued_messages = 0
        self._flow = ReadAhead(budget or ReadAheadBudget(), receiver_queue)
        self._corrupt_at: Position = EARLIEST  # the entry last met corrupt...
        self._corrupt_runs = 0  # ...and how many times in a row
        self._chunks = ChunkAssembler(max_uncompressed_bytes)
        self._handed: Position = EARLIEST  # the last position queued
        self._waiter: asyncio.Future[None] | None = None
        self._error: PulsarWireError | None = None  # sticky: corrupt frame, fatal failure
        self._end_of_topic = False
        self._closed = False
        self._subscription = ReaderSubscription(session, topic, self, compacted=compacted)

    # -- public ---------------------------------------------------------------------------

    @property
    def subscription(self) -> str:
        return self._subscription.name

    @property
    def is_connected(self) -> bool:
        return self._subscription.connection is not None

    @property
    def position(self) -> Position:
        """The smallest position still accepted: where a (re)subscription starts."""
        return self._next

    async def start(self) -> None:
        await self._session.within_timeout(f"subscribe to {self.topic}", self._subscription.attach)
        self._session.track(self)

    async def read(self) -> RawEntry:
        """The next entry, waiting for it. Raises PulsarWireError when the reader is
        closed, the topic was terminated and everything is read, an entry kept arriving
        corrupt (and from then on), or re-subscribing failed for good. An entry whose payload
        does not decompress within the bound comes with `corrupt` set and no payload."""
        while True:
            if self._closed:
                raise PulsarWireError(f"reader on {self.topic} is closed", retriable=False)
            if self._queue:
                break
            if self._error is not None:
                raise self._error
            if self._end_of_topic:
                raise PulsarWireError(f"{self.topic} is terminated: no more entries", False)
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        item = self._queue.popleft()
        if isinstance(item, PulsarWireError):
            self._error = item
            raise item
        got, count, size = item
        self._queued_messages -= count
        self._flow.release(size)
        self._grant()
        if not isinstance(got, Frame):
            return self._assembled(*got)
        frame = got
        metadata = frame.metadata
        assert metadata is not None and frame.payload is not None
        mid = frame.command.message
        ledger, entry = message_id(mid.message_id)
        corrupt: str | None = None
        try:
            payload = decompress(metadata, frame.payload, self._max_uncompressed)
        except CorruptEntryError as exc:
            # Its metadata still says how many messages it holds, so the entries after
            # it keep their places: handed on with no payload rather than stopping here.
            payload, corrupt = b"", str(exc)
        return RawEntry(
            ledger,
            entry,
            metadata,
            payload,
            mid.redelivery_count,
            frame.broker_entry_metadata,
            corrupt,
        )

    def _assembled(self, position: Position, message: Assembled) -> RawEntry:
        payload, corrupt = b"", message.corrupt
        if corrupt is None:
            try:
                payload = decompress(message.metadata, message.payload, self._max_uncompressed)
            except CorruptEntryError as exc:
                corrupt = str(exc)
        return RawEntry(position[0], position[1], message.metadata, payload, corrupt=corrupt)

    async def has_message_available(self) -> bool:
        """Whether `read()` has an entry now or the topic holds one past what was
        read (asks the broker for its last entry when nothing is queued here)."""
        if self._queue:
            return True
        if self._closed:
            raise PulsarWireError(f"reader on {self.topic} is closed", retriable=False)
        if self._error is not None:
            raise self._error
        return await self._session.within_timeout(
            f"last message id of {self.topic}", self._broker_has_more
        )

    async def _broker_has_more(self) -> bool:
        last = await self._subscription.last_message_id()
        if self._queue:
            return True
        # (L, -1) is what an empty topic (or ledger) answers: nothing to read.
        return last[0] >= 0 and last[1] >= 0 and last >= self._next

    async def close(self) -> None:
        """Closes the consumer (a non-durable subscription goes with it)."""
        if self._closed:
            return
        self._closed = True
        self._wake()
        self._session.forget(self)
        self._queue.clear()
        self._queued_messages = 0
        self._chunks.clear()
        self._flow.close()
        await self._subscription.close()

    # -- flow control -------------------------------------------------------------------

    def on_subscribed(self) -> None:
        # A new subscription has no permits: grant what the queue and the budget allow.
        self._flow.reset()
        self._grant()

    def _grant(self) -> None:
        if self._closed or self._subscription.connection is None:
            return
        permits = self._flow.grant(self._queued_messages)
        if permits:
            self._subscription.flow(permits)

    # -- events from the connection and the subscription ---------------------------------

    def on_message(self, frame: Frame) -> None:
        metadata = frame.metadata
        assert metadata is not None
        count = metadata.num_messages_in_batch
        position = message_id(frame.command.message.message_id)
        assert frame.payload is not None
        size = len(frame.payload) + FRAME_OVERHEAD
        self._flow.arrived(count, size)
        if position < self._next:  # before the start, or seen already
            self._flow.release(size)
            self._grant()
            return
        self._next = (position[0], position[1] + 1)
        if is_chunk(metadata):
            self._on_chunk(position, frame, size)
            return
        if self._chunks.pending:
            self._flow.release(self._chunks.other(metadata))
        self._handed = position
        self._queue.append((frame, count, size))
        self._queued_messages += count
        self._grant()
        self._wake()

    def _on_chunk(self, position: Position, frame: Frame, size: int) -> None:
        """A chunk counts zero and is handed to nobody but its message's last, which
        is handed on as the whole message (`chunks.py`). The message's place is its
        first chunk's where that keeps places increasing (so a read from that place
        meets all its chunks), else its last chunk's."""
        assert frame.metadata is not None and frame.payload is not None
        done, freed = self._chunks.chunk(position, frame.metadata, frame.payload, size)
        self._flow.release(freed)
        if done is not None:
            place = done.first if done.first > self._handed else done.last
            self._handed = place
            self._queue.append(((place, done), 1, done.held))
            self._queued_messages += 1
            self._wake()
        self._grant()

    def on_corrupt(self, error: CorruptEntryError) -> None:
        """A frame that failed its checksum (or layout) went wrong on the way, not in
        the store: subscribe again at the entry it was and read it anew, as the Java
        client re-reads after discarding one. Only an entry corrupt every time fails
        the reader: it cannot be skipped, its offset is counted."""
        self._flow.lost(1)
        position = self._next
        if isinstance(error, CorruptFrameError):
            position = message_id(error.command.message.message_id)
            if position < self._next:
                return  # a re-delivery of what was read already
        self._corrupt_runs = self._corrupt_runs + 1 if position == self._corrupt_at else 1
        self._corrupt_at = position
        if self._corrupt_runs > _CORRUPT_RETRIES or self._subscription.connection is None:
            self.on_failed(error)
            return
        self._flow.reset()
        self._subscription.resubscribe(f"entry {position}: {error}")

    def on_failed(self, error: PulsarWireError) -> None:
        """`read` raises `error` once the entries queued before it are read."""
        self._queue.append(error)
        self._wake()

    def on_closed_by_broker(self) -> None:
        self._flow.reset()  # the broker forgot our permits with the consumer
        self._subscription.detach("closed by the broker", resubscribe=self._error is None)

    def on_end_of_topic(self) -> None:
        self._end_of_topic = True
        self._wake()

    def on_connection_closed(self, connection: Connection) -> None:
        if connection is self._subscription.connection:
            self._flow.reset()
            reason = f"connection to {connection.address} lost"
            self._subscription.detach(reason, resubscribe=self._error is None)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
