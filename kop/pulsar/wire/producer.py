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
"""

from __future__ import annotations

import asyncio
import logging
import time

from kop.pulsar.wire import chunking
from kop.pulsar.wire.connection import Connection
from kop.pulsar.wire.errors import PulsarWireError, server_error
from kop.pulsar.wire.frames import FRAME_PADDING, encode_payload_head
from kop.pulsar.wire.message_ids import message_id, signed64
from kop.pulsar.wire.producer_link import ProducerLink
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.pulsar.wire.send_queue import Receipt, SendQueue
from kop.pulsar.wire.session import Session

__all__ = ["DEFAULT_MAX_PENDING_BYTES", "Receipt", "WireProducer", "message_id", "signed64"]

log = logging.getLogger(__name__)

DEFAULT_MAX_PENDING_BYTES = 32 * 1024 * 1024
_SEND = pb.BaseCommand.Type.SEND  # looked up once: protobuf enum attribute access is slow


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
    ) -> None:
        self.topic = topic
        self._session = session
        self._loop = asyncio.get_running_loop()
        self._id = session.new_id()
        self._link = ProducerLink(session, topic, self._id, self, self._attached, self._fail_all)
        self._pending = SendQueue(self._loop, topic, max_pending_bytes, send_timeout_s)
        self._next_seq = 0
        self._flush_soon = False
        self._closing = False
        self._failure: PulsarWireError | None = None
        self._done = asyncio.Event()  # closed (or failed for good)

    # -- public -------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The broker-assigned producer name (kept across reconnects)."""
        return self._link.name

    @property
    def next_sequence_id(self) -> int:
        """The sequence id the next `send` will give its entry."""
        return self._next_seq

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
        link = self._link
        seq = self._next_seq
        metadata.producer_name = link.name
        metadata.sequence_id = seq
        metadata.publish_time = int(time.time() * 1000)
        meta = metadata.SerializeToString()
        limit = link.max_message_size
        too_big = len(payload) > limit or len(meta) + len(payload) > limit + FRAME_PADDING // 2
        if too_big and chunking and not metadata.HasField("num_messages_in_batch"):
            return self._send_chunks(metadata, payload, future)
        if too_big:
            future.set_exception(
                PulsarWireError(
                    f"entry of {len(payload)} bytes (+{len(meta)} of metadata) exceeds the "
                    f"broker's maxMessageSize {limit}",
                    retriable=False,
                )
            )
            return future
        self._next_seq = seq + 1
        num = metadata.num_messages_in_batch if metadata.HasField("num_messages_in_batch") else 1
        self._push(seq, num, meta, payload, future)
        return future

    def _send_chunks(
        self,
        metadata: pb.MessageMetadata,
        payload: bytes | memoryview,
        future: asyncio.Future[Receipt],
    ) -> asyncio.Future[Receipt]:
        seq = self._next_seq
        size = chunking.chunk_size(metadata, self._link.max_message_size)
        pieces = chunking.cut(metadata, payload, size, f"{self._link.name}-{seq}")
        self._next_seq = seq + 1
        parts: list[asyncio.Future[Receipt]] = []
        for meta, part in pieces:
            parts.append(self._loop.create_future())
            self._push(seq, 1, meta.SerializeToString(), part, parts[-1], chunk=True)

        def settle(_: object) -> None:
            if future.done() or not all(p.done() for p in parts):
                return
            failed = next((p.exception() for p in parts if p.exception() is not None), None)
            if failed is not None:
                future.set_exception(failed)
            else:
                future.set_result(chunking.place([p.result() for p in parts]))

        for p in parts:
            p.add_done_callback(settle)
        return future

    def _push(
        self,
        seq: int,
        num: int,
        meta: bytes,
        payload: bytes | memoryview,
        future: asyncio.Future[Receipt],
        chunk: bool = False,
    ) -> None:
        send = pb.CommandSend(
            producer_id=self._id, sequence_id=seq, num_messages=num, highest_sequence_id=seq
        )
        if chunk:
            send.is_chunk = True
        command = pb.BaseCommand(type=_SEND, send=send)
        self._pending.push(seq, encode_payload_head(command, meta, payload), payload, future)
        if not self._flush_soon and self._link.conn is not None:
            # Written at the end of this loop iteration: the entries sent meanwhile
            # go out together, in one system call when they are small.
            self._flush_soon = True
            self._loop.call_soon(self._flush)

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
        if self._closing:
            await self._done.wait()
            return
        self._closing = True
        try:
            await self.flush()
        finally:
            self._shutdown()
            await self._link.close()

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
        self._flush()

    # -- internal -----------------------------------------------------------------------

    def _attached(self, conn: Connection, last_sequence_id: int) -> None:
        self._pending.requeue()
        log.debug(
            "producer %s on %s attached to %s (epoch %d, last pushed sequence id %d, %d to send)",
            self._link.name,
            self.topic,
            conn.address,
            self._link.epoch,
            last_sequence_id,
            self._pending.to_write,
        )
        self._flush()

    def _flush(self) -> None:
        self._flush_soon = False
        conn = self._link.conn
        if conn is not None:
            self._pending.write_to(conn)

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
