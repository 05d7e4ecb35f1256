"""A consumer on a durable Shared subscription: the Pulsar side of a Kafka share
group (D27).

Pulsar's dispatcher decides which consumer of the subscription gets which entry
(kop's consumer is one of them; Pulsar applications attached to the same
subscription are others), counts each entry's redeliveries, and forgets nothing it
was not told: an entry is gone from the subscription only once acknowledged, and
comes back (to any consumer) once released or once the consumer it went to leaves.
So every delivery is tied to the attachment that received it (`Delivery.epoch`):
after a reconnect the broker has taken the old attachment's entries back, and
acknowledging or releasing them through the new one would be a guess.

Acknowledgements ask for the broker's receipt (`CommandAck.request_id`), so a
record a Kafka share consumer accepted is answered only once Pulsar has it. An
entry is acknowledged whole: batch-index acknowledgement is a broker-wide setting,
off by default (D27), so this consumer never sends an `ack_set`. Subscribing and
the commands are `SharedLink`'s (`shared_link.py`).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from kop.pulsar.wire.compression import MAX_UNCOMPRESSED_BYTES
from kop.pulsar.wire.connection import Connection
from kop.pulsar.wire.entry_decoding import entry_of_frame
from kop.pulsar.wire.errors import CorruptEntryError, PulsarWireError
from kop.pulsar.wire.frames import Frame
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.pulsar.wire.raw_entry import Position, RawEntry
from kop.pulsar.wire.session import Session
from kop.pulsar.wire.shared_link import SharedLink

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Delivery:
    """An entry the dispatcher gave this consumer, and the attachment it came on."""

    entry: RawEntry
    epoch: int

    @property
    def position(self) -> Position:
        return (self.entry.ledger, self.entry.entry)


class Held(Protocol):
    """What names a delivery to acknowledge or release: its entry and attachment."""

    @property
    def position(self) -> tuple[int, int] | tuple[int, int, int]: ...

    @property
    def epoch(self) -> int: ...


class StaleDeliveryError(PulsarWireError):
    """The delivery came on an attachment that is gone: the broker took its entries
    back when the consumer left, so they are someone else's now."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retriable=False)


class WireSharedConsumer:
    """Use `await client.create_shared_consumer(topic, subscription, earliest=...)`;
    then `receive()` in a loop and `ack` or `release` what it returned."""

    def __init__(
        self,
        session: Session,
        topic: str,
        subscription: str,
        *,
        earliest: bool,
        receiver_queue: int = 100,
        max_uncompressed_bytes: int = MAX_UNCOMPRESSED_BYTES,
    ) -> None:
        self.topic = topic
        self.subscription = subscription
        self.name = f"kop-share-{secrets.token_hex(6)}"
        self._session = session
        self._receiver_queue = max(2, receiver_queue)
        self._max_uncompressed = max_uncompressed_bytes
        self._queue: collections.deque[Delivery] = collections.deque()
        self._taken = 0  # messages handed out since the last FLOW
        self._waiter: asyncio.Future[None] | None = None
        self._error: PulsarWireError | None = None
        self._closed = False
        self._loop = asyncio.get_running_loop()
        self._what = f"share consumer on {topic} ({subscription})"
        start = pb.CommandSubscribe.Earliest if earliest else pb.CommandSubscribe.Latest
        subscribe = pb.CommandSubscribe(
            topic=topic, subscription=subscription, subType=pb.CommandSubscribe.Shared,
            consumer_name=self.name, durable=True, initialPosition=start,
        )  # fmt: skip
        self._link = SharedLink(session, self, subscribe, self._attached, self._fail, self._what)

    # -- public ---------------------------------------------------------------------------

    @property
    def epoch(self) -> int:
        """The current attachment's."""
        return self._link.epoch

    async def start(self) -> None:
        await self._session.within_timeout(f"subscribe to {self.topic}", self._link.attach)
        self._session.track(self)

    async def receive(self) -> Delivery:
        """The next delivery, waiting for it. Raises PulsarWireError once closed or
        failed for good."""
        while not self._queue:
            if self._closed:
                raise PulsarWireError(f"{self._what} is closed", retriable=False)
            if self._error is not None:
                raise self._error
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        got = self._queue.popleft()
        self._taken += max(1, got.entry.metadata.num_messages_in_batch)
        if self._taken * 2 >= self._receiver_queue:
            self._link.flow(self._taken)
            self._taken = 0
        return got

    def queued(self) -> int:
        """Deliveries received and not handed out yet."""
        return len(self._queue)

    async def ack(self, deliveries: Sequence[Held]) -> None:
        """Acknowledges each entry whole and waits for the broker's receipt.
        StaleDeliveryError when one came on an attachment that is gone (nothing is
        acknowledged then); the broker's refusal as a PulsarWireError."""
        if not deliveries:
            return
        stale = [d.position for d in deliveries if d.epoch != self.epoch]
        if stale:
            raise StaleDeliveryError(f"{self._what}: {stale[:3]} came on an attachment now gone")
        await self._link.ack([d.position for d in deliveries])

    def release(self, deliveries: Sequence[Held]) -> None:
        """Gives the entries back to the subscription now (Pulsar's negative
        acknowledgement): the dispatcher delivers them again, to any consumer, one
        redelivery more. Deliveries of an attachment that is gone are back already."""
        self._link.redeliver(
            [
                pb.MessageIdData(ledgerId=d.position[0], entryId=d.position[1])
                for d in deliveries
                if d.epoch == self.epoch
            ]
        )

    async def close(self) -> None:
        """Closes the consumer; the subscription stays, and what this consumer held
        and did not acknowledge goes back to it."""
        if self._closed:
            return
        self._closed = True
        self._wake()
        self._session.forget(self)
        self._queue.clear()
        await self._link.close()

    # -- from the link ----------------------------------------------------------------

    def _attached(self) -> None:
        """A new attachment holds no permits and was sent nothing yet."""
        self._queue.clear()
        self._taken = 0
        self._link.flow(self._receiver_queue)

    def _fail(self, error: PulsarWireError) -> None:
        self._error = error
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- the connection's consumer handler --------------------------------------------

    def on_message(self, frame: Frame) -> None:
        entry = entry_of_frame(frame, self._max_uncompressed)
        self._queue.append(Delivery(entry, self.epoch))
        self._wake()

    def on_corrupt(self, error: CorruptEntryError) -> None:
        """A frame spoiled on the way: give it back so it comes again (to anyone);
        the permit it used is granted anew."""
        log.warning("%s: %s; releasing it", self._what, error)
        command = getattr(error, "command", None)
        if command is not None:
            self._link.redeliver([command.message.message_id])
        self._link.flow(1)

    def on_closed_by_broker(self) -> None:
        self._queue.clear()
        self._link.detach("closed by the broker", again=self._error is None)

    def on_end_of_topic(self) -> None:
        pass  # a terminated topic still holds what is unacknowledged

    def on_connection_closed(self, connection: Connection) -> None:
        if connection is self._link.connection:
            self._queue.clear()
            reason = f"connection to {connection.address} lost"
            self._link.detach(reason, again=self._error is None)
