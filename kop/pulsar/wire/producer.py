"""A producer of pre-built entries on one topic partition, surviving reconnects.

The caller builds each entry (MessageMetadata + payload, possibly a batch in Pulsar's
batch layout); the producer stamps its name, its sequence id and the publish time,
frames it once and keeps the frame until the broker's receipt. Every entry has its
own sequence id (0, 1, 2, ... per producer), so after a reconnect the broker's
`last_sequence_id` tells which pending entries are stored already (their receipts
were lost: they complete as ``(-1, -1)``) and the rest are sent again with their ids,
which broker deduplication (on in kop's namespaces) turns into exactly-once storage.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from dataclasses import dataclass

from kop.pulsar.wire.connection import Connection
from kop.pulsar.wire.errors import (
    OperationTimeoutError,
    ProtocolError,
    PulsarWireError,
    server_error,
)
from kop.pulsar.wire.frames import FRAME_PADDING, encode_payload_head
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb
from kop.pulsar.wire.retry import Backoff
from kop.pulsar.wire.session import Session

log = logging.getLogger(__name__)

T = pb.BaseCommand.Type
Receipt = tuple[int, int]
DEFAULT_MAX_PENDING_BYTES = 32 * 1024 * 1024
_WRITE_CHUNK = 1024 * 1024
_SEND = T.SEND  # looked up once: protobuf enum attribute access is slow
_U64 = 1 << 64


def signed64(value: int) -> int:
    """Pulsar's ids are uint64 on the wire; -1 (no such entry) comes as 2**64 - 1."""
    return value - _U64 if value >= 1 << 63 else value


def message_id(mid: pb.MessageIdData) -> tuple[int, int]:
    return signed64(mid.ledgerId), signed64(mid.entryId)


@dataclass(slots=True)
class _Op:
    seq: int
    head: bytes
    payload: bytes | memoryview
    size: int
    future: asyncio.Future[Receipt]
    deadline: float


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
        self._max_pending = max_pending_bytes
        self._send_timeout = send_timeout_s
        self._name = ""
        self._epoch = -1
        self._next_seq = 0
        self._conn: Connection | None = None  # set while the broker has our producer
        self._max_message_size = 0
        self._inflight: collections.deque[_Op] = collections.deque()  # written, no receipt
        self._queued: collections.deque[_Op] = collections.deque()  # not written yet
        self._pending_bytes = 0
        self._room = asyncio.Event()
        self._timer: asyncio.TimerHandle | None = None
        self._reconnecting: asyncio.Task[None] | None = None
        self._forgotten_upto = -1  # highest sequence id given up on without a receipt
        self._flush_soon = False
        self._closing = False
        self._closed = False
        self._failure: PulsarWireError | None = None
        self._done = asyncio.Event()  # closed (or failed for good)

    # -- public -------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The broker-assigned producer name (kept across reconnects)."""
        return self._name

    @property
    def next_sequence_id(self) -> int:
        """The sequence id the next `send` will give its entry."""
        return self._next_seq

    @property
    def pending_bytes(self) -> int:
        """Bytes of entries sent and not yet stored or failed."""
        return self._pending_bytes

    @property
    def is_connected(self) -> bool:
        return self._conn is not None

    @property
    def max_message_size(self) -> int:
        """The largest entry (metadata and payload) the broker takes, as it said."""
        return self._max_message_size

    def send(
        self, metadata: pb.MessageMetadata, payload: bytes | memoryview
    ) -> asyncio.Future[Receipt]:
        """Enqueues one entry and returns its future: ``(ledger, entry)`` when stored,
        ``(-1, -1)`` when the broker recognised a re-send of a stored entry. Fails with
        a non-retriable PulsarWireError for an entry the broker can never take (too
        big, topic terminated or gone, not allowed; such an entry does not use up a
        sequence id when rejected here), or a retriable one after the send timeout. A
        timed-out entry may still have been stored."""
        future: asyncio.Future[Receipt] = self._loop.create_future()
        if self._failure is not None:
            future.set_exception(self._failure)
            return future
        if self._closing:
            future.set_exception(PulsarWireError(f"producer on {self.topic} is closed", False))
            return future
        seq = self._next_seq
        metadata.producer_name = self._name
        metadata.sequence_id = seq
        metadata.publish_time = int(time.time() * 1000)
        meta = metadata.SerializeToString()
        limit = self._max_message_size
        if len(payload) > limit or len(meta) + len(payload) > limit + FRAME_PADDING // 2:
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
        command = pb.BaseCommand(
            type=_SEND,
            send=pb.CommandSend(
                producer_id=self._id, sequence_id=seq, num_messages=num, highest_sequence_id=seq
            ),
        )
        head = encode_payload_head(command, meta, payload)
        size = len(head) + len(payload)
        op = _Op(seq, head, payload, size, future, self._loop.time() + self._send_timeout)
        self._pending_bytes += size
        self._queued.append(op)
        if not self._flush_soon and self._conn is not None:
            # Written at the end of this loop iteration: the entries sent meanwhile
            # go out together, in one system call when they are small.
            self._flush_soon = True
            self._loop.call_soon(self._flush)
        if self._timer is None:
            self._arm_timer()
        return future

    async def wait_for_room(self, size: int) -> None:
        """Returns once `size` more bytes fit under the pending limit (at once when
        nothing is pending, so one entry larger than the limit still goes)."""
        while self._pending_bytes and self._pending_bytes + size > self._max_pending:
            if self._failure is not None or self._closed:
                return  # send() will say why
            self._room.clear()
            await self._room.wait()

    async def flush(self) -> None:
        """Waits until every entry sent so far is stored or failed."""
        futures = [op.future for op in (*self._inflight, *self._queued)]
        if futures:
            await asyncio.wait(futures)

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
            conn, self._conn = self._conn, None
            if conn is not None:
                conn.unregister_producer(self._id, self)
                request_id = conn.new_request_id()
                close = pb.CommandCloseProducer(producer_id=self._id, request_id=request_id)
                try:
                    await conn.request(
                        pb.BaseCommand(type=T.CLOSE_PRODUCER, close_producer=close), request_id
                    )
                except PulsarWireError as exc:
                    log.debug("closing producer %s on %s: %s", self._name, self.topic, exc)

    # -- attaching to a broker --------------------------------------------------------

    async def start(self) -> None:
        """Creates the producer on the broker (retrying within the operation timeout)."""
        await self._session.within_timeout(f"create producer on {self.topic}", self._attach)
        self._session.track(self)

    async def _attach(self) -> None:
        conn = await self._session.connect_topic(self.topic)
        conn.register_producer(self._id, self)
        self._epoch += 1
        request_id = conn.new_request_id()
        create = pb.CommandProducer(
            topic=self.topic,
            producer_id=self._id,
            request_id=request_id,
            epoch=self._epoch,
            producer_access_mode=pb.Shared,
        )
        if self._name:  # re-creation: the same name, so the broker's dedup state applies
            create.producer_name = self._name
            create.user_provided_producer_name = False
        try:
            answer = await conn.request(
                pb.BaseCommand(type=T.PRODUCER, producer=create), request_id
            )
        except BaseException:  # an error, or close() cancelling a reconnect
            conn.unregister_producer(self._id, self)
            if not conn.is_closed:  # it may exist on the broker after all: drop it
                self._send_close(conn)
            raise
        success = answer.producer_success
        if self._closed:
            conn.unregister_producer(self._id, self)
            self._send_close(conn)
            return
        self._name = success.producer_name
        self._max_message_size = conn.max_message_size
        self._conn = conn
        self._requeue(signed64(success.last_sequence_id))
        log.debug(
            "producer %s on %s attached to %s (epoch %d, last sequence id %d, %d to re-send)",
            self._name,
            self.topic,
            conn.address,
            self._epoch,
            signed64(success.last_sequence_id),
            len(self._queued),
        )
        self._flush()

    def _send_close(self, conn: Connection) -> None:
        close = pb.CommandCloseProducer(producer_id=self._id, request_id=conn.new_request_id())
        conn.send(pb.BaseCommand(type=T.CLOSE_PRODUCER, close_producer=close))

    def _requeue(self, last_sequence_id: int) -> None:
        """After (re)creation: what the broker already stored completes as (-1, -1);
        the rest goes out again, in order, with its own sequence ids."""
        ops = [*self._inflight, *self._queued]
        self._inflight.clear()
        self._queued.clear()
        for op in ops:
            if op.seq <= last_sequence_id:
                self._complete(op, (-1, -1))
            else:
                self._queued.append(op)
        self._forgotten_upto = max(self._forgotten_upto, last_sequence_id)

    def _detach(self, reason: str) -> None:
        """The broker no longer has our producer (or we gave up on it): reconnect."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.unregister_producer(self._id, self)
        if self._closed or self._failure is not None:
            return
        log.info("producer %s on %s: %s; reconnecting", self._name, self.topic, reason)
        if self._reconnecting is None or self._reconnecting.done():
            self._reconnecting = self._loop.create_task(self._reconnect())

    async def _reconnect(self) -> None:
        backoff = Backoff()
        while not self._closed and self._failure is None:
            await asyncio.sleep(backoff.next())
            try:
                await self._attach()
                return
            except PulsarWireError as exc:
                if not exc.retriable:
                    log.error("producer %s on %s failed: %s", self._name, self.topic, exc)
                    self._fail_all(exc)
                    return
                log.info("producer %s on %s: reconnect failed: %s", self._name, self.topic, exc)

    # -- events from the connection ---------------------------------------------------

    def on_receipt(self, receipt: pb.CommandSendReceipt) -> None:
        seq = receipt.sequence_id
        inflight = self._inflight
        if inflight and inflight[0].seq == seq:
            op = inflight.popleft()
            result = message_id(receipt.message_id) if receipt.HasField("message_id") else (-1, -1)
            self._complete(op, result)
            return
        if seq <= self._forgotten_upto:
            return  # a late receipt for an entry already timed out or failed
        expected = inflight[0].seq if inflight else None
        self._restart(f"receipt for sequence id {seq}, expected {expected}")

    def on_send_error(self, error: pb.CommandSendError) -> None:
        inflight = self._inflight
        if error.error == pb.NotAllowedError and inflight and inflight[0].seq == error.sequence_id:
            op = inflight.popleft()  # this entry can never be stored; the next ones can
            self._forgotten_upto = max(self._forgotten_upto, op.seq)
            self._fail(op, server_error(error.error, error.message))
            return
        # Anything else is the broker's transient trouble (Pulsar's own clients
        # reconnect too): the entries go out again on the new producer.
        self._restart(f"send error {server_error(error.error, error.message)}")

    def on_closed_by_broker(self) -> None:
        self._detach("closed by the broker")

    def on_connection_closed(self, connection: Connection) -> None:
        if connection is self._conn:
            self._detach(f"connection to {connection.address} lost")

    def on_writable(self) -> None:
        self._flush()

    def _restart(self, why: str) -> None:
        log.warning("producer %s on %s: %s", self._name, self.topic, ProtocolError(why))
        conn = self._conn
        if conn is not None:
            self._send_close(conn)
        self._detach(why)

    # -- the queues ---------------------------------------------------------------------

    def _flush(self) -> None:
        """Writes queued entries while the connection takes them, a chunk at a time so
        the transport's buffer stays near its high-water mark."""
        self._flush_soon = False
        conn = self._conn
        queued = self._queued
        while queued and conn is not None and conn.writable:
            chunk = []
            size = 0
            while queued and size < _WRITE_CHUNK:
                op = queued.popleft()
                chunk.append(op)
                size += op.size
            conn.write_frames([(op.head, op.payload) for op in chunk])
            self._inflight.extend(chunk)

    def _complete(self, op: _Op, result: Receipt) -> None:
        self._pending_bytes -= op.size
        if not op.future.done():
            op.future.set_result(result)
        self._room.set()
        if self._timer is not None and not (self._inflight or self._queued):
            self._timer.cancel()
            self._timer = None

    def _fail(self, op: _Op, error: PulsarWireError) -> None:
        self._pending_bytes -= op.size
        if not op.future.done():
            op.future.set_exception(error)
        self._room.set()

    def _arm_timer(self) -> None:
        head = self._inflight[0] if self._inflight else self._queued[0] if self._queued else None
        self._timer = None if head is None else self._loop.call_at(head.deadline, self._expire)

    def _expire(self) -> None:
        """Fails the entries whose send timeout passed (the oldest ones: deadlines grow
        in send order)."""
        now = self._loop.time()
        for ops in (self._inflight, self._queued):
            while ops and ops[0].deadline <= now:
                op = ops.popleft()
                self._forgotten_upto = max(self._forgotten_upto, op.seq)
                why = f"entry {op.seq} to {self.topic} not stored in {self._send_timeout}s"
                self._fail(op, OperationTimeoutError(why))
        self._arm_timer()

    def _fail_all(self, error: PulsarWireError) -> None:
        self._failure = error
        for ops in (self._inflight, self._queued):
            while ops:
                self._fail(ops.popleft(), error)
        self._shutdown()

    def _shutdown(self) -> None:
        self._closed = True
        self._closing = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        task = self._reconnecting
        if task is not None and not task.done() and task is not asyncio.current_task():
            task.cancel()
        self._room.set()
        self._session.forget(self)
        self._done.set()
