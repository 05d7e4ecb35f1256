"""A producer of pre-built entries on one topic partition, surviving reconnects.

The caller builds each entry (MessageMetadata + payload, possibly a batch in Pulsar's
batch layout); the producer stamps its name, its sequence id and the publish time,
frames it once and keeps the frame until the broker's receipt. Every entry has its
own sequence id (0, 1, 2, ... per producer), so after a reconnect every pending entry
is sent again with its id and broker deduplication (on in kop's namespaces) decides:
one it stored before comes back as ``(-1, -1)`` (stored, place not said), so each is
stored exactly once. The broker's `last_sequence_id` settles nothing: it counts
entries pushed to its log, not persisted.
Trouble with the producer (a send error, receipts out of step) closes the connection
and the producer comes back on a new one, as the Java client's ProducerImpl does.

A producer holds its topic in an access mode (`access.py`): shared, exclusive, or
exclusive taking the topic from every other producer (fencing). One given a name
continues that name's sequence ids: its first entry gets the broker's
`last_sequence_id` at the first attach + 1 (Java: `msgIdGenerator = lastSequenceId
+ 1` when no initial sequence id is set), so deduplication carries over from a
previous holder of the name. Fenced (ProducerFencedError), it fails every pending
and later send and never attaches again (Java: state ProducerFenced).

`WireProducer` is the caller's face and the connection's producer handler; the way
from `send` to the wire is `SendPipeline`'s, what is owed until the receipts
`SendQueue`'s, the producer's presence on a broker `ProducerLink`'s.
"""

from __future__ import annotations

import asyncio

from kop.pulsar.wire import access
from kop.pulsar.wire.connection import Connection
from kop.pulsar.wire.errors import ProducerFencedError, PulsarWireError, server_error
from kop.pulsar.wire.message_ids import message_id, signed64
from kop.pulsar.wire.producer_link import ProducerLink
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.pulsar.wire.send_pipeline import SendPipeline
from kop.pulsar.wire.send_queue import Receipt, SendQueue
from kop.pulsar.wire.session import Session

__all__ = ["DEFAULT_MAX_PENDING_BYTES", "Receipt", "WireProducer", "message_id", "signed64"]

DEFAULT_MAX_PENDING_BYTES = 32 * 1024 * 1024


class WireProducer:
    """Use `await client.create_producer(topic)`. `send` enqueues and never blocks;
    `wait_for_room` is the back-pressure; receipts arrive in send order."""

    def __init__(
        self,
        session: Session,
        topic: str,
        *,
        max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES,
        send_timeout_s: float = 30.0,
        access_mode: pb.ProducerAccessMode = access.SHARED,
        name: str | None = None,
        fence_first: bool = False,
    ) -> None:
        self.topic = topic
        self._session = session
        self._loop = asyncio.get_running_loop()
        self._link = ProducerLink(
            session, topic, self, self._attached, self._fail_all, access_mode, name or "",
            fence_first,
        )  # fmt: skip
        self._pending = SendQueue(self._loop, topic, max_pending_bytes, send_timeout_s)
        self._sends = SendPipeline(self._loop, self._link, self._pending)
        self._closing = False
        self._failure: PulsarWireError | None = None
        self._done = asyncio.Event()  # closed (or failed for good)

    # -- public -------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The broker-assigned producer name (kept across reconnects)."""
        return self._link.name

    @property
    def hold(self) -> access.Hold:
        """Its access mode, the topic epoch it holds (the broker's at the first
        attach, brought to every re-attach) and `resumed_after`, the highest
        sequence id its name had pushed then."""
        return self._link.hold

    @property
    def fenced(self) -> bool:
        """Another producer took the topic: every send fails, for good."""
        return isinstance(self._failure, ProducerFencedError)

    @property
    def next_sequence_id(self) -> int:
        """The sequence id the next `send` will give its entry."""
        return self._sends.next_seq

    @property
    def pending_bytes(self) -> int:
        """Bytes of entries sent and not yet stored or failed."""
        return self._pending.bytes

    @property
    def is_connected(self) -> bool:
        return self._link.conn is not None

    @property
    def max_message_size(self) -> int:
        """The largest entry (metadata and payload) the broker takes, as it said."""
        return self._link.max_message_size

    def send(
        self, metadata: pb.MessageMetadata, payload: bytes | memoryview, *, chunking: bool = False
    ) -> asyncio.Future[Receipt]:
        """Enqueues one entry and returns its future: ``(ledger, entry)`` when stored,
        ``(-1, -1)`` when the broker recognised a re-send of an entry it had stored
        (its place is then the log's to tell). Fails with
        a non-retriable PulsarWireError for an entry the broker can never take (too
        big, topic terminated or gone, not allowed; such an entry does not use up a
        sequence id when rejected here), or a retriable one after the send timeout. A
        timed-out entry may still have been stored. With `chunking`, a single message
        too big for one entry is sent in chunks under its one sequence id
        (`chunking`); the future then gives the message's place."""
        future: asyncio.Future[Receipt] = self._loop.create_future()
        if self._failure is not None:
            future.set_exception(self._failure)
            return future
        if self._closing:
            future.set_exception(PulsarWireError(f"producer on {self.topic} is closed", False))
            return future
        return self._sends.send(metadata, payload, future, chunking)

    async def wait_for_room(self, size: int) -> None:
        """Returns once `size` more bytes fit under the pending limit (at once when
        nothing is pending, so one entry larger than the limit still goes)."""
        await self._pending.wait_for_room(size)

    async def flush(self) -> None:
        """Waits until every entry sent so far is stored or failed."""
        await self._pending.flush()

    async def close(self) -> None:
        """Waits for everything sent before (stored or failed), then closes the
        producer on the broker. Sends after this fail."""
        if await self._finishing():
            try:
                await self._flush_and_stop()
            finally:
                await self._link.close()

    async def leave(self) -> None:
        """Like `close`, except that the producer is left on the broker: this side
        forgets it (no reconnect, a later CloseProducer from the broker is ignored)
        and the broker drops it at the next fence of its topic or when the connection
        ends. For a partition handed to another instance, whose fence may be under
        way at this moment: Pulsar 4.0.7's broker closes the producers a fence finds
        while holding the topic's lock, and a CloseProducer from us for one of them
        holds that producer's lock while it waits for the topic's, so the two wait
        for each other for ever (two deadlocked pulsar-io threads; the standalone's
        health check fails from then on, and every client of that thread hangs)."""
        if await self._finishing():
            try:
                await self._flush_and_stop()
            finally:
                self._link.forget()

    async def _finishing(self) -> bool:
        """False once another close or leave came first (having waited for it)."""
        if self._closing:
            await self._done.wait()
            return False
        self._closing = True  # sends are refused from now on
        return True

    async def _flush_and_stop(self) -> None:
        try:
            await self.flush()
        finally:
            self._shutdown()

    async def start(self) -> None:
        """Creates the producer on the broker (retrying within the operation timeout)."""
        await self._session.within_timeout(f"create producer on {self.topic}", self._link.attach)
        self._session.track(self)

    # -- events from the connection ---------------------------------------------------

    def on_receipt(self, receipt: pb.CommandSendReceipt) -> None:
        why = self._pending.receipt(receipt)
        if why is not None:
            self._link.reconnect(why)

    def on_send_error(self, error: pb.CommandSendError) -> None:
        if error.error == pb.TopicTerminatedError:  # no entry can ever be stored again
            self._fail_all(server_error(error.error, error.message))
            self._link.abandon()
        elif not self._pending.reject(error):
            # The broker's transient trouble (a failed write, a duplicate whose first
            # copy is still being written): the entries go out again on a new
            # connection, where deduplication answers for each.
            self._link.reconnect(f"send error {server_error(error.error, error.message)}")

    def on_closed_by_broker(self) -> None:
        self._link.detach("closed by the broker")

    def on_connection_closed(self, connection: Connection) -> None:
        if connection is self._link.conn:
            self._link.detach(f"connection to {connection.address} lost")

    def on_writable(self) -> None:
        self._sends.flush()

    # -- internal -----------------------------------------------------------------------

    def _attached(self, conn: Connection, first: bool) -> None:
        if first:  # nothing was sent before `start` returned
            self._sends.next_seq = self._link.hold.resumed_after + 1
        self._pending.requeue(self._link.producer_id)
        self._sends.flush()

    def _fail_all(self, error: PulsarWireError) -> None:
        self._failure = error
        self._pending.fail_all(error)
        self._shutdown()

    def _shutdown(self) -> None:
        self._closing = True
        self._link.stop()
        self._pending.close()
        self._session.forget(self)
        self._done.set()
