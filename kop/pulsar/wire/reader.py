"""An in-order reader of raw entries of one topic partition, surviving reconnects.

It reads through a non-durable exclusive subscription (it pins no data and acks
nothing) and hands out one `RawEntry` per Pulsar entry: a batch stays one object,
its messages are the caller's business. Entries arrive only as far as the FLOW
permits we grant, which bound the local queue in messages and, with all other
readers of the client, in bytes (`reader_queue.py`, `read_ahead.py`).

Positions are ``(ledger, entry)``. The reader hands out every entry once, in order,
from its start: what the broker delivers below the next position it accepts is
dropped.

`WireReader` is the connection's consumer handler and the caller's face: it waits,
hands out entries (`entry_decoding.py`) and sends the permits; what arrived and is
not read yet is `ReaderQueue`'s; subscribing, re-subscribing and closing are
`ReaderSubscription`'s.
"""

from __future__ import annotations

from kop.pulsar.wire.compression import MAX_UNCOMPRESSED_BYTES
from kop.pulsar.wire.connection import Connection
from kop.pulsar.wire.entry_decoding import entry_of_chunks, entry_of_frame
from kop.pulsar.wire.errors import CorruptEntryError, PulsarWireError
from kop.pulsar.wire.frames import Frame
from kop.pulsar.wire.raw_entry import EARLIEST, Position, RawEntry
from kop.pulsar.wire.read_ahead import ReadAheadBudget
from kop.pulsar.wire.reader_queue import ReaderQueue
from kop.pulsar.wire.reader_subscription import ReaderSubscription
from kop.pulsar.wire.session import Session

__all__ = ["EARLIEST", "Position", "RawEntry", "WireReader"]

# Times one entry may arrive corrupt in a row before the reader fails with it.
_CORRUPT_RETRIES = 4


class CorruptRuns:
    """How many times in a row one entry arrived corrupt."""

    def __init__(self, retries: int = _CORRUPT_RETRIES) -> None:
        self._retries = retries
        self._at: Position = EARLIEST  # the entry last met corrupt...
        self._runs = 0  # ...and how many times in a row

    def read_again(self, position: Position) -> bool:
        """`position` arrived corrupt (again): whether to read it once more."""
        self._runs = self._runs + 1 if position == self._at else 1
        self._at = position
        return self._runs <= self._retries


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
        self._queue = ReaderQueue(
            start if start is not None else EARLIEST,
            budget or ReadAheadBudget(),
            receiver_queue,
            max_uncompressed_bytes,
        )
        self._corrupt = CorruptRuns()
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
        return self._queue.next

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
            await self._queue.wait()
        got = self._queue.pop()
        if isinstance(got, PulsarWireError):
            self._error = got
            raise got
        self._grant()
        if isinstance(got, Frame):
            return entry_of_frame(got, self._max_uncompressed)
        return entry_of_chunks(*got, self._max_uncompressed)

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
        return self._queue.holds_or_awaits(await self._subscription.last_message_id())

    async def close(self) -> None:
        """Closes the consumer (a non-durable subscription goes with it)."""
        if self._closed:
            return
        self._closed = True
        self._queue.wake()
        self._session.forget(self)
        self._queue.close()
        await self._subscription.close()

    # -- flow control -------------------------------------------------------------------

    def on_subscribed(self) -> None:
        # A new subscription has no permits: grant what the queue and the budget allow.
        self._queue.reset()
        self._grant()

    def _grant(self) -> None:
        if self._closed or self._subscription.connection is None:
            return
        permits = self._queue.permits()
        if permits:
            self._subscription.flow(permits)

    # -- events from the connection and the subscription ---------------------------------

    def on_message(self, frame: Frame) -> None:
        self._queue.arrived(frame)
        self._grant()

    def on_corrupt(self, error: CorruptEntryError) -> None:
        """A frame that failed its checksum (or layout) went wrong on the way, not in
        the store: subscribe again at the entry it was and read it anew, as the Java
        client re-reads after discarding one. Only an entry corrupt every time fails
        the reader: it cannot be skipped, its offset is counted."""
        position = self._queue.corrupt(error)
        if position is None:
            return  # a re-delivery of what was read already
        if not self._corrupt.read_again(position) or self._subscription.connection is None:
            self.on_failed(error)
            return
        self._queue.reset()
        self._subscription.resubscribe(f"entry {position}: {error}")

    def on_failed(self, error: PulsarWireError) -> None:
        """`read` raises `error` once the entries queued before it are read."""
        self._queue.fail(error)

    def on_closed_by_broker(self) -> None:
        self._queue.reset()  # the broker forgot our permits with the consumer
        self._subscription.detach("closed by the broker", resubscribe=self._error is None)

    def on_end_of_topic(self) -> None:
        self._end_of_topic = True
        self._queue.wake()

    def on_connection_closed(self, connection: Connection) -> None:
        if connection is self._subscription.connection:
            self._queue.reset()
            reason = f"connection to {connection.address} lost"
            self._subscription.detach(reason, resubscribe=self._error is None)
