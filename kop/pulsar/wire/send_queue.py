"""A producer's entries between `send` and the broker's receipt, in sequence-id order.

Kept apart from the connection so that what is owed to callers (receipts, the byte
budget, send timeouts) survives reconnects unchanged: after one, `requeue` writes
every entry without a receipt again and broker deduplication answers for each.
"""

from __future__ import annotations

import asyncio
import collections
from dataclasses import dataclass

from kop.pulsar.wire.connection import Connection
from kop.pulsar.wire.errors import OperationTimeoutError, PulsarWireError, server_error
from kop.pulsar.wire.frames import readdress_payload_head
from kop.pulsar.wire.message_ids import message_id
from kop.pulsar.wire.proto import PulsarApi_pb2 as pb

Receipt = tuple[int, int]
_WRITE_CHUNK = 1024 * 1024


@dataclass(slots=True)
class _Op:
    seq: int
    producer_id: int  # the one its head names
    head: bytes
    payload: bytes | memoryview
    size: int
    future: asyncio.Future[Receipt]
    deadline: float


class SendQueue:
    """Entries are written in order and the broker receipts them in order, so only
    the oldest ever completes, fails or expires: deques, not maps."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, topic: str, max_bytes: int, send_timeout_s: float
    ) -> None:
        self._loop = loop
        self._topic = topic
        self._max_bytes = max_bytes
        self._send_timeout = send_timeout_s
        self._inflight: collections.deque[_Op] = collections.deque()  # written, no receipt
        self._queued: collections.deque[_Op] = collections.deque()  # not written yet
        self.bytes = 0
        self._room = asyncio.Event()
        self._timer: asyncio.TimerHandle | None = None
        self._forgotten_upto = -1  # highest sequence id given up on without a receipt
        self._closed = False

    @property
    def to_write(self) -> int:
        """Entries not written (yet, or again after a reconnect)."""
        return len(self._queued)

    def push(
        self,
        seq: int,
        producer_id: int,
        head: bytes,
        payload: bytes | memoryview,
        future: asyncio.Future[Receipt],
    ) -> None:
        size = len(head) + len(payload)
        deadline = self._loop.time() + self._send_timeout
        op = _Op(seq, producer_id, head, payload, size, future, deadline)
        self.bytes += size
        self._queued.append(op)
        if self._timer is None:
            self._arm_timer()

    def write_to(self, conn: Connection) -> None:
        """Writes queued entries while the connection takes them, a chunk at a time so
        the transport's buffer stays near its high-water mark."""
        queued = self._queued
        while queued and conn.writable:
            chunk = []
            size = 0
            while queued and size < _WRITE_CHUNK:
                op = queued.popleft()
                chunk.append(op)
                size += op.size
            conn.write_frames([(op.head, op.payload) for op in chunk])
            self._inflight.extend(chunk)

    async def wait_for_room(self, size: int) -> None:
        while self.bytes and self.bytes + size > self._max_bytes:
            if self._closed:
                return  # send() will say why
            self._room.clear()
            await self._room.wait()

    async def flush(self) -> None:
        futures = [op.future for op in (*self._inflight, *self._queued)]
        if futures:
            await asyncio.wait(futures)

    def receipt(self, receipt: pb.CommandSendReceipt) -> str | None:
        """Completes the oldest entry; what is wrong when the receipt is not for it."""
        seq = receipt.sequence_id
        inflight = self._inflight
        if inflight and inflight[0].seq == seq:
            op = inflight.popleft()
            result = message_id(receipt.message_id) if receipt.HasField("message_id") else (-1, -1)
            self._complete(op, result)
            return None
        if seq <= self._forgotten_upto:
            return None  # a late receipt for an entry already timed out or failed
        expected = inflight[0].seq if inflight else None
        return f"receipt for sequence id {seq}, expected {expected}"

    def reject(self, error: pb.CommandSendError) -> bool:
        """Fails the oldest entry if the broker refused it without storing it and goes
        on with the next ones: NotAllowedError (it can never take it) or ChecksumError
        (its bytes arrived damaged). Such an entry is never sent again: the broker
        has pushed the next ones, so its deduplication would take it for one of
        them and answer "stored". False for any other error."""
        inflight = self._inflight
        if not (inflight and inflight[0].seq == error.sequence_id):
            return False
        if error.error == pb.NotAllowedError:
            failure = server_error(error.error, error.message)
        elif error.error == pb.ChecksumError:  # not stored: a new send of it may be
            failure = PulsarWireError(
                f"entry {error.sequence_id} to {self._topic} arrived damaged, not stored: "
                f"{error.message}",
                retriable=True,
                server_error=error.error,
            )
        else:
            return False
        op = inflight.popleft()
        self._forgotten_upto = max(self._forgotten_upto, op.seq)
        self._fail(op, failure)
        return True

    def requeue(self, producer_id: int) -> None:
        """After (re)creation: every entry without a receipt goes out again, in order,
        with its own sequence id, and broker deduplication answers for each: a
        receipt with its place for a first copy, (-1, -1) for one stored before, a
        PersistenceError while an earlier copy is still being written. The broker's
        `last_sequence_id` cannot settle any of them: it is the highest id pushed
        to its log, not persisted, and a pushed entry can still be lost with its
        write. Each names the producer id of this attach (`ProducerLink.attach`)."""
        self._queued.extendleft(reversed(self._inflight))
        self._inflight.clear()
        for op in self._queued:
            if op.producer_id != producer_id:
                op.head = readdress_payload_head(op.head, producer_id)
                op.producer_id = producer_id

    def fail_all(self, error: PulsarWireError) -> None:
        for ops in (self._inflight, self._queued):
            while ops:
                self._fail(ops.popleft(), error)

    def close(self) -> None:
        """Stops the timer and releases `wait_for_room` waiters for good."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._room.set()

    def _complete(self, op: _Op, result: Receipt) -> None:
        self.bytes -= op.size
        if not op.future.done():
            op.future.set_result(result)
        self._room.set()
        if self._timer is not None and not (self._inflight or self._queued):
            self._timer.cancel()
            self._timer = None

    def _fail(self, op: _Op, error: PulsarWireError) -> None:
        self.bytes -= op.size
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
                why = f"entry {op.seq} to {self._topic} not stored in {self._send_timeout}s"
                self._fail(op, OperationTimeoutError(why))
        self._arm_timer()
